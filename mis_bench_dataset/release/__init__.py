"""Reading a release: the tree of npz files, labels, transcripts, their problems, the Hub layout, the authors' files."""

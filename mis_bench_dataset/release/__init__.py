"""Reading a release: the tree of npz files and its size limits, labels, transcripts, their problems, the Hub
layout, the authors' files."""

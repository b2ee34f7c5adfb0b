"""The authors' public files, recognised by their content: where a build's gold and text come from.

The paper's repository (github.com/calistalu/MIS-Bench) holds in its git history the
aggregated expert scores of all 996 videos and the Qwen2.5-VL predictions behind Table 4.
A file given to `mis-bench build` or `mis-bench reproduce` is recognised by its SHA-256, so
the card can say "repository, commit, path" and a reproduction can say whether it ran on the
unmodified files. Nothing here downloads anything: a user fetches the files with the
`git show COMMIT:PATH` commands of `PublicFile.git_show`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

AUTHORS_REPOSITORY = "https://github.com/calistalu/MIS-Bench"


@dataclass(frozen=True)
class PublicFile:
    """One file of the authors' repository, as committed."""

    name: str  # the file's name in the repository (and in a folder of them, `reproduce --from`)
    commit: str  # abbreviated commit
    commit_full: str
    path: str  # path inside that commit
    sha256: str
    what: str

    @property
    def git_show(self) -> str:
        """The command that writes the file from a clone of the repository."""
        return f"git show {self.commit}:{self.path} > {self.name}"

    def describe(self) -> str:
        return f"{AUTHORS_REPOSITORY}, commit {self.commit}, path {self.path}"

    def to_dict(self) -> dict:
        return {
            "repository": AUTHORS_REPOSITORY,
            "commit": self.commit_full,
            "path": self.path,
            "sha256": self.sha256,
            "what": self.what,
        }


_JUL_7 = "d2b9b8ee2b1d17d30c782b991b534d18da27aa8d"
_SEP_5 = "d7a60ad3d7b93c38c2bfb57477a119b48e8f7166"

CODING = PublicFile(
    "coding.csv",
    _JUL_7[:7],
    _JUL_7,
    "coding.csv",
    "2169167058d019d9ae68ee51a3f5516cb1545e0ca430cf272bed574492e21c89",
    "aggregated expert scores of the 996 videos (unrounded rater means)",
)
RAW_INFERENCE = PublicFile(
    "raw_inference.csv",
    _SEP_5[:7],
    _SEP_5,
    "raw_inference.csv",
    "f41180691be5ec086403d6cc46403ff4cc5bd55a4413099b52a1ee10a19c100b",
    "Table 4 'Raw': Qwen2.5-VL-7B-Instruct without tuning",
)
FINETUNE = PublicFile(
    "finetune.csv",
    _SEP_5[:7],
    _SEP_5,
    "finetune.csv",
    "f9f04218706cda143865dab65e714c207e22d1b5c0c201805b62e849cac6e9d9",
    "Table 4 'Fine-tuning': Qwen2.5-VL-7B-Instruct, LoRA, cross-entropy",
)
FINETUNE_RAFT = PublicFile(
    "finetune_raft.csv",
    _SEP_5[:7],
    _SEP_5,
    "finetune_raft.csv",
    "7e3fda67be6667293f80a648636741ce667c83a4bc531d96d86c763e5d5a798f",
    "Table 4 'MIS-RAFT': Qwen2.5-VL-7B-Instruct, LoRA, the MIS-RAFT loss",
)
TRANSCRIPTS = PublicFile(
    "fis_transcript.csv",
    _SEP_5[:7],
    _SEP_5,
    "fis_transcript.csv",
    "954dfa418b748d0538e2f8a9d0ea8e9acc9928a7bcbc36e2dd108d8024bda982",
    "transcripts of the 996 videos (video,transcript), in the order the authors built their rows",
)
PUBLIC_FILES: tuple[PublicFile, ...] = (CODING, RAW_INFERENCE, FINETUNE, FINETUNE_RAFT, TRANSCRIPTS)
_BY_SHA256 = {f.sha256: f for f in PUBLIC_FILES}


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def identify(path: str | Path) -> PublicFile | None:
    """The public file `path` is byte for byte, or None (another or a modified file)."""
    return _BY_SHA256.get(sha256_of(path))


def source_record(path: str | Path) -> dict:
    """What a build report keeps about an input file: its name and hash, and where it was published."""
    digest = sha256_of(path)
    known = _BY_SHA256.get(digest)
    record = {"file": Path(path).name, "sha256": digest}
    if known is not None:
        record.update(known.to_dict())
    return record


def describe_source(record: dict | None) -> str | None:
    """`repository, commit, path` of a `source_record`, or None when the file is not a known public one."""
    if not record or "repository" not in record:
        return None
    return f"{record['repository']}, commit {record['commit'][:7]}, path {record['path']}"

"""The authors' public files, recognised by their content: where a build's gold and text come from.

The paper's repository (github.com/calistalu/MIS-Bench) holds in its git history the
aggregated expert scores of all 996 videos and the Qwen2.5-VL predictions behind Table 4.
A file given to `mis-bench build` or `mis-bench reproduce` is recognised by its SHA-256, so
the card can say "repository, commit, path" and a reproduction can say whether it ran on the
unmodified files. Nothing here downloads anything: `mis-bench fetch` (`release.fetch`) downloads
them at their pinned commits and checks each against this table; without the network a user writes
them from a clone with the `git show COMMIT:PATH` commands of `PublicFile.git_show` (and, for the
feature sample, `FeatureSample.git_archive`).
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
    size: int  # bytes, as committed (the progress bar's total; a download that runs past it is refused)

    @property
    def git_show(self) -> str:
        """The command that writes the file from a clone of the repository."""
        return f"git show {self.commit}:{self.path} > {self.name}"

    @property
    def is_feature_file(self) -> bool:
        """A file of a feature sample (a path inside a folder), not one of the five top-level files."""
        return "/" in self.name

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
    123_283,
)
RAW_INFERENCE = PublicFile(
    "raw_inference.csv",
    _SEP_5[:7],
    _SEP_5,
    "raw_inference.csv",
    "f41180691be5ec086403d6cc46403ff4cc5bd55a4413099b52a1ee10a19c100b",
    "Table 4 'Raw': Qwen2.5-VL-7B-Instruct without tuning",
    24_394,
)
FINETUNE = PublicFile(
    "finetune.csv",
    _SEP_5[:7],
    _SEP_5,
    "finetune.csv",
    "f9f04218706cda143865dab65e714c207e22d1b5c0c201805b62e849cac6e9d9",
    "Table 4 'Fine-tuning': Qwen2.5-VL-7B-Instruct, LoRA, cross-entropy",
    23_913,
)
FINETUNE_RAFT = PublicFile(
    "finetune_raft.csv",
    _SEP_5[:7],
    _SEP_5,
    "finetune_raft.csv",
    "7e3fda67be6667293f80a648636741ce667c83a4bc531d96d86c763e5d5a798f",
    "Table 4 'MIS-RAFT': Qwen2.5-VL-7B-Instruct, LoRA, the MIS-RAFT loss",
    24_394,
)
TRANSCRIPTS = PublicFile(
    "fis_transcript.csv",
    _SEP_5[:7],
    _SEP_5,
    "fis_transcript.csv",
    "954dfa418b748d0538e2f8a9d0ea8e9acc9928a7bcbc36e2dd108d8024bda982",
    "transcripts of the 996 videos (video,transcript), in the order the authors built their rows",
    715_357,
)
PUBLIC_FILES: tuple[PublicFile, ...] = (CODING, RAW_INFERENCE, FINETUNE, FINETUNE_RAFT, TRANSCRIPTS)


@dataclass(frozen=True)
class FeatureSample:
    """A folder of de-identified features the authors committed, every file of it with its hash."""

    key: str  # what `mis-bench fetch --features` calls it
    commit: str
    folder: str  # path of the folder in that commit (and in a folder of fetched files)
    files: tuple[PublicFile, ...]

    @property
    def git_archive(self) -> str:
        """The command that writes the folder from a clone of the repository."""
        return f"git archive {self.commit[:7]} {self.folder} | tar -x"


_SUBSET10_COMMIT = "84226a7a8f3785961f3cf0f9dfedc65b52d12235"
_SUBSET10_FOLDER = "MIS-Bench_subset10"
# (path inside the folder, bytes, SHA-256) of every file of the public feature sample, as committed: 10 videos,
# only 2 wav2vec files (the sample's own manifest says the others failed to load).
_SUBSET10_FILES: tuple[tuple[str, int, str], ...] = (
    (
        "audio/librosa/EH0822_T1_Jessica.npz",
        2_089_716,
        "42d7b61215a373d226594a656ee5fb482b3b7003f47ac09108a8a39134bf38f3",
    ),
    ("audio/librosa/KC0616_T1_Luke.npz", 992_388, "a184b163b33b439374a3a571bcc3c414ae21d2f7c58ee0566958c614135933ad"),
    (
        "audio/librosa/MD0108_T2_Bethany.npz",
        358_880,
        "678b2a0169dcab4a0392f4487b02a3dfb14dbac769124be59f6f5bf0a248d01f",
    ),
    (
        "audio/librosa/MS0315_T3_Savannah.npz",
        580_019,
        "f1a2f6211fd98cd121f5f5d961496c48cfc5cb42f17462a9621e3abf806e9343",
    ),
    ("audio/librosa/NR0802_T1_Luke.npz", 669_037, "c4fb0a55b63ee599ff5619d036e3acaf4d9b8c8ff964eb6bdf1470ecdf950cd6"),
    (
        "audio/librosa/SA1129_T3_Bethany.npz",
        778_663,
        "3e00ec0f8c95ccaef2d67f0e24723a5f988532a7edc206d83ea7707a60801c7b",
    ),
    (
        "audio/librosa/SN0216_T2_Savannah.npz",
        1_099_832,
        "2920681ae0d0197b749e2b45b726857fa4d2f1552a50c570e7f2076643305bfc",
    ),
    (
        "audio/librosa/TK0423_T2_Jessica.npz",
        1_156_931,
        "682147c651e23e559f4c8642bc7b89b9842b4dd6a189fe53dade70549205c2ce",
    ),
    (
        "audio/librosa/XC0226_T1_Jessica.npz",
        305_333,
        "4c2c63d34ba1d17347c130d3bd115d8952316df3b30adcde523439d5889c31c3",
    ),
    (
        "audio/librosa/XC0226_T3_Lauren.npz",
        1_510_616,
        "626f1f7509b59145218632687545b7f5b3aba9583724b632e52d0ff39d66f8b9",
    ),
    ("audio/prosody/EH0822_T1_Jessica.npz", 473, "8fd40565435dc45712f5629183521cc7c4fa294e34c84e5403c8af0aefeb0d98"),
    ("audio/prosody/KC0616_T1_Luke.npz", 472, "a6ebaab8136d56f59e2d7a8ade35531db4b40685f220d68ac287d6a3594afd26"),
    ("audio/prosody/MD0108_T2_Bethany.npz", 472, "d75d0522ea3e9eaecf4663d3ec141b841dd5b108fac20f78709462a5734f9322"),
    ("audio/prosody/MS0315_T3_Savannah.npz", 472, "877add08a5b6faa4ca7b930538f00cbe3051d799735ef1622cee8b3f5da96a65"),
    ("audio/prosody/NR0802_T1_Luke.npz", 471, "92d2f408cd0ff893a269965c324837ceec5a91a781c8b58666715d65c7f40f32"),
    ("audio/prosody/SA1129_T3_Bethany.npz", 472, "362d957db3698d79f736972e0b83d8e2b9337b0a5667f281d57a163ad1383c19"),
    ("audio/prosody/SN0216_T2_Savannah.npz", 471, "2f234ff9ab5cbcc0feeaa0e2af17d0162dfa884342f8f30e21e40e313d5e3103"),
    ("audio/prosody/TK0423_T2_Jessica.npz", 472, "f65a91d40c65991ca6382b094d6d2116e5c487db677a3c6647472eafedcacc48"),
    ("audio/prosody/XC0226_T1_Jessica.npz", 471, "4d6557c5827b62db5a510f645845891178caf8853fbbf2d1fd1eb0e9502074a7"),
    ("audio/prosody/XC0226_T3_Lauren.npz", 472, "259a3b41840f901003495cc7153888e0ac764febfabac6e437f17c7a506e062d"),
    (
        "audio/wav2vec/MD0108_T2_Bethany.npz",
        4_135_404,
        "17eb29747f749c9db7fe0fc5c47ec86e9fcc567ebb0514cc839efcb38f372fcd",
    ),
    (
        "audio/wav2vec/XC0226_T1_Jessica.npz",
        3_090_999,
        "98d6d5e85ecab8f24836fd74fb682ae2a8ffce6063b1093b12399955973b08f8",
    ),
    ("subset_manifest.csv", 2_446, "5dceb7494f52d94856b4eec7da0265c529de08fc09785756402bf255afd94c3f"),
    ("subset_manifest.json", 823, "f6258c8ff3faafc837a0a60d3c4ee5d303f1fe299434801db0004f52929bcae7"),
    ("text/words/EH0822_T1_Jessica.npz", 1_145, "04286a1683d9a6eeeac96bf3024198723eec7d059e036a59ab23e4a735080626"),
    ("text/words/KC0616_T1_Luke.npz", 969, "ec8fc03af7098509aef7be82e2417fe22479381bc3aed5ba0f565c4ea758e63a"),
    ("text/words/MD0108_T2_Bethany.npz", 438, "32d4866980c3797ef260d8c594ad11d767fb72fac731ef7a3fda5269096a6caa"),
    ("text/words/MS0315_T3_Savannah.npz", 700, "aece278e96bf64c5ac9cc564c33b7d35cd72d0a82c63c3db4d21da2403bfb55e"),
    ("text/words/NR0802_T1_Luke.npz", 663, "0e5acfe1032c6edd68cbbfbb3b89a28b8238b92890fac73e8d52f164f93ffbb2"),
    ("text/words/SA1129_T3_Bethany.npz", 585, "980286036fb1306cdaee30bba55c10ca0f2a887b6c384a055fcbaeb3801a6815"),
    ("text/words/SN0216_T2_Savannah.npz", 1_192, "242191d51bf98559885a4f5b8cae5f422c47897b8406d753627009efce862c93"),
    ("text/words/TK0423_T2_Jessica.npz", 688, "c47497a895a7af8bc4e256b6777dc8679a2c2f8b5373fb50c3f07750ceb203bf"),
    ("text/words/XC0226_T1_Jessica.npz", 405, "40a15a4b2934bbe89a0099540afb0a59825bb02fb700f104a60903222c8ebedb"),
    ("text/words/XC0226_T3_Lauren.npz", 1_163, "8f3f0eb8fa24a7df41b44e00228de22e7e105f0a7d9ba9240e9bbcb540011ae7"),
    (
        "video/openface3/EH0822_T1_Jessica.npz",
        3_550_232,
        "f43fa7254d27026c8c8339a181f312a66413b75c6e04991a933feed19afa15e7",
    ),
    (
        "video/openface3/KC0616_T1_Luke.npz",
        1_955_489,
        "d529c79b7cc5009fa0157adcf207500bf29801c74f3ec28dd4d429ca33826aa5",
    ),
    (
        "video/openface3/MD0108_T2_Bethany.npz",
        598_263,
        "c3734ee207a58ec1b64c67ff14255a331e5effff5a0f5c3a4fe0012c181832f1",
    ),
    (
        "video/openface3/MS0315_T3_Savannah.npz",
        601_960,
        "7df613004b34e6728ae1ee2c265e8075088cd7c85ff27bcfb5b9edd7bb82eaea",
    ),
    (
        "video/openface3/NR0802_T1_Luke.npz",
        1_343_105,
        "733b53dd967734ba633e3c8df784fcdcec467eecc9383230426c5c173dee4bc7",
    ),
    (
        "video/openface3/SA1129_T3_Bethany.npz",
        989_359,
        "443ea8c20ef2a6176de486a82cdc21c260bbe6c617407ff9b44452a6a9e2db7d",
    ),
    (
        "video/openface3/SN0216_T2_Savannah.npz",
        1_736_647,
        "eccf12cc27f62b7ff6c4b16dfd42d03a46cc80e8c4fedbf49071c362a9887745",
    ),
    (
        "video/openface3/TK0423_T2_Jessica.npz",
        1_496_154,
        "e9ed998089b4346aae1e7c0cd82d2c2bf01d9f2dd2a395e75cf87eaea535b44e",
    ),
    (
        "video/openface3/XC0226_T1_Jessica.npz",
        365_752,
        "2d35413011bf52a76da4324f2c70376a92bd74daff34e81e4cf405c8d888060e",
    ),
    (
        "video/openface3/XC0226_T3_Lauren.npz",
        3_250_551,
        "6e4bd1027a66b6a63d729c6d149ffc2612d2988ad68f46a733debcefd2acaeca",
    ),
)
SUBSET10 = FeatureSample(
    "subset10",
    _SUBSET10_COMMIT,
    _SUBSET10_FOLDER,
    tuple(
        PublicFile(
            f"{_SUBSET10_FOLDER}/{path}",
            _SUBSET10_COMMIT[:7],
            _SUBSET10_COMMIT,
            f"{_SUBSET10_FOLDER}/{path}",
            digest,
            "the public feature sample of 10 videos (release layout, no labels)",
            size,
        )
        for path, size, digest in _SUBSET10_FILES
    ),
)
FEATURE_SAMPLES: dict[str, FeatureSample] = {SUBSET10.key: SUBSET10}
_BY_SHA256 = {f.sha256: f for f in (*PUBLIC_FILES, *SUBSET10.files)}


def sha256_of(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


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

"""The authors' protocol (mis_bench_dataset.protocol): the `paper` prompt's layout, the frame-sampling rule and
pixel budget, the Hub layout adapter, and the Table 4 recipes."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS, RUBRIC, paper_prompt
from mis_bench_dataset.protocol import ANSWER_LINE, PAPER_TEMPLATE_SHA256, SECTION_HEADINGS, VideoSampling

HEADINGS = ["###Task Description:", "###Response to evaluate:", "###Score Rubrics:", "###Score:"]


def sections(user: str) -> dict[str, list[str]]:
    """The user text's sections by heading (the lines under each), in order; checks the heading order."""
    lines = user.split("\n")
    headings = [line for line in lines if line.startswith("###")]
    assert headings == HEADINGS, headings
    out: dict[str, list[str]] = {}
    current = None
    for line in lines:
        if line in HEADINGS:
            current = line
            out[current] = []
        else:
            out[current].append(line)
    return out


def check_paper_user_text(user: str, dimension: str, response: str) -> None:
    """Everything the issue fixes about the user text, against RUBRIC (paper Table 5) as the reference."""
    parts = sections(user)
    assert user.split("\n")[-1] == "###Score:" and parts["###Score:"] == []
    task = " ".join(parts["###Task Description:"])
    for phrase in (
        "an instruction, a response to evaluate and a score rubric",
        "between 1 and 5",
        "one decimal place",
        "score rubric",
        "no opening, no closing and no explanation",
    ):
        assert phrase in task, phrase
    assert "\n".join(parts["###Response to evaluate:"]).strip() == response
    rubric = RUBRIC[dimension]
    expected = [f"[{rubric.criterion}]"] + [f"Score {i}: {rubric.scores[i - 1]}" for i in range(1, 6)]
    assert [line for line in parts["###Score Rubrics:"] if line] == expected


@pytest.mark.parametrize("dimension", DIMENSION_KEYS)
def test_paper_prompt_layout_for_every_dimension(dimension):
    prompt = paper_prompt(dimension, "  I hear how hard this is.  ")
    assert DIMENSION_BY_KEY[dimension].name in prompt.system and "FIS" in prompt.system
    check_paper_user_text(prompt.user, dimension, "I hear how hard this is.")
    with_media = paper_prompt(DIMENSION_BY_KEY[dimension].name, "Words.", "Video descriptors (feature-derived): x")
    check_paper_user_text(with_media.user, dimension, "Words.\n\nVideo descriptors (feature-derived): x")
    assert [f"###{h}:" for h in SECTION_HEADINGS] + [ANSWER_LINE] == HEADINGS


def test_paper_wording_is_our_own_and_identified_by_its_hash():
    import hashlib

    from mis_bench_dataset.protocol import SYSTEM_TEMPLATE, USER_TEMPLATE

    assert (
        hashlib.sha256((SYSTEM_TEMPLATE.template + "\0" + USER_TEMPLATE.template).encode()).hexdigest()
        == PAPER_TEMPLATE_SHA256
    )
    text = USER_TEMPLATE.template
    # the authors' sentences are not copied (their template has a typo, "Reutrn", and other phrasing)
    for theirs in (
        "Reutrn only",
        "representing an evaluation criterion is given",
        "Please do not generate any other opening",
    ):
        assert theirs not in text


# ----------------------------------------------------------------------------------------- video sampling


def reference_indices(n_frames: int, frames: int) -> list[int]:
    """floor(i * (n - 1) / (frames - 1)) with exact fractions: linspace truncated to integers."""
    if frames == 1:
        return [0]
    return [int(Fraction(i * (n_frames - 1), frames - 1)) for i in range(frames)]


def test_paper_frame_indices_hand_computed():
    sampling = VideoSampling()
    assert (sampling.frames, sampling.max_pixels, sampling.min_pixels) == (32, 20480 * 28 * 28, 16 * 28 * 28)
    assert sampling.frame_indices(100).tolist() == [
        0,
        3,
        6,
        9,
        12,
        15,
        19,
        22,
        25,
        28,
        31,
        35,
        38,
        41,
        44,
        47,
        51,
        54,
        57,
        60,
        63,
        67,
        70,
        73,
        76,
        79,
        83,
        86,
        89,
        92,
        95,
        99,
    ]
    assert sampling.frame_indices(32).tolist() == list(range(32))
    assert sampling.frame_indices(1).tolist() == [0] * 32  # a one-frame clip repeats it, as np.linspace does
    assert sampling.frame_indices(10).tolist() == reference_indices(10, 32)  # shorter than 32: repeats frames
    with pytest.raises(ValueError, match="no frames"):
        sampling.frame_indices(0)


@settings(max_examples=300, deadline=None)
@given(n_frames=st.integers(min_value=1, max_value=20000), frames=st.integers(min_value=1, max_value=64))
def test_frame_indices_are_linspace_truncated(n_frames, frames):
    indices = VideoSampling(frames=frames, max_pixels=frames * 16 * 28 * 28).frame_indices(n_frames)
    assert indices.tolist() == reference_indices(n_frames, frames)
    assert indices[0] == 0 and indices[-1] == (n_frames - 1 if frames > 1 else 0)
    assert (np.diff(indices) >= 0).all() and indices.dtype.kind == "i"


@settings(max_examples=300, deadline=None)
@given(n_frames=st.integers(min_value=1, max_value=200000))
def test_paper_rule_equals_the_authors_numpy_call_for_32_frames(n_frames):
    # the authors' get_video_frames: np.linspace(0, total - 1, num=32, dtype=int)
    assert VideoSampling().frame_indices(n_frames).tolist() == np.linspace(0, n_frames - 1, num=32, dtype=int).tolist()


def test_pixel_budget_per_frame_follows_qwen_vl_utils():
    # qwen-vl-utils: max(min(768*28*28, total / nframes * 2), int(min_pixels * 1.05))
    assert VideoSampling().max_pixels_per_frame() == min(768 * 784, 20480 * 784 * 2 // 32) == 602112
    assert VideoSampling(frames=128).max_pixels_per_frame() == 20480 * 784 * 2 // 128 == 250880
    assert VideoSampling(frames=8, max_pixels=8 * 20000, min_pixels=20000).max_pixels_per_frame() == 40000
    assert VideoSampling().processor_kwargs() == {
        "do_sample_frames": False,
        "size": {"shortest_edge": 12544, "longest_edge": 602112},
    }
    assert VideoSampling(frames=16).as_record() == {
        "rule": "fixed",
        "frames": 16,
        "max_pixels": 16056320,
        "min_pixels": 12544,
        "max_pixels_per_frame": 602112,
        "frame_rule": "linspace(0, n_frames - 1, frames), truncated",
    }


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"frames": 0}, "frames must be a positive integer"),
        ({"max_pixels": -1}, "max_pixels must be a positive integer"),
        ({"min_pixels": 2.5}, "min_pixels must be a positive integer"),
        ({"frames": 64, "max_pixels": 64 * 12544 - 1}, "64 frames of at least 12544 pixels exceed"),
    ],
)
def test_bad_sampling_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VideoSampling(**kwargs)


def test_frame_archives_are_sampled_by_the_rule(tmp_path):
    from raft_trainer.video import load_sampled_video, video_kwargs

    from _raft_helpers import write_frame_archive

    path = write_frame_archive(tmp_path / "v.npz", 300, 28, 56, fps=30.0)
    frames, metadata = load_sampled_video(path, VideoSampling())
    expected = reference_indices(300, 32)
    assert frames.shape == (32, 28, 56, 3) and frames[:, 0, 0, 0].tolist() == [i % 256 for i in expected]
    assert metadata == {
        "total_num_frames": 300,
        "fps": 30.0,
        "height": 28,
        "width": 56,
        "duration": 10.0,
        "frames_indices": expected,
    }
    kwargs = video_kwargs(VideoSampling(), [metadata])
    assert kwargs == {
        "videos_kwargs": {
            "do_sample_frames": False,
            "size": {"shortest_edge": 12544, "longest_edge": 602112},
            "video_metadata": [metadata],
        }
    }
    np.savez(tmp_path / "bad.npz", pixels=np.zeros((2, 2)))
    with pytest.raises(ValueError, match="needs a `frames` array"):
        load_sampled_video(tmp_path / "bad.npz", VideoSampling())


def test_without_a_video_decoder_raw_video_is_refused_with_what_to_install(tmp_path):
    import importlib

    from eval_scripts import UnsupportedSetting
    from raft_trainer.video import DECODERS, load_sampled_video

    for _, module in DECODERS:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001
            continue
        pytest.skip(f"a video decoder ({module}) imports here")
    (tmp_path / "clip.mp4").write_bytes(b"not decoded")
    with pytest.raises(UnsupportedSetting, match="needs a video decoder.*pip install av"):
        load_sampled_video(tmp_path / "clip.mp4", VideoSampling())


# ---------------------------------------------------------------------------------- the authors' Hub layout


def paper_layout_rows(scoring_rows: list[dict]) -> list[dict]:
    """Rows in the layout of CalistaLu/FIS-Full-Dataset (as the authors' code reads it), written by hand."""
    return [
        {
            "video_path": f"data/FIS996/{row['video_id']}.mp4",
            "orig_criteria": DIMENSION_BY_KEY[row["dimension"]].name,
            "orig_response": row["transcript"],
            "orig_instruction": "Rate the response.",
            **{f"orig_score{i}_description": RUBRIC[row["dimension"]].scores[i - 1] for i in range(1, 6)},
            "score": row["score"],
        }
        for row in scoring_rows
    ]


def test_hub_layout_rows_become_scoring_rows(synthetic_build, tmp_path):
    from datasets import Dataset, load_dataset

    from mis_bench_dataset import BuiltDataset, scoring_rows_from_paper_layout
    from mis_bench_dataset.toolkit.errors import DataError

    original = BuiltDataset.of(synthetic_build).rows("test")
    parquet = tmp_path / "test.parquet"
    Dataset.from_list(paper_layout_rows(original)).to_parquet(parquet)
    local = load_dataset("parquet", data_files={"test": str(parquet)}, split="test", cache_dir=str(tmp_path / "c"))
    rows = scoring_rows_from_paper_layout(local, video_root="/data/FIS")
    keep = ("video_id", "clinician", "time_point", "stimulus", "dimension", "transcript", "score")
    assert [{k: r[k] for k in keep} for r in rows] == [{k: r[k] for k in keep} for r in original]
    assert rows[0]["video_path"] == f"/data/FIS/data/FIS996/{original[0]['video_id']}.mp4"
    bad = paper_layout_rows(original[:2])
    bad[1]["orig_criteria"] = "Charisma"
    with pytest.raises(DataError, match=r"unknown FIS dimension 'Charisma'.*row 1"):
        scoring_rows_from_paper_layout(bad)
    with pytest.raises(DataError, match="row 0 lacks orig_response"):
        scoring_rows_from_paper_layout([{"video_path": "a", "orig_criteria": "Empathy", "score": 3.0}])


def test_loading_the_hub_dataset_offline_is_one_clear_error(monkeypatch):
    from mis_bench_dataset.release.hub_layout import FULL_DATASET_ID, load_full_dataset
    from mis_bench_dataset.toolkit.errors import DataError

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(DataError, match=f"cannot load {FULL_DATASET_ID}.*request access on the Hub"):
        load_full_dataset("test")


# ------------------------------------------------------------------------------------------- Table 4 recipes


def test_table4_recipes_are_d1_with_the_paper_protocol_and_their_condition():
    """Both sets: D.1 (as paper_d1.yaml), the paper's prompt and video budget, their condition; the set as the
    authors ran it adds their frames, digits, loss scale and early stopping (every 100 steps for MIS-RAFT, 500 for
    standard fine-tuning, as their two scripts), the sound set keeps the toolkit's defaults."""
    from raft_trainer import RAFTConfig
    from raft_trainer.recipes import PAPER_D1_RECIPE, PAPER_TABLE4_RECIPES, SOUND_TABLE4_RECIPES, TABLE4_CONDITIONS

    d1 = yaml.safe_load(PAPER_D1_RECIPE.read_text())
    protocol = {
        "prompt_style": "paper",
        "modality": "video+text",
        "input_source": "auto",
        "max_length": None,
        "video_max_pixels": 20480 * 28 * 28,
        "video_min_pixels": 16 * 28 * 28,
    }
    own = {
        "raw inference": {"train": False},
        "standard fine-tuning": {"raft_objective": "ce"},
        "MIS-RAFT": {"raft_objective": "raft"},
    }

    def early_stopping(steps: int) -> dict:
        return {
            "eval_strategy": "steps",
            "eval_steps": steps,
            "save_strategy": "steps",
            "save_steps": steps,
            "load_best_model_at_end": True,
            "metric_for_best_model": "eval_loss",
            "greater_is_better": False,
            "early_stopping_patience": 10,
            "early_stopping_threshold": 0.0,
            "per_device_eval_batch_size": 1,
        }

    as_run = {
        "raw inference": {},
        "standard fine-tuning": early_stopping(500),
        "MIS-RAFT": {"renormalize_digits": False, "raft_loss_scale": "authors", **early_stopping(100)},
    }
    base = {k: v for k, v in d1.items() if k not in ("raft_objective", "max_length")}
    assert tuple(PAPER_TABLE4_RECIPES) == tuple(SOUND_TABLE4_RECIPES) == TABLE4_CONDITIONS
    for condition in TABLE4_CONDITIONS:
        paper = yaml.safe_load(PAPER_TABLE4_RECIPES[condition].read_text())
        sound = yaml.safe_load(SOUND_TABLE4_RECIPES[condition].read_text())
        assert paper == {**base, **protocol, "video_sampling": "paper", **own[condition], **as_run[condition]}
        assert sound == {**base, **protocol, "video_sampling": "fixed", "video_frames": 32, **own[condition]}
        for recipe in (paper, sound):  # every key is a field the trainer takes (the CPU-safe ones as given)
            fields = {k: v for k, v in recipe.items() if k in RAFTConfig.__dataclass_fields__}
            fields.update(bf16=False, optim="adamw_torch", use_cpu=True)
            RAFTConfig("unused", **fields)

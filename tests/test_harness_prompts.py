"""Prompt templates and feature-derived inputs."""

from __future__ import annotations

import re

import numpy as np
import pytest

from eval_scripts import Prompt, parse_score, render_prompt
from eval_scripts.answers.feature_plots import feature_media_block
from eval_scripts.answers.prompts import (
    MODALITIES,
    PROMPT_VERSIONS,
    FewShotExample,
    select_few_shot,
    template_hash,
    template_path,
)
from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS, RUBRIC
from mis_bench_dataset.dataset.feature_descriptors import (
    MIN_PAUSE_SECONDS,
    audio_descriptors,
    describe_audio,
    describe_video,
    video_descriptors,
)
from mis_bench_dataset.dimensions import ZERO_SHOT_PROMPT_STYLES as TEMPLATE_STYLES  # the styles with template files

from _harness_helpers import scoring_rows

ROWS = {row["dimension"]: row for row in scoring_rows(1)}


@pytest.mark.parametrize("version", PROMPT_VERSIONS)
@pytest.mark.parametrize("modality", MODALITIES)
@pytest.mark.parametrize("style", TEMPLATE_STYLES)
def test_every_template_renders_for_every_dimension(modality: str, style: str, version: int) -> None:
    for dimension in DIMENSION_KEYS:
        text = render_prompt(ROWS[dimension], modality, style, media_block="MEDIA-BLOCK", version=version)
        assert "$" not in text, "unfilled placeholder"
        assert ROWS[dimension]["transcript"] in text
        assert DIMENSION_BY_KEY[dimension].name in text
        assert RUBRIC[dimension].criterion in text
        for level in range(1, 6):
            assert f"Score {level}. {RUBRIC[dimension].description(level)}" in text
        assert ("MEDIA-BLOCK" in text) == (modality != "text")
        if style == "cot":
            assert "Final score: x.y" in text and "analyse" in text
        else:
            assert "Output only the numeric score" in text and "Final score" not in text


def test_eight_distinct_template_files_per_version() -> None:
    paths = {template_path(m, s, v) for m in MODALITIES for s in TEMPLATE_STYLES for v in PROMPT_VERSIONS}
    assert len(paths) == 8 * len(PROMPT_VERSIONS) and all(p.is_file() for p in paths)
    hashes = {template_hash(m, s, v) for m in MODALITIES for s in TEMPLATE_STYLES for v in PROMPT_VERSIONS}
    assert len(hashes) == 8 * len(PROMPT_VERSIONS)


@pytest.mark.parametrize("version", PROMPT_VERSIONS)
def test_audio_only_setting_says_audio_not_video(version: int) -> None:
    row = ROWS["empathy"]
    rubric = RUBRIC["empathy"]

    def own_words(text: str) -> str:  # the template's words: the rubric's text taken out
        for part in (rubric.criterion, *(rubric.description(level) for level in range(1, 6))):
            text = text.replace(part, "")
        return text

    audio = own_words(render_prompt(row, "audio+text", "direct", version=version))
    video = own_words(render_prompt(row, "video+text", "direct", version=version))
    assert "audio of one therapist" in audio and not re.search(r"\bvideo\b", audio)
    assert "video of one therapist" in video
    # the rubric's own "video clip" (the client stimulus) is never rewritten
    assert "video clip" in render_prompt(row, "audio+text", "direct")


def test_few_shot_block_and_answer_format() -> None:
    shots = [FewShotExample("AB0001_T1_Luke", "Example transcript one.", 3.7)]
    cot = render_prompt(ROWS["abc"], "text", "cot", few_shot=shots)
    direct = render_prompt(ROWS["abc"], "text", "direct", few_shot=shots)
    assert "Example transcript one." in cot and "Expert score: Final score: 3.7" in cot
    assert "Expert score: 3.7" in direct
    assert "Example" not in render_prompt(ROWS["abc"], "text", "cot")


def test_select_few_shot_is_seeded_excludes_videos_and_skips_unlabelled() -> None:
    pool = scoring_rows(12, seed=1)
    pool[0]["score"] = None
    chosen = select_few_shot(pool, "wau", 3, exclude_videos={"ZZ1001_T2_Luke"}, seed=5)
    again = select_few_shot(pool, "wau", 3, exclude_videos={"ZZ1001_T2_Luke"}, seed=5)
    assert chosen == again and len(chosen) == 3
    assert all(ex.video_id != "ZZ1001_T2_Luke" for ex in chosen)
    assert all(ex.video_id != pool[0]["video_id"] or pool[0]["dimension"] != "wau" for ex in chosen)
    with pytest.raises(ValueError, match="only 11 labelled train examples for wau, need 20"):
        select_few_shot(pool, "wau", 20, exclude_videos={"ZZ1001_T2_Luke"})


def test_prompt_hash_covers_text_and_attachments() -> None:
    base = Prompt("v", "wau", "hello")
    assert base.prompt_hash == Prompt("v", "wau", "hello").prompt_hash
    assert base.prompt_hash != Prompt("v", "wau", "hello!").prompt_hash
    assert base.prompt_hash != Prompt("v", "wau", "hello", images=(b"png",)).prompt_hash
    assert base.prompt_hash != Prompt("v", "wau", "hello", audio_path="a.wav").prompt_hash


def test_rendering_rejects_bad_rows_clearly() -> None:
    with pytest.raises(ValueError, match="unknown modality setting 'audio'"):
        render_prompt(ROWS["wau"], "audio", "direct")
    with pytest.raises(ValueError, match="empty transcript"):
        render_prompt({**ROWS["wau"], "transcript": "  "}, "text", "direct")


# ----------------------------------------------------------------------------- feature-derived inputs


def _librosa_with_pauses(rate: float = 50.0) -> tuple[np.ndarray, np.ndarray]:
    """10 s of 'speech' at -30 dB with silences (-80 dB) of 0.5 s, 1.0 s and 0.2 s (too short)."""
    energy = np.full(int(10 * rate), -30.0, dtype=np.float32)
    for start, length in ((2.0, 0.5), (5.0, 1.0), (8.0, 0.2)):
        energy[round(start * rate) : round((start + length) * rate)] = -80.0
    features = np.zeros((energy.size, 93), dtype=np.float32)
    features[:, :80] = energy[:, None]
    return features, np.arange(energy.size, dtype=np.float32) / rate


def test_audio_descriptors_hand_computed() -> None:
    librosa, ts = _librosa_with_pauses()
    prosody = np.array([[180.0, 40.0] + [0.0] * 13], dtype=np.float32)
    row = {
        "transcript": "one two three four five six seven eight nine ten eleven twelve",
        "librosa": librosa,
        "librosa_timestamps": ts,
        "prosody": prosody,
        "duration_seconds": 10.0,
    }
    desc = audio_descriptors(row)
    assert MIN_PAUSE_SECONDS == 0.3
    assert desc.pause_count == 2 and desc.pause_total_s == pytest.approx(1.5)
    assert desc.longest_pause_s == pytest.approx(1.0)
    assert desc.speaking_fraction == pytest.approx(1 - 1.7 / 10)
    assert desc.speech_rate_wps == pytest.approx(1.2)
    assert desc.loudness_sd_db == pytest.approx(0.0)
    assert (desc.pitch_mean_hz, desc.pitch_sd_hz) == (180.0, 40.0)
    text = describe_audio(desc)
    assert "feature-derived" in text and "speech rate 1.20 words/s" in text and "pauses of 0.3 s" in text


def test_video_descriptors_hand_computed() -> None:
    frames = 30
    face = np.zeros((frames, 208), dtype=np.float32)
    face[:, 5] = np.where(np.arange(frames) < 15, 0.9, 0.1)  # AU12 smile half the time
    landmarks = np.zeros((98, 2), dtype=np.float32)
    landmarks[96], landmarks[97] = (0.0, 0.0), (10.0, 0.0)  # pupils 10 px apart
    drift = np.arange(frames, dtype=np.float32)[:, None, None] * np.array([1.0, 0.0])  # 1 px per frame
    face[:, 8:204] = (landmarks[None] + drift).reshape(frames, -1)
    face[:, 204] = np.radians(10.0)
    face[:, 206] = 1.0
    face[0, 206] = 0.0  # one undetected frame
    row = {"openface": face, "openface_timestamps": np.arange(frames, dtype=np.float32) / 30}
    desc = video_descriptors(row)
    assert desc.face_detected_fraction == pytest.approx(29 / 30)
    assert desc.au_active_fraction["AU12"] == pytest.approx(14 / 29)
    assert desc.gaze_mean_deg[0] == pytest.approx(10.0, abs=1e-4)
    assert desc.head_movement == pytest.approx(0.1 * 30)  # 0.1 pupil distances per frame, 30 fps
    assert "smile" in describe_video(desc) and "feature-derived" in describe_video(desc)
    assert "no facial features" in describe_video(video_descriptors({"openface": np.zeros((0, 208))}))


def test_media_block_per_setting_and_plot_is_png() -> None:
    librosa, ts = _librosa_with_pauses()
    row = {
        "transcript": "a b c",
        "librosa": librosa,
        "librosa_timestamps": ts,
        "has_prosody": False,
        "openface": np.zeros((0, 208), np.float32),
    }
    text, images = feature_media_block(row, "audio+text", "text")
    assert "Audio descriptors" in text and "Video descriptors" not in text and images == ()
    text, images = feature_media_block(row, "audio+video+text", "text+plot")
    assert "Audio descriptors" in text and "Video descriptors" in text
    assert len(images) == 1 and images[0].startswith(b"\x89PNG")
    with pytest.raises(ValueError, match="unknown feature format"):
        feature_media_block(row, "audio+text", "svg")


def test_template_answer_formats_are_what_the_parser_reads() -> None:
    assert parse_score("3.4", "direct") == 3.4
    assert parse_score("Analysis.\nFinal score: 3.4", "cot") == 3.4

"""Video-level summaries of the `features` config, one numeric vector per modality group.

Groups match the benchmark's modality settings: `text` (transcript length, speech
rate, lexical markers), `audio` (log-Mel/MFCC statistics, pauses, prosody, wav2vec
mean/std when present) and `video` (OpenFace action units, gaze, landmark motion).
Column layouts follow `mis_bench_dataset.release.tree` (OpenFace 3: 8 AUs, 98 landmarks
x/y, gaze yaw/pitch, 2 confidence columns; librosa: 80 log-Mel + 13 MFCC).
A modality a video lacks gives zeros plus a `has_*` indicator set to 0, so the
regressor sees "absent" instead of a fake measurement.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mis_bench_dataset.dataset.feature_descriptors import frame_energy, silent_frames
from mis_bench_dataset.release.tree import (
    MODALITY_BY_NAME,
    OPENFACE_AUS,
    OPENFACE_CONFIDENCE,
    OPENFACE_GAZE,
    OPENFACE_LANDMARKS,
)

MODALITY_GROUPS: dict[str, tuple[str, ...]] = {
    "text": ("text",),
    "audio+text": ("audio", "text"),
    "video+text": ("video", "text"),
    "audio+video+text": ("audio", "video", "text"),
}

# The `features` modalities behind each group (text: the transcript).
GROUP_MODALITIES: dict[str, tuple[str, ...]] = {
    "text": ("transcript",),
    "audio": ("librosa", "prosody", "wav2vec"),
    "video": ("openface",),
}

_WORD = re.compile(r"[a-z']+")
_FILLERS = frozenset({"um", "uh", "er", "erm", "hmm", "mm"})
_WE = frozenset({"we", "us", "our", "ours", "together", "let's"})
_YOU = frozenset({"you", "your", "you're", "yours", "yourself"})
_I = frozenset({"i", "me", "my", "i'm", "mine", "myself"})
_FEELING = frozenset({"feel", "feeling", "feelings", "felt", "hear", "sounds", "understand", "sense"})
_HOPE = frozenset({"hope", "hopeful", "can", "will", "possible", "progress", "change", "better", "forward"})


def _array(row: Mapping[str, Any], name: str) -> np.ndarray:
    width = MODALITY_BY_NAME[name].width
    if not row.get(f"has_{name}", True):
        return np.zeros((0, width), dtype=np.float32)
    values = np.asarray(row.get(name) if row.get(name) is not None else [], dtype=np.float32)
    return values.reshape(-1, width) if values.size else np.zeros((0, width), dtype=np.float32)


def _mean_std(values: np.ndarray) -> np.ndarray:
    if len(values) == 0:
        return np.zeros(2 * values.shape[1], dtype=np.float64)
    return np.concatenate([values.mean(axis=0), values.std(axis=0)])


def text_summary(row: Mapping[str, Any]) -> dict[str, float]:
    """Length, speech rate and lexical markers (fillers, repetitions, we/you/I, feeling and hope words)."""
    transcript = str(row.get("transcript") or "")
    words = _WORD.findall(transcript.lower())
    n_words = len(words)
    sentences = max(1, len(re.findall(r"[.!?]+", transcript)))
    duration = row.get("duration_seconds")
    has_duration = duration is not None and np.isfinite(duration) and duration > 0
    rate = n_words / float(duration) if has_duration else 0.0

    counts = Counter(words)

    def share(vocabulary: frozenset[str]) -> float:
        return sum(counts[w] for w in vocabulary) / n_words if n_words else 0.0

    repeats = sum(a == b for a, b in itertools.pairwise(words)) / n_words if n_words else 0.0
    return {
        "text_log_words": float(np.log1p(n_words)),
        "text_words_per_sentence": n_words / sentences,
        "text_mean_word_length": float(np.mean([len(w) for w in words])) if words else 0.0,
        "text_type_token_ratio": len(set(words)) / n_words if n_words else 0.0,
        "text_speech_rate_wps": rate,
        "text_has_duration": float(has_duration),
        "text_questions_per_sentence": transcript.count("?") / sentences,
        "text_filler_share": share(_FILLERS),
        "text_repeat_share": repeats,
        "text_we_share": share(_WE),
        "text_you_share": share(_YOU),
        "text_i_share": share(_I),
        "text_feeling_share": share(_FEELING),
        "text_hope_share": share(_HOPE),
    }


def audio_summary(row: Mapping[str, Any]) -> np.ndarray:
    librosa = _array(row, "librosa")
    pause_stats = np.zeros(3)
    if len(librosa):
        energy = frame_energy(librosa)
        pauses = silent_frames(librosa)
        voiced = energy[~pauses]
        pause_stats = np.array(
            [pauses.mean(), voiced.mean() if len(voiced) else 0.0, voiced.std() if len(voiced) else 0.0]
        )
    prosody = _array(row, "prosody")
    wav2vec = _array(row, "wav2vec")
    return np.concatenate(
        [
            [float(len(librosa) > 0), float(len(prosody) > 0), float(len(wav2vec) > 0)],
            _mean_std(librosa),
            pause_stats,
            prosody.mean(axis=0) if len(prosody) else np.zeros(prosody.shape[1]),
            _mean_std(wav2vec),
        ]
    )


def video_summary(row: Mapping[str, Any]) -> np.ndarray:
    openface = _array(row, "openface")
    if len(openface) == 0:
        return np.zeros(1 + 8 * 3 + 4 + 4 + 2)
    aus = openface[:, OPENFACE_AUS]
    landmarks = openface[:, OPENFACE_LANDMARKS].reshape(len(openface), -1, 2)
    # Motion in face-size units, so pixel and normalised coordinates compare.
    scale = np.sqrt(landmarks.var(axis=1).sum(axis=1)).mean() or 1.0
    if len(openface) > 1:
        landmark_speed = np.linalg.norm(np.diff(landmarks, axis=0), axis=2).mean(axis=1) / scale
        head_speed = np.linalg.norm(np.diff(landmarks.mean(axis=1), axis=0), axis=1) / scale
    else:
        landmark_speed = head_speed = np.zeros(1)
    return np.concatenate(
        [
            [1.0],
            aus.mean(axis=0),
            aus.std(axis=0),
            np.percentile(aus, 90, axis=0),
            _mean_std(openface[:, OPENFACE_GAZE]),
            [landmark_speed.mean(), landmark_speed.std(), head_speed.mean(), head_speed.std()],
            openface[:, OPENFACE_CONFIDENCE].mean(axis=0),
        ]
    )


def _group_present(rows: Sequence[Mapping[str, Any]], group: str) -> bool:
    if group == "text":
        return any(str(row.get("transcript") or "").strip() for row in rows)
    return any(bool(row.get(f"has_{name}")) for row in rows for name in GROUP_MODALITIES[group])


def feedable_settings(rows: Sequence[Mapping[str, Any]]) -> tuple[list[str], dict[str, str]]:
    """(the modality settings these rows can feed, {setting skipped: why}).

    A setting needs each of its groups on at least one video; otherwise its absent group would
    be all zeros and the setting a copy of a smaller one (a text-only build's four `features`
    settings would print four identical rows).
    """
    absent = [group for group in GROUP_MODALITIES if not _group_present(rows, group)]
    feedable, skipped = [], {}
    for setting, groups in MODALITY_GROUPS.items():
        missing = [g for g in groups if g in absent]
        if not missing:
            feedable.append(setting)
            continue
        names = ", ".join(m for g in missing for m in GROUP_MODALITIES[g])
        skipped[setting] = (
            f"the build has no {' or '.join(missing)} features ({names} absent on all {len(rows)} videos)"
        )
    return feedable, skipped


def _text_vector(row: Mapping[str, Any]) -> np.ndarray:
    return np.fromiter(text_summary(row).values(), dtype=np.float64)


# Column order of a setting's matrix: text, then audio, then video (whatever order `groups` names them in).
_GROUP_SUMMARIES = {"text": _text_vector, "audio": audio_summary, "video": video_summary}

SummaryCache = dict  # (group, video_id) -> that video's summary vector of the group


def summarise(
    rows: Sequence[Mapping[str, Any]], groups: Sequence[str], cache: SummaryCache | None = None
) -> np.ndarray:
    """(n_videos, n_features) matrix of the chosen groups for `features`-config rows.

    `cache` lets the modality settings of one job, fitted on the same rows, summarise each
    video once per group; share one only between calls on the same build.
    """
    unknown = set(groups) - set(_GROUP_SUMMARIES)
    if unknown:
        raise ValueError(f"unknown modality group(s) {sorted(unknown)}; use text, audio, video")
    if not rows:
        return np.zeros((0, 0))
    blocks = []
    for group, summary in _GROUP_SUMMARIES.items():
        if group not in groups:
            continue
        if cache is None:
            blocks.append(np.vstack([summary(row) for row in rows]))
            continue
        vectors = []
        for row in rows:
            key = (group, str(row["video_id"]))
            if key not in cache:
                cache[key] = summary(row)
            vectors.append(cache[key])
        blocks.append(np.vstack(vectors))
    return np.hstack(blocks)

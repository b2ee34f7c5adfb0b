"""Feature-derived stand-ins for audio and video, for the public release (no raw media).

A model in the audio/video settings of the public release cannot hear or see the
therapist; what it gets instead is a short, numeric, plainly labelled summary of
the released features. Results record `input_source = "features"` so these runs are
never mistaken for raw-media runs. The zero-shot harness (`eval_scripts`), the RAFT
trainer and the baselines all read the same descriptors and the same pause rule from
here, the ground layer; the harness adds an optional plot (`eval_scripts.answers.feature_plots`).

Column layouts (paper Table 1; `mis_bench_dataset.release.tree`):

- `librosa` (50 Hz): 80 log-Mel bands (dB, `power_to_db` with an 80 dB floor), then 13 MFCCs.
- `prosody` (one row per video, 15 values, unnamed in the release). Only the first
  two are used, read as mean and s.d. of F0 in Hz: their ranges on the real subset
  (100-220 Hz and 17-92 Hz, lower for male-sounding voices) fit no other reading.
  This is an assumption, stated in the text the model sees ("estimated pitch").
- `openface` (OpenFace 3): 8 action-unit intensities (0-1; the DISFA-8 set AU1, AU2,
  AU4, AU6, AU9, AU12, AU25, AU26), 98 landmarks as x/y pairs (WFLW layout; 96 and
  97 are the pupils), 2 gaze angles (radians), then face-detection confidence.

Pauses: a frame is silent when its mean log-Mel energy is more than
`SILENCE_DB_BELOW_PEAK` dB below the clip's 95th percentile; a pause is a silent run of at
least `MIN_PAUSE_SECONDS`. Speech rate is transcript words per second of duration.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mis_bench_dataset.release.tree import (
    LIBROSA_LOG_MEL,
    OPENFACE_AUS,
    OPENFACE_CONFIDENCE,
    OPENFACE_GAZE,
    OPENFACE_LANDMARKS,
)

logger = logging.getLogger(__name__)

# The `features`-config columns each medium's descriptors read.
FEATURE_COLUMNS = {
    "audio": ("librosa", "librosa_timestamps", "has_librosa", "prosody", "has_prosody", "duration_seconds"),
    "video": ("openface", "openface_timestamps", "has_openface"),
}
SILENCE_DB_BELOW_PEAK = 20.0
MIN_PAUSE_SECONDS = 0.3
AU_NAMES: tuple[tuple[str, str], ...] = (
    ("AU1", "inner brow raiser"),
    ("AU2", "outer brow raiser"),
    ("AU4", "brow lowerer"),
    ("AU6", "cheek raiser"),
    ("AU9", "nose wrinkler"),
    ("AU12", "lip corner puller (smile)"),
    ("AU25", "lips part"),
    ("AU26", "jaw drop"),
)
AU_ACTIVE = 0.5
_PUPILS = (96, 97)


@dataclass(frozen=True)
class AudioDescriptors:
    duration_s: float | None
    words: int
    speech_rate_wps: float | None
    pause_count: int | None
    pause_total_s: float | None
    longest_pause_s: float | None
    speaking_fraction: float | None
    loudness_sd_db: float | None
    pitch_mean_hz: float | None
    pitch_sd_hz: float | None


@dataclass(frozen=True)
class VideoDescriptors:
    face_detected_fraction: float
    au_mean: dict[str, float]
    au_active_fraction: dict[str, float]
    gaze_sd_deg: tuple[float, float] | None
    gaze_mean_deg: tuple[float, float] | None
    head_movement: float | None  # face centroid speed, inter-pupil distances per second


def feature_array(row: Mapping, name: str, width: int) -> np.ndarray:
    value = row.get(name)
    if value is None or not row.get(f"has_{name}", True):
        return np.zeros((0, width), dtype=np.float32)
    arr = np.asarray(value, dtype=np.float32)
    return arr.reshape(-1, width) if arr.size else np.zeros((0, width), dtype=np.float32)


def frame_rate(timestamps, n_frames: int, default: float) -> float:
    ts = np.asarray(timestamps if timestamps is not None else [], dtype=np.float64)
    if ts.size >= 2:
        step = float(np.median(np.diff(ts)))
        if step > 0:
            return 1.0 / step
    return default


def _runs(mask: np.ndarray) -> np.ndarray:
    """Lengths of the runs of True in a 1-d boolean array."""
    padded = np.concatenate(([False], mask, [False])).astype(np.int8)
    edges = np.flatnonzero(np.diff(padded))
    return edges[1::2] - edges[::2]


def frame_energy(librosa: np.ndarray) -> np.ndarray:
    """Per-frame voice energy (dB): the mean of the log-Mel bands of a `librosa` array."""
    return librosa[:, LIBROSA_LOG_MEL].mean(axis=1)


def silence_threshold(energy: np.ndarray) -> float:
    return float(np.percentile(energy, 95)) - SILENCE_DB_BELOW_PEAK


def silent_frames(librosa: np.ndarray) -> np.ndarray:
    """Frames whose mean log-Mel energy lies `SILENCE_DB_BELOW_PEAK` dB below the clip's
    95th percentile: the one pause rule shared by prompts and baselines."""
    energy = frame_energy(librosa)
    if not len(energy):
        return np.zeros(0, dtype=bool)
    return energy < silence_threshold(energy)


def audio_descriptors(row: Mapping) -> AudioDescriptors:
    words = len((row.get("transcript") or "").split())
    duration = row.get("duration_seconds")
    duration = float(duration) if duration is not None and np.isfinite(duration) and duration > 0 else None
    librosa = feature_array(row, "librosa", 93)
    pause_count = pause_total = longest = speaking = loudness = None
    if len(librosa):
        rate = frame_rate(row.get("librosa_timestamps"), len(librosa), 50.0)
        energy = frame_energy(librosa)
        silent = silent_frames(librosa)
        runs = _runs(silent) / rate
        pauses = runs[runs >= MIN_PAUSE_SECONDS]
        pause_count, pause_total = int(pauses.size), float(pauses.sum())
        longest = float(pauses.max()) if pauses.size else 0.0
        speaking = float(1.0 - silent.mean())
        loudness = float(energy[~silent].std()) if (~silent).any() else None
        duration = duration or len(librosa) / rate
    prosody = feature_array(row, "prosody", 15)
    pitch_mean = float(prosody[0, 0]) if len(prosody) and prosody[0, 0] > 0 else None
    pitch_sd = float(prosody[0, 1]) if len(prosody) and pitch_mean is not None else None
    return AudioDescriptors(
        duration_s=duration,
        words=words,
        speech_rate_wps=words / duration if duration else None,
        pause_count=pause_count,
        pause_total_s=pause_total,
        longest_pause_s=longest,
        speaking_fraction=speaking,
        loudness_sd_db=loudness,
        pitch_mean_hz=pitch_mean,
        pitch_sd_hz=pitch_sd,
    )


def video_descriptors(row: Mapping) -> VideoDescriptors | None:
    face = feature_array(row, "openface", 208)
    if not len(face):
        return None
    valid = face[face[:, OPENFACE_CONFIDENCE.start] >= 0.5]
    detected = len(valid) / len(face)
    if not len(valid):
        return VideoDescriptors(0.0, {}, {}, None, None, None)
    aus = valid[:, OPENFACE_AUS]
    gaze = np.degrees(valid[:, OPENFACE_GAZE])
    points = valid[:, OPENFACE_LANDMARKS].reshape(len(valid), -1, 2)
    pupil_distance = np.linalg.norm(points[:, _PUPILS[0]] - points[:, _PUPILS[1]], axis=1)
    centroid = points.mean(axis=1)
    movement = None
    if len(valid) >= 2:
        rate = frame_rate(row.get("openface_timestamps"), len(face), 30.0)
        step = np.linalg.norm(np.diff(centroid, axis=0), axis=1) / np.maximum(pupil_distance[1:], 1e-6)
        movement = float(np.median(step) * rate)
    return VideoDescriptors(
        face_detected_fraction=float(detected),
        au_mean={name: float(v) for (name, _), v in zip(AU_NAMES, aus.mean(axis=0), strict=True)},
        au_active_fraction={
            name: float(v) for (name, _), v in zip(AU_NAMES, (aus >= AU_ACTIVE).mean(axis=0), strict=True)
        },
        gaze_sd_deg=(float(gaze[:, 0].std()), float(gaze[:, 1].std())),
        gaze_mean_deg=(float(gaze[:, 0].mean()), float(gaze[:, 1].mean())),
        head_movement=movement,
    )


def _fmt(value: float | None, spec: str, unit: str = "") -> str:
    return "unavailable" if value is None else f"{value:{spec}}{unit}"


def describe_audio(desc: AudioDescriptors) -> str:
    lines = [
        "Audio descriptors (feature-derived from the released prosody and log-Mel features; "
        "the raw audio is not available):",
        f"- duration: {_fmt(desc.duration_s, '.1f', ' s')}; {desc.words} transcript words; "
        f"speech rate {_fmt(desc.speech_rate_wps, '.2f', ' words/s')}",
        f"- pauses of {MIN_PAUSE_SECONDS:g} s or longer: {_fmt(desc.pause_count, 'd')} "
        f"(total {_fmt(desc.pause_total_s, '.1f', ' s')}, longest {_fmt(desc.longest_pause_s, '.1f', ' s')}); "
        f"speaking {_fmt(None if desc.speaking_fraction is None else 100 * desc.speaking_fraction, '.0f', '%')} "
        "of the time",
        f"- loudness variation while speaking: s.d. {_fmt(desc.loudness_sd_db, '.1f', ' dB')}",
        f"- estimated pitch: mean {_fmt(desc.pitch_mean_hz, '.0f', ' Hz')}, "
        f"s.d. {_fmt(desc.pitch_sd_hz, '.0f', ' Hz')}",
    ]
    return "\n".join(lines)


def describe_video(desc: VideoDescriptors | None) -> str:
    head = "Video descriptors (feature-derived from the released OpenFace features; the raw video is not available):"
    if desc is None:
        return head + "\n- no facial features were released for this response"
    if not desc.au_mean:
        return head + "\n- the face was not detected in any frame"
    names = dict(AU_NAMES)
    au_text = "; ".join(
        f"{au} {names[au]} {desc.au_mean[au]:.2f} (active {100 * desc.au_active_fraction[au]:.0f}%)"
        for au in desc.au_mean
    )
    gaze_sd, gaze_mean = desc.gaze_sd_deg, desc.gaze_mean_deg
    return "\n".join(
        [
            head,
            f"- face detected in {100 * desc.face_detected_fraction:.0f}% of frames",
            f"- facial action units, mean intensity 0-1 (share of frames >= {AU_ACTIVE}): {au_text}",
            f"- gaze: mean direction {gaze_mean[0]:+.0f} deg horizontal, {gaze_mean[1]:+.0f} deg vertical; "
            f"variability s.d. {gaze_sd[0]:.1f} / {gaze_sd[1]:.1f} deg",
            f"- head movement: {_fmt(desc.head_movement, '.2f')} inter-pupil distances per second (median)",
        ]
    )


def describe_media(row: Mapping, modality: str) -> str:
    """The text standing in for the audio and/or video of a modality setting (audio first)."""
    parts = []
    if "audio" in modality:
        parts.append(describe_audio(audio_descriptors(row)))
    if "video" in modality:
        parts.append(describe_video(video_descriptors(row)))
    return "\n".join(parts)

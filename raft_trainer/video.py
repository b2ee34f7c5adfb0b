"""Raw video -> the frames a model sees, sampled by the paper's rule, and the processor kwargs that go with them.

One function for the trainer's raw-media path (`raft_trainer.raw_media`) and the harness's transformers
backend: `load_sampled_video` decodes only the frames `VideoSampling.frame_indices` picks
(`np.linspace(0, n - 1, 32, dtype=int)` by default, as the authors' code) and returns them with their
metadata; `video_kwargs` tells a Qwen2-VL-family processor to take those frames as they are (no second
sampling) within the pixel budget. Decoding uses transformers' `load_video` with the first installed
decoder (torchcodec, decord, PyAV, OpenCV, torchvision). A `.npz` path holding `frames` (T, H, W, 3) and
optionally `fps` is read with numpy instead: frames extracted beforehand, sampled by the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mis_bench_dataset.inputs import UnsupportedSetting
from mis_bench_dataset.protocol import VideoSampling

# transformers' `load_video` backend names, in the order we try them, with the module each needs.
DECODERS: tuple[tuple[str, str], ...] = (
    ("torchcodec", "torchcodec"),
    ("decord", "decord"),
    ("pyav", "av"),
    ("opencv", "cv2"),
    ("torchvision", "torchvision"),
)
FRAME_ARCHIVE_SUFFIX = ".npz"


def available_decoder() -> str:
    """The first video decoder that imports here, as transformers names it; refuses (saying what to install)
    when there is none."""
    import importlib

    for backend, module in DECODERS:
        try:
            importlib.import_module(module)
        except Exception:  # noqa: BLE001 - e.g. torchvision's build that does not import beside this torch
            continue
        return backend
    raise UnsupportedSetting(
        "raw video needs a video decoder and none imports here (tried "
        + ", ".join(module for _, module in DECODERS)
        + ")",
        hint="pip install av (PyAV) or decord; or use --input-source features",
    )


def load_sampled_video(path: str | Path, sampling: VideoSampling) -> tuple[np.ndarray, dict[str, Any]]:
    """The sampled frames (T, H, W, 3) of one video and their metadata (`total_num_frames`, `fps`,
    `frames_indices`, ...; the fields of transformers' `VideoMetadata`)."""
    path = str(path)
    if path.endswith(FRAME_ARCHIVE_SUFFIX):
        return _archive_frames(path, sampling)
    from transformers.video_utils import load_video

    def sample_indices(metadata, **_ignored) -> np.ndarray:
        return sampling.frame_indices(int(metadata.total_num_frames))

    decoder = available_decoder()
    try:
        frames, metadata = load_video(path, backend=decoder, sample_indices_fn=sample_indices)
    except (OSError, TypeError, ValueError) as err:
        raise ValueError(f"cannot read the video {path!r}: {err}") from err
    return np.asarray(frames), dict(metadata)


def _archive_frames(path: str, sampling: VideoSampling) -> tuple[np.ndarray, dict[str, Any]]:
    try:
        with np.load(path) as archive:
            if "frames" not in archive.files:
                raise ValueError(f"{path}: a frame archive needs a `frames` array (T, H, W, 3), found {archive.files}")
            frames = archive["frames"]
            fps = float(archive["fps"]) if "fps" in archive.files else None
    except OSError as err:
        raise ValueError(f"cannot read the frame archive {path!r}: {err}") from err
    if frames.ndim != 4 or frames.shape[-1] != 3:
        raise ValueError(f"{path}: `frames` must be (T, H, W, 3), got shape {frames.shape}")
    indices = sampling.frame_indices(len(frames))
    metadata = {
        "total_num_frames": len(frames),
        "fps": fps,
        "height": int(frames.shape[1]),
        "width": int(frames.shape[2]),
        "duration": len(frames) / fps if fps else None,
        "frames_indices": indices.tolist(),
    }
    return frames[indices], metadata


def video_kwargs(sampling: VideoSampling, metadata: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """`processor_kwargs` for `apply_chat_template`: the frames are already sampled, sized within the budget,
    and timed by their metadata (Qwen2.5-VL derives its temporal positions from the sampled fps)."""
    return {"videos_kwargs": {**sampling.processor_kwargs(), "video_metadata": list(metadata)}}

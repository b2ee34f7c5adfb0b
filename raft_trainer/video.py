"""Raw video -> the frames a model sees, sampled and sized by a `VideoSampling` rule, and the processor kwargs
that go with them.

One function for the trainer's raw-media path (`raft_trainer.raw_media`) and the harness's transformers
backend: `load_sampled_video` decodes only the frames `VideoSampling.frame_indices` picks (rule "fixed":
`np.linspace(0, n - 1, 32, dtype=int)`; rule "paper": the authors' 2 frames a second) and returns them with
their metadata. Under "paper" the frames are also resized here as the authors' reader did (bicubic with
antialiasing, as torchvision's `resize` of uint8 frames: clamped and rounded back to uint8) to
`VideoSampling.resized_size`, then every second row and column is kept. `video_kwargs` tells a Qwen2-VL-family
processor to take those frames as they are (no second sampling), sized as the rule says. Decoding uses
transformers' `load_video` with the first installed decoder (torchcodec, decord, PyAV, OpenCV, torchvision). A
`.npz` path holding `frames` (T, H, W, 3) and optionally `fps` is read with numpy instead: frames extracted
beforehand, sampled by the same rule (the "paper" rule needs its `fps`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mis_bench_dataset.protocol import PAPER_FRAME_STRIDE, VideoSampling
from mis_bench_dataset.setting_inputs import UnsupportedSetting

# transformers' `load_video` backend names, in the order we try them, with the module each needs.
DECODERS: tuple[tuple[str, str], ...] = (
    ("torchcodec", "torchcodec"),
    ("decord", "decord"),
    ("pyav", "av"),
    ("opencv", "cv2"),
    ("torchvision", "torchvision"),
)
FRAME_ARCHIVE_SUFFIX = ".npz"
RESIZE_CHUNK_FRAMES = 16  # frames resized at a time: a float copy of every 1080p frame at once would take GBs


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
        return sampling.frame_indices(int(metadata.total_num_frames), metadata.fps)

    decoder = available_decoder()
    try:
        frames, metadata = load_video(path, backend=decoder, sample_indices_fn=sample_indices)
    except (OSError, TypeError, ValueError) as err:
        raise ValueError(f"cannot read the video {path!r}: {err}") from err
    return sized_frames(np.asarray(frames), sampling), dict(metadata)


def sized_frames(frames: np.ndarray, sampling: VideoSampling) -> np.ndarray:
    """The sampled frames (T, H, W, 3) as the rule hands them to the processor: unchanged under "fixed"; under
    "paper" resized to `sampling.resized_size` (bicubic, antialiased, clamped and rounded to uint8), then every
    second row and column."""
    if not sampling.resizes_frames:
        return frames
    import torch
    import torch.nn.functional as F

    size = sampling.resized_size(int(frames.shape[1]), int(frames.shape[2]), len(frames))
    out = np.empty((len(frames), *size, frames.shape[3]), dtype=np.uint8)
    for start in range(0, len(frames), RESIZE_CHUNK_FRAMES):
        chunk = torch.from_numpy(np.ascontiguousarray(frames[start : start + RESIZE_CHUNK_FRAMES]))
        chunk = chunk.permute(0, 3, 1, 2).float()
        resized = F.interpolate(chunk, size=size, mode="bicubic", align_corners=False, antialias=True)
        out[start : start + len(chunk)] = resized.clamp(0, 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()
    return np.ascontiguousarray(out[:, ::PAPER_FRAME_STRIDE, ::PAPER_FRAME_STRIDE])


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
    indices = sampling.frame_indices(len(frames), fps)
    metadata = {
        "total_num_frames": len(frames),
        "fps": fps,
        "height": int(frames.shape[1]),
        "width": int(frames.shape[2]),
        "duration": len(frames) / fps if fps else None,
        "frames_indices": indices.tolist(),
    }
    return sized_frames(frames[indices], sampling), metadata


def video_kwargs(sampling: VideoSampling, metadata: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """`processor_kwargs` for `apply_chat_template`: the frames are already sampled, sized as the rule says
    (`VideoSampling.processor_kwargs`), and timed by their metadata (Qwen2.5-VL derives its temporal positions
    from the sampled fps, `len(frames_indices) / total_num_frames * fps`, as the authors' reader computed it)."""
    return {"videos_kwargs": {**sampling.processor_kwargs(), "video_metadata": list(metadata)}}

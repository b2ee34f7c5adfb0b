"""The harness's feature-derived media for a prompt: descriptor text and, for vision models, a plot.

The descriptors themselves (and the pause rule) are defined once in
`mis_bench_dataset.dataset.feature_descriptors`; this module adds only what prompts need on top:
the format choice (`text`, `plot`, `text+plot`) and the PNG plot.
"""

from __future__ import annotations

import io
from collections.abc import Mapping

import numpy as np

from mis_bench_dataset.dataset.feature_descriptors import (
    AU_NAMES,
    describe_media,
    feature_array,
    frame_energy,
    frame_rate,
    silence_threshold,
)
from mis_bench_dataset.release.tree import OPENFACE_AUS, OPENFACE_GAZE
from mis_bench_dataset.setting_inputs import FEATURE_FORMATS


def feature_plot(row: Mapping, modality: str) -> bytes:
    """PNG of the feature time series a setting stands for (energy/pauses, AUs, gaze)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    panels = []
    if "audio" in modality:
        panels.append("audio")
    if "video" in modality:
        panels += ["au", "gaze"]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.2 * len(panels)), squeeze=False)
    for ax, panel in zip(axes[:, 0], panels, strict=True):
        if panel == "audio":
            librosa = feature_array(row, "librosa", 93)
            ts = np.arange(len(librosa)) / frame_rate(row.get("librosa_timestamps"), len(librosa), 50.0)
            energy = frame_energy(librosa)
            ax.plot(ts, energy, lw=0.6)
            if len(energy):
                ax.axhline(silence_threshold(energy), color="grey", ls="--", lw=0.8)
            ax.set_title("voice energy (dB; dashed = pause threshold)", fontsize=9)
        else:
            face = feature_array(row, "openface", 208)
            fps = frame_rate(row.get("openface_timestamps"), len(face), 30.0)
            ts = np.arange(len(face)) / fps
            if panel == "au":
                for (au, _), series in zip(AU_NAMES, face[:, OPENFACE_AUS].T, strict=True):
                    ax.plot(ts, series, lw=0.6, label=au)
                ax.legend(fontsize=6, ncol=8, loc="upper right")
                ax.set_title("facial action units (0-1)", fontsize=9)
            else:
                gaze = np.degrees(face[:, OPENFACE_GAZE]) if len(face) else np.zeros((0, 2))
                ax.plot(ts, gaze[:, 0], lw=0.6, label="horizontal")
                ax.plot(ts, gaze[:, 1], lw=0.6, label="vertical")
                ax.legend(fontsize=6)
                ax.set_title("gaze direction (deg)", fontsize=9)
        ax.set_xlabel("seconds", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("Feature-derived plot (no raw media)", fontsize=10)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=80, metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def feature_media_block(row: Mapping, modality: str, fmt: str = "text") -> tuple[str, tuple[bytes, ...]]:
    """(text block, images) standing in for the media of `modality`."""
    if fmt not in FEATURE_FORMATS:
        raise ValueError(f"unknown feature format {fmt!r}; expected one of {FEATURE_FORMATS}")
    parts = [describe_media(row, modality)] if "text" in fmt.split("+") else []
    images: tuple[bytes, ...] = ()
    if "plot" in fmt:
        images = (feature_plot(row, modality),)
        parts.append("The attached image plots these feature-derived signals over time.")
    return "\n".join(parts), images

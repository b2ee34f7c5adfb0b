"""Model backends: one interface, three engines (transformers, openai-compatible HTTP, vLLM).

A backend turns `Prompt`s into `Completion`s. It declares the inputs it takes
(`modalities`, a subset of text/image/audio/video) so the runner can refuse a
setting it cannot serve instead of silently dropping media. Engines are imported
lazily: `get_backend("vllm", ...)` on a machine without vLLM raises a clear error.
"""

from __future__ import annotations

from eval_scripts.backends.base import (
    BACKEND_NAMES,
    Backend,
    BackendUnavailable,
    Completion,
    DecodingConfig,
    UnsupportedSetting,
    get_backend,
)

__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "BackendUnavailable",
    "Completion",
    "DecodingConfig",
    "UnsupportedSetting",
    "get_backend",
]

"""Model backends: one interface, three engines (transformers, openai-compatible HTTP, vLLM).

A backend turns `Prompt`s into `Completion`s. It declares the inputs it takes
(`modalities`, a subset of text/image/audio/video) so the runner can refuse a
setting it cannot serve instead of silently dropping media. Engines are imported
lazily: `get_backend("vllm", ...)` on a machine without vLLM raises a clear error.

- `backend_options`: a backend's own options, a dataclass on the backend (`Backend.Options`), read from `run -M`
  and from the `run` flags generated from them (`RunFlag`), both through `options_given`.
- `base`: the backend interface (`Backend`, `Completion`, `DecodingConfig`) and the registry.
- `deadlines`: total deadlines for blocking HTTP requests (one watchdog thread).
- `plugins`: backends from outside: installed packages' entry points in the group `mis_bench.backends`.
- `replicas`: several servers of one model: least-outstanding routing, a cool-down and retry budget per replica.
- `served_model`: which model answered (each response's `model`), checked against `--model` (`--strict-model`).
- `openai_backend`: any OpenAI-compatible Chat Completions server over HTTP (OpenAI, vLLM/SGLang servers, Gemini).
- `transformers_backend`: local Hugging Face models: chat LMs and processor-based MLLMs.
- `vllm_backend`: vLLM's offline engine (GPU only), imported lazily.
"""

from __future__ import annotations

from eval_scripts.backends.backend_options import backend_option
from eval_scripts.backends.base import (
    BACKEND_NAMES,
    Backend,
    BackendUnavailable,
    Completion,
    DecodingConfig,
    UnsupportedSetting,
    backend_names,
    get_backend,
)

__all__ = [
    "BACKEND_NAMES",
    "Backend",
    "BackendUnavailable",
    "Completion",
    "DecodingConfig",
    "UnsupportedSetting",
    "backend_names",
    "backend_option",
    "get_backend",
]

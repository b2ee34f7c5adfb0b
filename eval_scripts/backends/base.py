"""The backend interface and registry."""

from __future__ import annotations

import importlib
import inspect
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.backend_options import (
    WHERE,
    NoOptions,
    RunFlag,
    backend_option,
    keys_hint,
    make_options,
    option_specs,
    options_given,
    run_flags,
)
from mis_bench_dataset.dimensions import SCORE_EXPECTED, SCORE_READOUTS, SCORE_REGRESSION, SCORE_TEXT, prompt_style
from mis_bench_dataset.protocol import VideoSampling
from mis_bench_dataset.setting_inputs import UnsupportedSetting
from mis_bench_dataset.toolkit.errors import UsageError
from mis_bench_dataset.toolkit.options import comma_list

INPUT_KINDS: tuple[str, ...] = ("text", "image", "audio", "video")
# The kind of failure of a row not answered before the run's deadline (`--run-deadline`).
FAILURE_RUN_DEADLINE = "run deadline"
# What a backend that cannot ask its model (an HTTP server, vLLM's engine) assumes until told otherwise.
DEFAULT_DECLARED_KINDS: tuple[str, ...] = ("text",)


def declared_kinds_field() -> Any:
    """The `modalities` option of a backend whose model's input kinds are declared by the user (`-M
    modalities=text,image`, alias `--backend-modalities`): the openai and vllm backends' one declaration."""
    return field(
        default=DEFAULT_DECLARED_KINDS,
        metadata=backend_option(
            f"input kinds the model takes, of {', '.join(INPUT_KINDS)} (text only unless told: it cannot be "
            "asked), e.g. text,image for GPT, text,image,video for a vLLM-served VLM",
            flag="--backend-modalities",
            parse=lambda text: tuple(comma_list(INPUT_KINDS)(text)),
        ),
    )


# name -> "module:Class", imported on first use
_REGISTRY: dict[str, str] = {
    "transformers": "eval_scripts.backends.transformers_backend:TransformersBackend",
    "openai": "eval_scripts.backends.openai_backend:OpenAIBackend",
    "vllm": "eval_scripts.backends.vllm_backend:VLLMBackend",
}
BACKEND_NAMES: tuple[str, ...] = tuple(_REGISTRY)


def declared_modalities(modalities: Sequence[str]) -> frozenset[str]:
    """The input kinds a backend was told it takes (always including text); unknown kinds are an error."""
    unknown = set(modalities) - set(INPUT_KINDS)
    if unknown:
        raise UsageError(
            f"unknown input kinds {sorted(unknown)}",
            where="--backend-modalities",
            hint=f"use a subset of {', '.join(INPUT_KINDS)}",
        )
    return frozenset(modalities) | {"text"}


class BackendUnavailable(UsageError):
    """The engine behind a backend is not installed or cannot start here."""


# The readouts (`mis-bench run --score-from`: SCORE_READOUTS) are defined in `mis_bench_dataset.dimensions`,
# beside the per-style token limits they select; imported here for the harness.


@dataclass(frozen=True)
class DecodingConfig:
    """Decoding parameters; part of every cache key. Greedy (temperature 0) by default.

    `score_from` is the readout (`SCORE_READOUTS`); `style` the prompt style, which says where an
    expected-score readout finds the score in the answer; `sample` the index of a repeated sample
    (`--samples N`, each with seed `seed + sample`).
    """

    max_new_tokens: int = 32
    temperature: float = 0.0
    top_p: float = 1.0
    seed: int = 0
    score_from: str = SCORE_TEXT
    style: str | None = None
    sample: int = 0

    def as_dict(self) -> dict:
        """What determines an answer, the mapping every cache key holds: the four sampling parameters, plus
        the readout (and style) when it is not the text one and the sample index after the first, so the
        keys of runs made before readouts and samples existed are unchanged."""
        fields = asdict(self)
        readout = {k: fields.pop(k) for k in ("score_from", "style", "sample")}
        if readout["score_from"] != SCORE_TEXT:
            fields.update(score_from=readout["score_from"], style=readout["style"])
        if readout["sample"]:
            fields["sample"] = readout["sample"]
        return fields

    @property
    def expected(self) -> bool:
        return self.score_from == SCORE_EXPECTED

    @property
    def reads_value(self) -> bool:
        """Whether the score is a value the backend returns beside the text (`Completion.expected`): the expected
        score, or a regression head's output; the text readout parses the answer instead."""
        return self.score_from in (SCORE_EXPECTED, SCORE_REGRESSION)

    def for_sample(self, sample: int) -> DecodingConfig:
        """The decoding of repeated sample `sample` (0 is the run's own): its own seed, so samples differ."""
        return replace(self, sample=sample, seed=self.seed - self.sample + sample)

    @classmethod
    def for_style(cls, style: str, **overrides) -> DecodingConfig:
        """The style's answer token limit for the readout asked (`mis_bench_dataset.dimensions.PROMPT_STYLE_TABLE`:
        a CoT answer needs room for its analysis, a direct one a few tokens, `paper` the authors' 16, an
        expected-score readout of a direct or paper answer only its score's tokens), then the overrides given."""
        readout = overrides.get("score_from") or SCORE_TEXT
        if readout not in SCORE_READOUTS:
            raise UsageError(
                f"unknown readout {readout!r}", where="--score-from", hint=f"use {' or '.join(SCORE_READOUTS)}"
            )
        base = {"max_new_tokens": prompt_style(style).max_tokens(readout), "style": style}
        base.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**base)


@dataclass
class Completion:
    """One outcome: `text` when ok, `error` when every attempt failed.

    `finish_reason` is the server's ("stop", "length", ...) when it says; `usage` its token
    counts; `cached` marks an answer served from the response cache without a call; `failure`
    the kind of failure of a failed one ("connection refused", "HTTP 500", ...), for summaries;
    `expected` the expected-score readout when the decoding asked for one.
    """

    index: int
    text: str | None
    ok: bool
    error: str | None = None
    attempts: int = 1
    latency_s: float = 0.0
    finish_reason: str | None = None
    usage: dict | None = None
    cached: bool = False
    failure: str | None = None
    expected: dict | None = (
        None  # the expected-score readout (`mis_icc_metric.expected_record.ExpectedScore.as_record`)
    )
    served_model: str | None = None  # the model the server says answered (`backends.served_model`); None: unsaid


class Backend(ABC):
    """A model engine behind the harness: turns `Prompt`s into `Completion`s (`complete`), declares the inputs it
    takes (`modalities`) so a setting it cannot serve is refused before any request, and releases its engine in
    `close`. Subclass it for a plugin (entry-point group `mis_bench.backends`, the harness page shows one).

    `Options` is the dataclass of the backend's own options (`backends.backend_options`: types, defaults, help,
    whether they change answers); the backend receives an instance as `options` (`mis-bench run -M KEY=VALUE`
    fills it). A backend that declares none has `NoOptions`."""

    name: str = "backend"
    Options: type = NoOptions
    modalities: frozenset[str] = frozenset({"text"})
    # True when requests reach the engine in the order given, so the runner sends them grouped by
    # shared prompt prefix for the server's prefix cache (`eval_scripts.harness.ordering`).
    keeps_request_order: bool = True
    # Set by backends that pick a raw video's frames themselves (recorded with the run); None when the
    # server or engine samples them.
    video_sampling: VideoSampling | None = None
    # `time.monotonic()` after which nothing more is sent (the run's deadline; None: none). Rows not
    # answered by then come back failed, kind FAILURE_RUN_DEADLINE (`deadline_failure`).
    deadline: float | None = None
    # True for backends that pick a raw video's frames themselves: the run's frame rule (`--video-sampling`, ...)
    # reaches them as the `video_sampling` keyword.
    picks_video_frames: bool = False

    def __init__(self, model: str, options: object | None = None):
        self.model = model
        self.options = self.Options() if options is None else options

    def past_deadline(self) -> bool:
        return self.deadline is not None and time.monotonic() >= self.deadline

    def deadline_failure(self, index: int, *, attempts: int = 0, latency_s: float = 0.0) -> Completion:
        """The outcome of a row the run's deadline left unanswered (asked again by the next run)."""
        return Completion(
            index,
            None,
            False,
            f"{FAILURE_RUN_DEADLINE}: the run's deadline (--run-deadline) passed before an answer came",
            attempts,
            latency_s,
            failure=FAILURE_RUN_DEADLINE,
        )

    def check_inputs(self, needed: set[str] | frozenset[str], what: str) -> None:
        missing = set(needed) - set(self.modalities)
        if missing:
            raise UnsupportedSetting(
                f"{what} needs {', '.join(sorted(missing))} input, but the {self.name} backend with model "
                f"{self.model!r} takes only {', '.join(sorted(self.modalities))}; "
                "refusing rather than running it as text-only",
                hint="declare what the served model takes with --backend-modalities, or pick another setting",
            )

    @abstractmethod
    def complete(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        """Yield one Completion per prompt (any order; `index` says which)."""

    def replicas(self) -> list[dict] | None:
        """Per server, when the backend spreads requests over several (`backends.replicas`): its address and
        counters (attempts sent, answered, failed, cool-downs) since it was made; None otherwise."""
        return None

    def close(self) -> None:  # noqa: B027 - an optional hook: backends holding no engine need not override it
        """Release engine resources."""


def backend_names() -> tuple[str, ...]:
    """The built-in backends, then the installed ones (entry-point group `mis_bench.backends`; metadata only)."""
    from eval_scripts.backends.plugins import installed_backends

    return BACKEND_NAMES + tuple(installed_backends(BACKEND_NAMES))


def backend_origins() -> dict[str, str]:
    """name -> where each backend comes from (`module:Class`, and the distribution of an installed one), built-in
    ones first; metadata only, no plugin imported (`mis-bench backends`)."""
    from eval_scripts.backends.plugins import installed_backends, origin

    found = {name: f"built in: {path}" for name, path in _REGISTRY.items()}
    found.update({name: f"installed: {origin(point)}" for name, point in installed_backends(BACKEND_NAMES).items()})
    return found


def backend_choices_text() -> str:
    """What `--backend` may be, for help and errors: built-in names, then installed ones."""
    installed = backend_names()[len(BACKEND_NAMES) :]
    return f"{', '.join(BACKEND_NAMES)} (built in); " + (
        f"installed: {', '.join(installed)}" if installed else "none installed (entry-point group mis_bench.backends)"
    )


def backend_class(name: str) -> type[Backend]:
    """The class of backend `name`: a built-in one, or an installed plugin's (loaded and checked here)."""
    if name in _REGISTRY:
        module_name, class_name = _REGISTRY[name].split(":")
        return getattr(importlib.import_module(module_name), class_name)
    return _installed_class(name)


def built_in_run_flags() -> list[RunFlag]:
    """The `mis-bench run` flags the built-in backends' options name (`backend_option(flag=...)`), generated from
    those declarations (an installed backend's options are `-M KEY=VALUE` only: `run --help` imports no plugin)."""
    return run_flags({name: backend_class(name).Options for name in BACKEND_NAMES})


def command_line_options(name: str, flags: Mapping[str, Any], pairs: Sequence[str]) -> dict[str, Any]:
    """Backend `name`'s options from a command line, typed and checked against its `Options`: the generated flags
    given (flag -> text) and `-M KEY=VALUE` through one path (`backend_options.options_given`)."""
    if not flags and not pairs:
        return {}
    return options_given(name, backend_class(name).Options, flags, pairs)


def get_backend(name: str, model: str, options: object | None = None, **keywords) -> Backend:
    """The backend `name` for `model`: a built-in one, or an installed plugin's class (`backends.plugins`).

    `options` is an instance of the backend's `Options` (default: its defaults); a keyword naming one of its
    options sets it (`get_backend("transformers", m, device="cpu")`), any other goes to the constructor as is
    (objects such as a loaded model); a keyword that is neither is one usage line listing the valid options."""
    cls = backend_class(name)
    if cls.Options is NoOptions and options is None:  # a backend that declares no options takes keywords as is
        backend = cls(model, **keywords)
    else:
        declared = {spec.name for spec in option_specs(cls.Options)}
        given = {key: keywords.pop(key) for key in list(keywords) if key.replace("-", "_") in declared}
        _check_keywords(cls, name, keywords)
        base = options if options is not None else cls.Options()
        values = {**{spec.name: getattr(base, spec.name) for spec in option_specs(cls.Options)}, **given}
        backend = cls(model, make_options(cls.Options, values, backend=name), **keywords)
    if backend.name == Backend.name:  # a plugin that names itself nothing is keyed (cache) by its entry point
        backend.name = name
    return backend


def _check_keywords(cls: type[Backend], name: str, keywords: dict) -> None:
    """Refuse keywords that are neither options nor parameters the constructor names, in one line (its `**`
    parameter, if any, takes options only)."""
    parameters = inspect.signature(cls.__init__).parameters
    named = {n for n, p in parameters.items() if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)} - {
        "self",
        "model",
        "options",
    }
    unknown = sorted(set(keywords) - named)
    if unknown:
        raise UsageError(
            f"the {name} backend has no option {unknown[0]!r}",
            where=WHERE,
            hint=keys_hint(name, option_specs(cls.Options)),
        )


def _installed_class(name: str) -> type[Backend]:
    """The class an installed package names for `name`, loaded and checked; a one-line error otherwise."""
    from eval_scripts.backends.plugins import installed_backends, origin

    point = installed_backends(BACKEND_NAMES).get(name)
    if point is None:
        raise UsageError(f"unknown backend {name!r}", where="--backend", hint=f"use one of {backend_choices_text()}")
    try:
        cls = point.load()
    except Exception as err:  # noqa: BLE001 - whatever a third-party module raises on import is one line here
        raise BackendUnavailable(
            f"the installed backend {name!r} ({origin(point)}) cannot be loaded: {type(err).__name__}: {err}",
            where="--backend",
            hint="fix or reinstall the package that provides it",
        ) from err
    if not (isinstance(cls, type) and issubclass(cls, Backend)):
        raise BackendUnavailable(
            f"the installed backend {name!r} ({origin(point)}) is not a Backend class",
            where="--backend",
            hint="the entry point must name a subclass of eval_scripts.backends.Backend (docs/harness.md)",
        )
    try:
        option_specs(cls.Options)
    except (TypeError, NameError) as err:  # not a dataclass, a field without default, an annotation not found
        raise BackendUnavailable(
            f"the installed backend {name!r} ({origin(point)}) declares options that cannot be read: {err}",
            where="--backend",
            hint="its Options must be a dataclass whose every field has a default (docs/harness.md)",
        ) from err
    return cls

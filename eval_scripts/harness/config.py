"""`RunConfig`: what one zero-shot run is asked for, each option written once, on its field.

A field's `metadata` (`mis_bench_dataset.toolkit.options.option`) holds its flag, help and validator, and its
default is the field's own (the backends' defaults where a backend defines the option), so the Python API
and `mis-bench run` (whose options `eval_scripts.cli.args.add_fields` generates from these fields) agree.
Light on purpose: `mis-bench run --help` imports this module, and neither numpy nor pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_scripts.answers.prompts import DEFAULT_PROMPT_VERSION, PROMPT_VERSIONS
from eval_scripts.backends.backend_options import option_defaults, option_specs
from eval_scripts.backends.base import INPUT_KINDS, DecodingConfig, backend_choices_text, backend_names
from eval_scripts.backends.openai_backend import OpenAIBackend, RetryPolicy
from eval_scripts.backends.transformers_backend import TransformersBackend
from mis_bench_dataset.dimensions import PROMPT_STYLE_TABLE, SCORE_EXPECTED, SCORE_READOUTS, SCORE_REGRESSION
from mis_bench_dataset.protocol import VideoSampling
from mis_bench_dataset.setting import SettingFields
from mis_bench_dataset.setting_inputs import FEATURE_FORMATS
from mis_bench_dataset.splits import SPLITS
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_RESAMPLE, DEFAULT_SEED
from mis_bench_dataset.toolkit.options import (
    bootstrap_option,
    bounded_int,
    comma_list,
    existing,
    file_path,
    http_urls,
    non_negative_float,
    non_negative_int,
    option,
    positive_int,
    resample_option,
    seconds,
    seed_option,
    unit_interval,
    wait_seconds,
)

if TYPE_CHECKING:
    from mis_bench_dataset.dataset.handle import BuiltDataset

# The backend-specific flags below fill the backends' options (`Backend.Options`, `backend_option(flag=...)`): their
# defaults are the options' own.
_OPENAI = option_defaults(OpenAIBackend.Options)
_LOCAL = option_defaults(TransformersBackend.Options)
_DECODING = DecodingConfig()
_STYLES = PROMPT_STYLE_TABLE.values()
# `--help` lists the fields by section, in this order (the command adds its mode flags between them).
SECTIONS = ("model", "setting", "local", "video", "openai")
# The sections whose flags are a backend's options under another name (`backend_option(flag=...)`).
BACKEND_SECTIONS = ("local", "openai")


@dataclass
class RunConfig(SettingFields):
    """One zero-shot setting of one model, as the user asked for it: every option of `mis-bench run` is a field
    here (its flag, default and help written once, on the field), so `run_setting(RunConfig(...))` runs with the
    command's defaults.

    The setting's fields are `Setting`'s, declared once in `mis_bench_dataset.setting` and shared with the
    trainer's `RAFTConfig`: `modality` (text, audio+text, video+text, audio+video+text), `input_source` (auto,
    raw, features), `prompt_style` (direct, cot, paper; `toolkit` reads as direct), `video_sampling`,
    `video_frames`, `video_max_pixels`, `video_min_pixels`; `.setting` is them as a frozen `Setting`. The model
    (`backend`, `model`, `dataset`, `split`, `limit`, few-shot), where outputs go (`out`, `cache_path`), the
    decoding and readout (`max_new_tokens`, `temperature`, `top_p`, `seed`, `score_from`, `samples`), the
    resampling of the scores (`n_bootstrap`, `resample`), and the backend's options (the flags of
    `mis-bench backends B`, or `backend_options`: `-M KEY=VALUE`)."""

    backend: str = field(
        metadata=option(
            # Built in or installed (entry points `mis_bench.backends`): read when the parser is built, from the
            # installed packages' metadata only (no plugin module imported for --help).
            lambda: f"model backend: {backend_choices_text()} (default: none, which runs the default job)",
            choices=backend_names,
            section="model",
        )
    )
    model: str = field(
        metadata=option(
            "Hub id / local folder (transformers, vllm) or API model name (openai) (default: none, which runs the "
            "default job)",
            section="model",
        )
    )
    # A built dataset, opened once at the boundary (`mis-bench run`, or the public entry functions, which open a
    # path they are given), so every setting of a grid shares one handle.
    dataset: BuiltDataset | None = field(
        default=None,
        metadata=option(
            "built dataset folder (`mis-bench build --out DIR`) (default: the default synthetic sample for the "
            "default job; a model run needs it)",
            type=existing("folder", as_path=False),
            section="model",
        ),
    )
    split: str = field(default="test", metadata=option("split to evaluate", choices=SPLITS, section="model"))
    # The direct / cot templates' version: 2 is laid out for prefix caching, 1 the earlier layout.
    prompt_version: int = field(
        default=DEFAULT_PROMPT_VERSION,
        metadata=option(
            "version of the direct / cot templates: 2 puts the task text and the dimension's rubric before the "
            "response (a dimension's prompts share their start: prefix caching), 1 names the dimension before the "
            "transcript and the rubric after it (runs comparable with earlier ones) "
            f"(default: {DEFAULT_PROMPT_VERSION}; `paper` has one wording)",
            type=int,
            choices=PROMPT_VERSIONS,
            section="setting",
        ),
    )
    limit: int | None = field(
        default=None,
        metadata=option(
            "only the first N videos (sorted ids), all dimensions (default: every video of the split)",
            type=positive_int,
            section="setting",
        ),
    )
    few_shot_k: int = field(
        default=0,
        metadata=option(
            "k scored examples per dimension from the train split (never the evaluated one); 0: zero-shot",
            flag="--few-shot",
            type=non_negative_int,
            section="setting",
        ),
    )
    few_shot_seed: int = field(
        default=0,
        metadata=option("seed of the choice of few-shot examples", type=non_negative_int, section="setting"),
    )
    feature_format: str = field(
        default="text",
        metadata=option(
            "feature-derived input as text, a plot image (vision models), or both",
            choices=FEATURE_FORMATS,
            section="setting",
        ),
    )
    out: str | Path = field(
        default="runs",
        metadata=option(
            "output folder (cache, predictions, results) (default: ./runs, or ./mis-bench-results for the default job)",
            section="setting",
            cli_default=None,  # the command picks ./runs or the default job's folder
        ),
    )
    cache_path: str | Path | None = field(
        default=None,
        metadata=option(
            "response cache file (default: OUT/responses.cache.jsonl)",
            flag="--cache",
            type=file_path,
            metavar="CACHE",
            section="setting",
        ),
    )
    # The decoding, unless `decoding` is given whole: each prompt style's own token budget unless set.
    max_new_tokens: int | None = field(
        default=None,
        metadata=option(
            "most tokens an answer may have (default: "
            + " / ".join(f"{s.max_new_tokens} ({s.name})" for s in _STYLES)
            + "; with --score-from expected "
            + " / ".join(f"{s.max_tokens(SCORE_EXPECTED)} ({s.name})" for s in _STYLES)
            + ")",
            aliases=("--max-tokens",),
            type=positive_int,
            section="setting",
        ),
    )
    temperature: float = field(
        default=_DECODING.temperature,
        metadata=option("sampling temperature, 0 = greedy (default: 0)", type=non_negative_float, section="setting"),
    )
    score_from: str = field(
        default=_DECODING.score_from,
        metadata=option(
            "text: parse the answer (default: text); expected: the probability-weighted score from the model's "
            "distribution over the score's digits (logprobs; for direct/paper only the score's first tokens, see "
            "--max-tokens); "
            "the text answer is kept beside it (docs/readouts.md); regression: the output of a regression head "
            "(mis-bench train --head regression; transformers backend)",
            choices=SCORE_READOUTS,
            section="setting",
        ),
    )
    samples: int = field(
        default=1,
        metadata=option(
            "answers per row (1-100), each with its own seed; a row scores their mean (median and spread in "
            "readouts.json; test-retest ICC in score/report); use with --temperature above 0 (default: 1)",
            type=bounded_int(1, 100),
            section="setting",
        ),
    )
    top_p: float = field(
        default=_DECODING.top_p, metadata=option("nucleus sampling top-p", type=unit_interval, section="setting")
    )
    seed: int = field(
        default=DEFAULT_SEED,
        metadata=seed_option(
            "seed of the model's sampling and of the bootstrap (the default job: of its fits too)", section="setting"
        ),
    )
    n_bootstrap: int = field(default=DEFAULT_BOOTSTRAP, metadata=bootstrap_option(section="setting"))
    resample: str = field(default=DEFAULT_RESAMPLE, metadata=resample_option(section="setting"))
    # transformers / vllm
    batch_size: int | None = field(
        default=None,
        metadata=option(
            f"prompts per call (default: {_LOCAL['batch_size']} with transformers; with vllm all prompts in one "
            "call, batched by vLLM's own scheduler)",
            type=positive_int,
            section="local",
        ),
    )
    dtype: str = field(
        default=_LOCAL["dtype"],
        metadata=option("model dtype: auto, float32, bfloat16, float16", section="local"),
    )
    device: str = field(default=_LOCAL["device"], metadata=option("auto, cpu, cuda, cuda:1, ...", section="local"))
    # openai-compatible HTTP
    # One server or several of one model (`--base-url` repeated or a comma list): requests go to the one with the
    # fewest in flight (`eval_scripts.backends.replicas`). Never in a cache key.
    base_url: str | list[str] = field(
        default=_OPENAI["base_url"],
        metadata=option(
            "the server's API root; repeat it or give a comma list for several servers of one model: requests go "
            "to the one with the fewest in flight, a failing one is taken out for a cool-down while the others carry "
            f"on, and the cache is the same as one server's (default: {_OPENAI['base_url']})",
            action="append",
            type=http_urls,
            metavar="URL",
            section="openai",
        ),
    )
    api_key_env: str = field(
        default=_OPENAI["api_key_env"],
        metadata=option(
            "environment variable holding the API key (the key is never logged or written)", section="openai"
        ),
    )
    concurrency: int = field(
        default=_OPENAI["concurrency"],
        metadata=option("requests in flight per server (1-1024)", type=bounded_int(1, 1024), section="openai"),
    )
    max_retries: int = field(
        default=RetryPolicy.max_retries,
        metadata=option("retries of a failed request (0-100)", type=bounded_int(0, 100), section="openai"),
    )
    timeout: float = field(
        default=RetryPolicy.timeout_s,
        metadata=option(
            "seconds per request attempt, in total: connecting, sending, the headers and the whole body "
            f"(a server trickling its answer is cut off too); each retry gets its own (default "
            f"{RetryPolicy.timeout_s:g})",
            type=seconds,
            section="openai",
        ),
    )
    down_after: float = field(
        default=_OPENAI["down_after"],
        metadata=option(
            "seconds of nothing but failed connections (refused, unknown host, TLS, connect timeout) after which a "
            "server that answered before counts as down; when every server is down the run stops (exit 3), the "
            f"answers so far cached, and a rerun asks only the rows left (default {_OPENAI['down_after']:g}; a "
            "server never reached stops the run after its first three failed connections)",
            type=seconds,
            metavar="SECONDS",
            section="openai",
        ),
    )
    strict_model: bool = field(
        default=_OPENAI["strict_model"],
        metadata=option(
            "refuse an answer whose response names another model than --model (beyond a revision or a provider's "
            "dated alias, e.g. gpt-4o -> gpt-4o-2024-08-06): the row fails (exit 3), is not cached as an answer, "
            "and goes to another server when there are several (default: off, a warning on stderr and in the "
            "results)",
            action="store_true",
            section="openai",
        ),
    )
    backoff_base: float = field(
        default=RetryPolicy.backoff_base_s,
        metadata=option("seconds; doubles per retry, with jitter", type=wait_seconds, section="openai"),
    )
    backoff_max: float = field(
        default=RetryPolicy.backoff_max_s,
        metadata=option("seconds, the longest wait between retries", type=wait_seconds, section="openai"),
    )
    max_tokens_field: str = field(
        default=_OPENAI["max_tokens_field"],
        metadata=option(
            "request field for the token limit (max_completion_tokens for newer OpenAI models)", section="openai"
        ),
    )
    backend_modalities: list[str] | None = field(
        default=None,
        metadata=option(
            "input kinds the served model takes (openai/vllm; default: text only, since the API "
            "cannot tell): e.g. text,image for GPT, text,image,video for a vLLM-served VLM",
            type=comma_list(INPUT_KINDS),
            section="openai",
        ),
    )
    # Not on the command line as such.
    decoding: DecodingConfig | None = None  # the whole decoding (default: from the fields above, per style)
    # The backend's own options (`Backend.Options`, `mis-bench run -M KEY=VALUE`), over the flags that fill them.
    backend_options: dict[str, Any] = field(default_factory=dict)
    dataset_name: str | None = None
    progress: bool = True  # `--no-progress`
    # `time.monotonic()` after which no request is sent (`--run-deadline`, counted from the command's
    # start, so a grid shares it); rows not answered by then fail as "run deadline". None: no deadline.
    deadline: float | None = None


def decoding_for(config: RunConfig, style: str | None = None) -> DecodingConfig:
    """The decoding of `style` (default: the config's): `config.decoding` when given whole, else the style's
    own token budget (unless `max_new_tokens` is set) with the config's sampling fields."""
    if config.decoding is not None:
        return config.decoding
    return DecodingConfig.for_style(
        style or config.prompt_style,
        max_new_tokens=config.max_new_tokens,
        temperature=config.temperature,
        top_p=config.top_p,
        seed=config.seed,
        score_from=config.score_from,
    )


def backend_options(config: RunConfig) -> dict[str, Any]:
    """The keywords the backend is built with (`get_backend`): the options its `Options` fills from a run flag
    (`backend_option(flag=...)`: `--dtype`, `--base-url`, ...) where that flag is set away from its default, then
    `config.backend_options` (`-M`; the same option given both ways with two values is refused), and the run's
    frame rule for a backend that picks video frames itself."""
    from eval_scripts.backends.base import backend_class
    from mis_bench_dataset.toolkit.errors import UsageError

    if config.score_from == SCORE_REGRESSION and config.backend != "transformers":
        raise UsageError(
            f"--score-from regression reads a regression head's output, which the {config.backend} backend cannot load",
            where="--score-from",
            hint="use --backend transformers with the folder `mis-bench train --head regression` wrote",
        )
    cls = backend_class(config.backend)
    by_flag = {_flag(item): item for item in fields(RunConfig) if "help" in item.metadata}
    _refuse_other_backends_flags(config, {spec.flag for spec in option_specs(cls.Options) if spec.flag})
    options: dict[str, Any] = {}
    for spec in option_specs(cls.Options):
        item = by_flag.get(spec.flag or "")
        value = getattr(config, item.name) if item is not None else None
        if item is None or value is None or value == item.default:
            continue
        if isinstance(value, list):  # a flag given several times (--base-url) or a comma list (--backend-modalities)
            value = ",".join(value) if spec.hint is str else tuple(value)
        given = config.backend_options.get(spec.name, value)
        if given != value:
            raise UsageError(
                f"the {config.backend} backend's option {spec.name} is given twice, {value!r} and {given!r}",
                where=f"{spec.flag} and -M {spec.name}=...",
                hint="give it once",
            )
        options[spec.name] = value
    if cls.picks_video_frames:
        options["video_sampling"] = video_sampling(config)
    return {**options, **config.backend_options}


def _refuse_other_backends_flags(config: RunConfig, declared: set[str]) -> None:
    """A backend flag (`--dtype`, `--timeout`, ...: the "local" and "openai" sections of `run --help`) set away
    from its default for a backend that has no such option is a usage error, not silently ignored."""
    from mis_bench_dataset.toolkit.errors import UsageError

    for item in fields(RunConfig):
        flag = _flag(item) if "help" in item.metadata else None
        if item.metadata.get("section") not in BACKEND_SECTIONS or flag in declared:
            continue
        if getattr(config, item.name) not in (None, item.default):
            raise UsageError(
                f"{flag} is not an option of the {config.backend} backend",
                where=flag,
                hint=f"drop it; `mis-bench backends {config.backend}` lists the options it takes (-M KEY=VALUE)",
            )


def _flag(item) -> str:
    return item.metadata["flag"] or "--" + item.name.replace("_", "-")


def video_sampling(config: RunConfig) -> VideoSampling:
    """The raw-video sampling of the config's setting; a bad combination is a usage error naming the flags."""
    from mis_bench_dataset.toolkit.errors import UsageError

    try:
        return config.setting.video
    except ValueError as err:
        raise UsageError(
            str(err), where="--video-sampling / --video-frames / --video-max-pixels / --video-min-pixels"
        ) from err

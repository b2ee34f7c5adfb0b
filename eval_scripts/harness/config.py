"""`RunConfig`: what one zero-shot run is asked for, each option the harness owns written once, on its field.

A field's `metadata` (`mis_bench_dataset.toolkit.options.option`) holds its flag, help and validator, and its
default is the field's own, so the Python API and `mis-bench run` (whose options `eval_scripts.cli.args.add_fields`
generates from these fields) agree. A backend's options (`--dtype`, `--base-url`, `--concurrency`, ...) are not
fields: they are declared once, on the backend's `Options` (`backends.backend_options`), their `run` flags are
generated from those declarations, and they reach the backend as `backend_options`.
Light on purpose: `mis-bench run --help` imports this module, and neither numpy nor pyarrow.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_scripts.answers.prompts import DEFAULT_PROMPT_VERSION, PROMPT_VERSIONS
from eval_scripts.backends.base import DecodingConfig, backend_choices_text, backend_names
from mis_bench_dataset.dimensions import PROMPT_STYLE_TABLE, SCORE_EXPECTED, SCORE_READOUTS, SCORE_REGRESSION
from mis_bench_dataset.protocol import VideoSampling
from mis_bench_dataset.setting import SettingFields
from mis_bench_dataset.setting_inputs import FEATURE_FORMATS
from mis_bench_dataset.splits import SPLITS
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_RESAMPLE, DEFAULT_SEED
from mis_bench_dataset.toolkit.options import (
    bootstrap_option,
    bounded_int,
    existing,
    file_path,
    non_negative_float,
    non_negative_int,
    option,
    positive_int,
    resample_option,
    seed_option,
    unit_interval,
)

if TYPE_CHECKING:
    from mis_bench_dataset.dataset.handle import BuiltDataset

_DECODING = DecodingConfig()
_STYLES = PROMPT_STYLE_TABLE.values()


@dataclass
class RunConfig(SettingFields):
    """One zero-shot setting of one model, as the user asked for it: every option of `mis-bench run` that the harness
    owns is a field here (its flag, default and help written once, on the field), so `run_setting(RunConfig(...))`
    runs with the command's defaults.

    The setting's fields are `Setting`'s, declared once in `mis_bench_dataset.setting` and shared with the
    trainer's `RAFTConfig`: `modality` (text, audio+text, video+text, audio+video+text), `input_source` (auto,
    raw, features), `prompt_style` (direct, cot, paper; `toolkit` reads as direct), `video_sampling`,
    `video_frames`, `video_max_pixels`, `video_min_pixels`; `.setting` is them as a frozen `Setting`. The model
    (`backend`, `model`, `dataset`, `split`, `limit`, few-shot), where outputs go (`out`, `cache_path`), the
    decoding and readout (`max_new_tokens`, `temperature`, `top_p`, `seed`, `score_from`, `samples`), the
    resampling of the scores (`n_bootstrap`, `resample`), and the backend's options (`backend_options`, name ->
    value: what `mis-bench backends B` lists; on the command line the flags generated from them and `-M
    KEY=VALUE`), checked against the backend's `Options` when it is built."""

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
            "built dataset folder (`mis-bench build --out DIR`): the benchmark the run reads its videos from and "
            "scores against, so --dataset, not --references (gold alone) (default: the default synthetic sample "
            "for the default job; a model run needs it)",
            type=existing("folder", as_path=False),
            section="model",
        ),
    )
    split: str = field(
        default="test",
        metadata=option("split to evaluate (default: test, the held-out split)", choices=SPLITS, section="model"),
    )
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
    # Not on the command line as such.
    decoding: DecodingConfig | None = None  # the whole decoding (default: from the fields above, per style)
    # The backend's own options (`Backend.Options`: `--dtype`, `--base-url`, ... and `mis-bench run -M KEY=VALUE`).
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
    """The keywords the backend is built with (`get_backend`): `config.backend_options` (the command line's flags
    and `-M`, already merged by `backends.base.command_line_options`; from Python, any dict of the backend's
    options), and the run's frame rule for a backend that picks video frames itself."""
    from eval_scripts.backends.base import backend_class
    from mis_bench_dataset.toolkit.errors import UsageError

    if config.score_from == SCORE_REGRESSION and config.backend != "transformers":
        raise UsageError(
            f"--score-from regression reads a regression head's output, which the {config.backend} backend cannot load",
            where="--score-from",
            hint="use --backend transformers with the folder `mis-bench train --head regression` wrote",
        )
    frames = {"video_sampling": video_sampling(config)} if backend_class(config.backend).picks_video_frames else {}
    return {**frames, **config.backend_options}


def video_sampling(config: RunConfig) -> VideoSampling:
    """The raw-video sampling of the config's setting; a bad combination is a usage error naming the flags."""
    from mis_bench_dataset.toolkit.errors import UsageError

    try:
        return config.setting.video
    except ValueError as err:
        raise UsageError(
            str(err), where="--video-sampling / --video-frames / --video-max-pixels / --video-min-pixels"
        ) from err

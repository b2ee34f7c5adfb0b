"""What one zero-shot run is, built once: `RunConfig` (asked for) -> `RunContext` (resolved).

Everything later steps need (rows, prompts, cache keys, the setting and dataset records, the
run folder) is resolved here, before any model call, and carried as one object instead of a
dozen parameters.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from eval_scripts.answers.perturbations import (
    DEFAULT_PERTURB_SEED,
    PERTURBATIONS,
    perturb_prompt,
    perturb_rows,
    perturbation_record,
)
from eval_scripts.answers.prompts import (
    DEFAULT_PROMPT_VERSION,
    Prompt,
    check_setting,
    check_version,
    template_hash,
    template_version,
)
from eval_scripts.backends.backend_options import answer_options
from eval_scripts.backends.base import Backend, DecodingConfig
from eval_scripts.formats.results import DECODING_FLAGS, changed_label, option_text
from eval_scripts.harness.config import RunConfig, decoding_for
from eval_scripts.harness.prompting import build_prompts, input_source_for
from eval_scripts.harness.response_cache import cache_key
from mis_bench_dataset.dataset.handle import BuiltDataset, DatasetSource
from mis_bench_dataset.dataset.loading import gold_references
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, PAPER_PROMPT_STYLE, SCORE_TEXT
from mis_bench_dataset.protocol import FewShot, setting_record
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.text_safety import slug

CACHE_NAME = "responses.cache.jsonl"


def setting_label(modality: str, prompt_style: str, few_shot_k: int = 0) -> str:
    shots = f" {few_shot_k}-shot" if few_shot_k else ""
    return f"{modality} {prompt_style}{shots}"


@dataclass
class RunContext:
    """One setting of one run, resolved: what is sent, how it is keyed, where it is written."""

    config: RunConfig
    backend_name: str
    rows: list[dict]
    prompts: list[Prompt]
    keys: list[str]
    input_source: str
    decoding: DecodingConfig
    setting: dict[str, Any]  # the full setting, part of every cache key
    dataset: dict[str, Any]  # the results' dataset block
    run_dir: str  # relative to config.out
    sample_keys: list[list[str]] = field(default_factory=list)  # per sample, the rows' keys (0: `keys`)

    @property
    def samples(self) -> int:
        return max(1, len(self.sample_keys))

    def key(self, index: int, sample: int = 0) -> str:
        return self.sample_keys[sample][index] if self.sample_keys else self.keys[index]

    @property
    def label(self) -> str:
        return setting_label(self.config.modality, self.config.prompt_style, self.config.few_shot_k)

    @property
    def references(self) -> dict[tuple[str, str], float]:
        return gold_references(self.rows)

    @property
    def backend_options(self) -> dict[str, Any]:
        """The backend's answer-changing options set away from their defaults (results.json's system block)."""
        return self.setting.get("backend_options", {})

    def results_setting(self) -> dict[str, Any]:
        """The setting as the results schema records it."""
        return {
            k: v for k, v in self.setting.items() if k in ("modality", "prompt_style", "few_shot_k", "input_source")
        }

    def system_decoding(self) -> dict[str, Any]:
        """Decoding parameters plus what identifies the prompt wording."""
        config = self.config
        info = {
            **self.decoding.as_dict(),
            "template_sha256": template_hash(config.modality, config.prompt_style, config.prompt_version),
            "template_version": template_version(config.prompt_style, config.prompt_version),
        }
        info["score_from"] = self.decoding.score_from  # the readout, recorded for text runs too
        if self.samples > 1:
            info["samples"] = self.samples
        changed = changed_decoding(self.decoding, config.prompt_style)
        if changed:  # what names the run's folder beside the default-options run
            info["changed"] = changed
        if self.input_source == "features":
            info["feature_format"] = config.feature_format
        if config.few_shot_k:
            info["few_shot_seed"] = config.few_shot_seed
        if "video" in self.setting:  # raw video sampled by the backend (frames, pixel budget)
            info["video"] = self.setting["video"]
        if "perturbation" in self.setting:  # a perturbed arm (`mis-bench run --perturb`)
            info["perturbation"] = self.setting["perturbation"]
        return info


def _check_rows(rows: list[dict], where: str) -> None:
    needed = ("video_id", "dimension", "transcript")
    for i, row in enumerate(rows):
        missing = [c for c in needed if c not in row]
        if missing:
            raise DataError(f"missing column(s) {', '.join(missing)}", where=f"{where}, row {i}")
        if row["dimension"] not in DIMENSION_BY_KEY:
            raise DataError(f"unknown dimension {row['dimension']!r}", where=f"{where}, row {i} ({row['video_id']})")
    pairs = Counter((row["video_id"], row["dimension"]) for row in rows)
    dupes = [pair for pair, n in pairs.items() if n > 1]
    if dupes:
        raise DataError(f"duplicate (video_id, dimension) rows, e.g. {dupes[:3]}", where=where)


def _limit_rows(rows: list[dict], limit: int | None) -> list[dict]:
    """The first `limit` videos (sorted ids), all their dimensions."""
    if limit is None:
        return rows
    if limit < 1:
        raise UsageError(f"--limit must be at least 1, got {limit}", where="--limit")
    keep = set(sorted({r["video_id"] for r in rows})[:limit])
    return [r for r in rows if r["video_id"] in keep]


def changed_decoding(decoding: DecodingConfig, prompt_style: str) -> dict[str, Any]:
    """The options of `decoding` that differ from `prompt_style`'s defaults for its readout (`DECODING_FLAGS`)."""
    default = DecodingConfig.for_style(decoding.style or prompt_style, score_from=decoding.score_from)
    return {
        name: getattr(decoding, name) for name in DECODING_FLAGS if getattr(decoding, name) != getattr(default, name)
    }


def run_dir_name(config: RunConfig, input_source: str, *, backend_options: dict[str, Any] | None = None) -> str:
    """`<model>/<setting>`: one folder per model and setting (and readout, sample count, decoding options other
    than the defaults: `text__direct__max-tokens-2`, and the backend's answer-changing options set: `__dtype-float16`)
    under the run's --out, so a rerun with other options writes beside an earlier run, never over it; the default
    options keep the plain name (`text__direct`)."""
    decoding = decoding_for(config)
    score_from = decoding.score_from
    setting = (
        f"{config.modality.replace('+', '-')}__{config.prompt_style}"
        + (f"__{config.few_shot_k}shot" if config.few_shot_k else "")
        + ("" if input_source in ("text", "raw") else f"__{input_source}-{config.feature_format}")
        + (f"__{score_from}" if score_from != SCORE_TEXT else "")
        + (f"__{config.samples}samples" if config.samples > 1 else "")
        + (f"__prompts-v{config.prompt_version}" if _older_prompts(config) else "")
        + "".join(f"__{part}" for part in changed_label(changed_decoding(decoding, config.prompt_style), sep="-"))
        + "".join(f"__{part}" for part in _options_label(backend_options or {}))
    )
    return f"{slug(config.model)}/{slug(setting)}"


def _options_label(options: dict[str, Any]) -> list[str]:
    """`dtype-float16` per answer-changing backend option (`formats.results.option_text`: a value that is not one
    short word by its hash, so the folder name stays short and two values never share it)."""
    return [f"{name}-{option_text(value)}" for name, value in options.items()]


def _older_prompts(config: RunConfig) -> bool:
    """Whether the run's templates are not the default version (its own run folder: never the default's)."""
    return config.prompt_style != PAPER_PROMPT_STYLE and config.prompt_version != DEFAULT_PROMPT_VERSION


def _check_config(config: RunConfig) -> None:
    """Refuse a setting, few-shot count or sample count that cannot run, before reading anything."""
    try:
        check_setting(config.modality, config.prompt_style)
    except ValueError as err:
        raise UsageError(str(err)) from err
    try:
        check_version(config.prompt_version)
    except ValueError as err:
        raise UsageError(str(err), where="--prompt-version") from err
    if config.few_shot_k < 0:
        raise UsageError(f"--few-shot must be 0 or more, got {config.few_shot_k}", where="--few-shot")
    if config.few_shot_k and config.prompt_style == PAPER_PROMPT_STYLE:
        raise UsageError(
            "the `paper` prompt style reproduces the authors' protocol, which has no few-shot examples",
            where="--few-shot",
            hint="drop --few-shot, or use --prompt direct or cot",
        )


def open_datasets(configs: Sequence[RunConfig]) -> list[RunConfig]:
    """The configs with each dataset opened once (`BuiltDataset`): configs naming one folder share one handle.

    The boundary: a config handed to a public entry function may still name a folder (or hold rows); from here
    on `config.dataset` is a `BuiltDataset` (or None), and opening it again is a no-op."""
    handles = BuiltDataset.of_each([config.dataset for config in configs])
    return [replace(config, dataset=handle) for config, handle in zip(configs, handles, strict=True)]


def open_sources(
    configs: Sequence[RunConfig], scoring: DatasetSource | None = None
) -> tuple[list[RunConfig], BuiltDataset | None]:
    """`open_datasets`, and the `scoring` override of their rows opened with them: once for every setting that
    uses it (a grid, a dry run, a batch file), and as the same handle when it names a config's own folder."""
    handles = BuiltDataset.of_each([*(config.dataset for config in configs), scoring])
    opened = [replace(config, dataset=handle) for config, handle in zip(configs, handles[:-1], strict=True)]
    return opened, handles[-1]


def _few_shot_rows(config: RunConfig, dataset: BuiltDataset | None, train: BuiltDataset | None) -> list[dict] | None:
    """The train split's rows few-shot examples come from (None without --few-shot)."""
    if not config.few_shot_k:
        return None
    if config.split == "train":
        raise UsageError(
            "few-shot examples come from the train split",
            where="--few-shot",
            hint="evaluate the validation or test split instead",
        )
    train_source = train if train is not None else dataset
    if train_source is None:
        raise UsageError("few-shot needs the train split", where="--few-shot", hint="pass --dataset DIR")
    return train_source.rows("train")


def _decoding(config: RunConfig) -> DecodingConfig:
    decoding = decoding_for(config)
    if decoding.style != config.prompt_style:  # where an expected-score readout finds the score
        decoding = replace(decoding, style=config.prompt_style)
    if config.samples < 1:
        raise UsageError(f"--samples must be at least 1, got {config.samples}", where="--samples")
    return decoding


def _setting(config: RunConfig, input_source: str, prompts: list[Prompt], backend: Backend) -> dict[str, Any]:
    """The full setting, part of every cache key (`setting_record`, the one writer of a run's setting block), with
    the backend's answer-changing options when any is set (none set: the keys of runs made before options)."""
    sampling = getattr(backend, "video_sampling", None)
    answers = answer_options(getattr(backend, "options", None))
    return setting_record(
        config.modality,
        config.prompt_style,
        input_source,
        few_shot=FewShot(config.few_shot_k, config.few_shot_seed),
        feature_format=config.feature_format,
        video=sampling if any(p.video_path for p in prompts) else None,
        **({"backend_options": answers} if answers else {}),
    )


def _sample_keys(
    config: RunConfig, backend: Backend, setting: dict, prompts: list[Prompt], decoding: DecodingConfig
) -> list[list[str]]:
    """Per sample, each row's cache key."""
    return [
        [
            cache_key(
                backend=backend.name,
                model=config.model,
                setting=setting,
                prompt_hash=p.prompt_hash,
                video_id=p.video_id,
                dimension=p.dimension,
                decoding=decoding.for_sample(sample).as_dict(),
            )
            for p in prompts
        ]
        for sample in range(config.samples)
    ]


def prepare_run(
    config: RunConfig,
    backend: Backend,
    *,
    scoring: DatasetSource | None = None,
    train: DatasetSource | None = None,
    perturbation: str | None = None,
    perturb_seed: int = DEFAULT_PERTURB_SEED,
) -> RunContext:
    """Resolve one setting: rows, input source, prompts and keys; refuses what cannot run before any call.

    `config.dataset` is a `BuiltDataset` (what is not yet is opened here, once); `scoring` / `train` override
    its rows (its scoring rows, its train split's few-shot examples). `perturbation` (`answers.perturbations`)
    changes the evaluated transcripts or the rendered prompts (few-shot examples are left as they are); it is
    recorded in the setting, so it is part of every cache key, and the run gets its own folder.
    """
    _check_config(config)
    (config,) = open_datasets([config])
    dataset = config.dataset
    source = BuiltDataset.of(scoring, where="scoring") if scoring is not None else dataset
    train = BuiltDataset.of(train, where="train")
    if source is None:
        raise UsageError("no dataset", hint="pass --dataset DIR (a `mis-bench build` output)")
    where = f"{source.path if source.is_folder else 'dataset'} ({config.split})"
    rows = _limit_rows(source.rows(config.split), config.limit)
    if not rows:
        raise DataError(f"split {config.split!r} has no rows", where=where)
    _check_rows(rows, where)
    record = None
    if perturbation is not None and PERTURBATIONS[perturbation].kind == "transcript":
        rows, record = perturb_rows(perturbation, rows, seed=perturb_seed)
    elif perturbation is not None:
        record = perturbation_record(perturbation, perturb_seed)
    train_rows = _few_shot_rows(config, dataset, train)
    input_source = input_source_for(config, rows, backend)
    decoding = _decoding(config)
    try:
        prompts = build_prompts(rows, config, input_source=input_source, train_rows=train_rows)
    except ValueError as err:  # an empty transcript, too few labelled few-shot examples
        raise DataError(str(err), where=where) from err
    if perturbation is not None and PERTURBATIONS[perturbation].kind == "prompt":
        prompts = [perturb_prompt(perturbation, prompt) for prompt in prompts]
    setting = _setting(config, input_source, prompts, backend)
    if record is not None:
        setting["perturbation"] = record
    sample_keys = _sample_keys(config, backend, setting, prompts, decoding)
    return RunContext(
        config=config,
        backend_name=backend.name,
        rows=rows,
        prompts=prompts,
        keys=sample_keys[0],
        input_source=input_source,
        decoding=decoding,
        setting=setting,
        dataset=source.record(config.split, config.dataset_name),
        run_dir=run_dir_name(config, input_source, backend_options=setting.get("backend_options"))
        + (f"__perturb-{perturbation}" if perturbation else ""),
        sample_keys=sample_keys,
    )

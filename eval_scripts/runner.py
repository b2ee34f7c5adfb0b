"""One zero-shot run (setting x prompt style) end to end, resumable; and grids of runs.

rows (`scoring` config) -> prompts -> backend, through the append-only response
cache -> parser g -> predictions + raw responses + results JSON (with the metric's
scores when the split has labels).

Inputs per setting: `text` uses the transcript only. The audio/video settings use
raw media when the rows carry `audio_path` / `video_path` (users with the full
data), otherwise feature-derived descriptions from the `features` config
(`eval_scripts.feature_inputs`), recorded as `input_source = "features"`. A setting
the backend cannot take is refused (`UnsupportedSetting`) before any model call.
"""

from __future__ import annotations

import hashlib
import json
import logging
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mis_bench_dataset.build import is_synthetic_build
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS
from eval_scripts.backends.base import Backend, DecodingConfig, UnsupportedSetting, get_backend
from eval_scripts.cache import STATUS_FAILED, STATUS_OK, ResponseCache, cache_key
from eval_scripts.parse import parse_score
from eval_scripts.submission import slug
from eval_scripts.prompts import (
    MODALITIES,
    PROMPT_STYLES,
    SETTING_MEDIA,
    Prompt,
    check_setting,
    render_prompt,
    select_few_shot,
    template_hash,
)

logger = logging.getLogger(__name__)

INPUT_SOURCES: tuple[str, ...] = ("auto", "raw", "features")


class HarnessError(RuntimeError):
    """A run cannot start: bad dataset, missing inputs, leaking few-shot source."""


@dataclass
class RunConfig:
    backend: str
    model: str
    dataset: str | Path | None = None
    split: str = "test"
    modality: str = "text"
    prompt_style: str = "direct"
    out: str | Path = "runs"
    limit: int | None = None
    few_shot_k: int = 0
    few_shot_seed: int = 0
    input_source: str = "auto"
    feature_format: str = "text"
    decoding: DecodingConfig | None = None
    backend_options: dict[str, Any] = field(default_factory=dict)
    n_bootstrap: int = 1000
    cache_path: str | Path | None = None
    dataset_name: str | None = None
    progress: bool = True


@dataclass
class RunResult:
    config: RunConfig
    input_source: str
    n_rows: int
    n_cached: int
    n_called: int
    n_failed: int
    n_parsed: int
    scores: dict | None
    parse_rates: dict[str, float]
    run_dir: Path
    predictions_path: Path
    raw_responses_path: Path
    results_path: Path
    elapsed_s: float

    @property
    def label(self) -> str:
        return setting_label(self.config)


def setting_label(config: RunConfig) -> str:
    shots = f" {config.few_shot_k}-shot" if config.few_shot_k else ""
    return f"{config.modality} {config.prompt_style}{shots}"


# ----------------------------------------------------------------------------- data


def load_rows(dataset: Any, config_name: str, split: str) -> list[dict]:
    """Rows of a built dataset folder (no custom code) or of an in-memory Dataset.

    A folder is loaded with a throw-away cache: `datasets` keys the cache of a local
    folder by its name and card, not its content, so two builds in same-named folders
    would otherwise share rows.
    """
    if isinstance(dataset, (str, Path)):
        with load_folder(dataset, config_name, split) as loaded:
            return loaded.to_list()
    return dataset.to_list() if hasattr(dataset, "to_list") else [dict(r) for r in dataset]


@contextmanager
def load_folder(folder: str | Path, config_name: str, split: str):
    from datasets import load_dataset

    path = Path(folder)
    if not path.is_dir():
        raise HarnessError(f"--dataset {path}: not a folder (build one with `mis-bench build`)")
    with tempfile.TemporaryDirectory(prefix="mis_bench_run_") as cache_dir:
        try:
            loaded = load_dataset(str(path), config_name, split=split, cache_dir=cache_dir)
        except (ValueError, FileNotFoundError) as err:
            raise HarnessError(f"{path}: cannot load config {config_name!r}, split {split!r}: {err}") from err
        try:
            yield loaded
        finally:
            del loaded


def dataset_fingerprint(dataset: Any, split: str, configs: Sequence[str] = ("scoring",)) -> str:
    """sha256 over the split's Parquet files (content, not paths), or the Dataset's own fingerprint."""
    if isinstance(dataset, (str, Path)):
        digest = hashlib.sha256()
        files = sorted(f for c in configs for f in (Path(dataset) / c).glob(f"{split}-*.parquet"))
        if not files:
            raise HarnessError(f"{dataset}: no {split}-*.parquet under {', '.join(configs)}")
        for f in files:
            digest.update(f"{f.parent.name}/{f.name}\0".encode())
            with open(f, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        return "sha256:" + digest.hexdigest()
    return "datasets:" + str(getattr(dataset, "_fingerprint", "in-memory"))




def _check_rows(rows: list[dict], where: str) -> None:
    needed = ("video_id", "dimension", "transcript")
    for i, row in enumerate(rows):
        missing = [c for c in needed if c not in row]
        if missing:
            raise HarnessError(f"{where}, row {i}: missing column(s) {', '.join(missing)}")
        if row["dimension"] not in DIMENSION_BY_KEY:
            raise HarnessError(f"{where}, row {i} ({row['video_id']}): unknown dimension {row['dimension']!r}")


def _limit_rows(rows: list[dict], limit: int | None) -> list[dict]:
    """The first `limit` videos (sorted ids), all their dimensions."""
    if limit is None:
        return rows
    keep = set(sorted({r["video_id"] for r in rows})[:limit])
    return [r for r in rows if r["video_id"] in keep]


# ----------------------------------------------------------------------------- inputs


def resolve_input_source(config: RunConfig, rows: list[dict], backend: Backend) -> str:
    """text / raw / features for this setting, or UnsupportedSetting with the reason."""
    needed = SETTING_MEDIA[config.modality]
    if not needed:
        return "text"
    path_columns = {"audio": "audio_path", "video": "video_path"}
    has_raw = all(row.get(path_columns[kind]) for row in rows for kind in needed)
    source = config.input_source
    if source == "auto":
        source = "raw" if has_raw else "features"
    if source == "raw":
        if not has_raw:
            missing = sorted({path_columns[k] for k in needed for r in rows if not r.get(path_columns[k])})
            raise UnsupportedSetting(
                f"{config.modality}: raw media requested but rows lack {', '.join(missing)} "
                "(the public release has no raw media; use --input-source features)"
            )
        backend.check_inputs(needed, f"setting {config.modality} with raw media")
        return "raw"
    if source != "features":
        raise ValueError(f"unknown input source {source!r}; expected one of {INPUT_SOURCES}")
    if config.dataset is None or not isinstance(config.dataset, (str, Path)):
        raise UnsupportedSetting(
            f"{config.modality}: no raw media in the rows and no dataset folder with a `features` config "
            "to derive audio/video descriptions from"
        )
    from eval_scripts.feature_inputs import FEATURE_FORMATS

    if config.feature_format not in FEATURE_FORMATS:
        raise ValueError(f"unknown feature format {config.feature_format!r}; expected one of {FEATURE_FORMATS}")
    if "plot" in config.feature_format:
        backend.check_inputs({"image"}, f"setting {config.modality} with feature plots")
    return "features"


def _feature_blocks(config: RunConfig, video_ids: set[str]) -> dict[str, tuple[str, tuple[bytes, ...]]]:
    """video_id -> (text block, images), computed once per video, one video in memory at a time."""
    from eval_scripts.feature_inputs import FEATURE_COLUMNS, feature_media_block

    from mis_bench_dataset.arrays import FeatureArrays
    from mis_bench_dataset.errors import MisBenchError

    columns = ["video_id", "transcript", *(c for kind in SETTING_MEDIA[config.modality] for c in FEATURE_COLUMNS[kind])]
    try:
        features = FeatureArrays.open(config.dataset, config.split, columns)
    except MisBenchError as err:
        raise UnsupportedSetting(f"{config.modality}: no usable `features` config: {err}") from err
    blocks = {
        video_id: feature_media_block(features.row(video_id, columns), config.modality, config.feature_format)
        for video_id in sorted(video_ids & set(features.video_ids))
    }
    missing = video_ids - blocks.keys()
    if missing:
        raise HarnessError(
            f"{config.dataset}: {len(missing)} video(s) have no row in the `features` config, "
            f"e.g. {sorted(missing)[:3]}"
        )
    return blocks


def build_prompts(config: RunConfig, rows: list[dict], input_source: str, train_rows: list[dict] | None) -> list[Prompt]:
    media = SETTING_MEDIA[config.modality]
    blocks = _feature_blocks(config, {r["video_id"] for r in rows}) if input_source == "features" else {}
    evaluated = {r["video_id"] for r in rows}
    shots = {
        d: select_few_shot(train_rows or [], d, config.few_shot_k, exclude_videos=evaluated, seed=config.few_shot_seed)
        for d in DIMENSION_KEYS
    } if config.few_shot_k else {}
    prompts = []
    for row in rows:
        block, images = blocks.get(row["video_id"], ("", ()))
        if input_source == "raw":
            block = f"The {'video' if 'video' in media else 'audio'} of the response is attached."
        text = render_prompt(
            row, config.modality, config.prompt_style, media_block=block, few_shot=shots.get(row["dimension"], ())
        )
        prompts.append(
            Prompt(
                video_id=row["video_id"],
                dimension=row["dimension"],
                text=text,
                images=images,
                audio_path=row.get("audio_path") if input_source == "raw" and "audio" in media else None,
                video_path=row.get("video_path") if input_source == "raw" and "video" in media else None,
                media=frozenset(media),
            )
        )
    return prompts


# ----------------------------------------------------------------------------- run


def make_backend(config: RunConfig) -> Backend:
    return get_backend(config.backend, config.model, **config.backend_options)


def run_setting(
    config: RunConfig,
    *,
    backend: Backend | None = None,
    scoring: Any = None,
    train: Any = None,
) -> RunResult:
    """Run (or resume) one setting; `scoring` / `train` override the dataset folder's rows."""
    check_setting(config.modality, config.prompt_style)
    started = time.monotonic()
    source = scoring if scoring is not None else config.dataset
    if source is None:
        raise HarnessError("no dataset: pass --dataset DIR (a `mis-bench build` output)")
    rows = _limit_rows(load_rows(source, "scoring", config.split), config.limit)
    _check_rows(rows, f"{source if isinstance(source, (str, Path)) else 'dataset'} ({config.split})")
    if not rows:
        raise HarnessError(f"split {config.split!r} has no rows")
    train_rows = None
    if config.few_shot_k:
        if config.split == "train":
            raise HarnessError("few-shot examples come from the train split; evaluate validation or test instead")
        train_source = train if train is not None else config.dataset
        if train_source is None:
            raise HarnessError("few-shot needs the train split: pass --dataset DIR")
        train_rows = load_rows(train_source, "scoring", "train")
    own_backend = backend is None
    backend = backend or make_backend(config)
    try:
        input_source = resolve_input_source(config, rows, backend)
        decoding = config.decoding or DecodingConfig.for_style(config.prompt_style)
        prompts = build_prompts(config, rows, input_source, train_rows)
        result = _execute(config, backend, rows, prompts, input_source, decoding, source, started)
    finally:
        if own_backend:
            backend.close()
    return result


def _setting_dict(config: RunConfig, input_source: str) -> dict:
    setting = {
        "modality": config.modality,
        "prompt_style": config.prompt_style,
        "few_shot_k": config.few_shot_k,
        "input_source": input_source,
    }
    if input_source == "features":
        setting["feature_format"] = config.feature_format
    if config.few_shot_k:
        setting["few_shot_seed"] = config.few_shot_seed
    return setting


def _execute(config, backend, rows, prompts, input_source, decoding, source, started) -> RunResult:
    from tqdm.auto import tqdm

    out = Path(config.out)
    run_dir = out / slug(config.model) / slug(
        f"{config.modality.replace('+', '-')}__{config.prompt_style}"
        + (f"__{config.few_shot_k}shot" if config.few_shot_k else "")
        + ("" if input_source in ("text", "raw") else f"__{input_source}-{config.feature_format}")
    )
    cache_path = Path(config.cache_path) if config.cache_path else out / "responses.cache.jsonl"
    setting = _setting_dict(config, input_source)
    keys = [
        cache_key(
            backend=backend.name, model=config.model, setting=setting, prompt_hash=p.prompt_hash,
            video_id=p.video_id, dimension=p.dimension, decoding=decoding.as_dict(),
        )
        for p in prompts
    ]
    if len(set(keys)) != len(keys):
        dupes = [k for k, n in Counter(zip((p.video_id for p in prompts), (p.dimension for p in prompts))).items() if n > 1]
        raise HarnessError(f"duplicate (video_id, dimension) rows in the split, e.g. {dupes[:3]}")
    failures: dict[str, dict] = {}
    with ResponseCache(cache_path) as cache:
        pending = [i for i, key in enumerate(keys) if key not in cache]
        n_cached = len(rows) - len(pending)
        logger.info(
            "%s | %s | %s: %d rows, %d cached, %d to call", backend.name, config.model, setting_label(config),
            len(rows), n_cached, len(pending),
        )
        with tqdm(
            total=len(rows), initial=n_cached, unit="row", desc=setting_label(config),
            disable=not config.progress, dynamic_ncols=True,
        ) as bar:
            for completion in backend.complete([prompts[i] for i in pending], decoding):
                i = pending[completion.index]
                prompt = prompts[i]
                record = {
                    "key": keys[i],
                    "status": STATUS_OK if completion.ok else STATUS_FAILED,
                    "backend": backend.name,
                    "model": config.model,
                    "setting": setting,
                    "prompt_hash": prompt.prompt_hash,
                    "video_id": prompt.video_id,
                    "dimension": prompt.dimension,
                    "decoding": decoding.as_dict(),
                    "response": completion.text if completion.ok else None,
                    "error": completion.error,
                    "attempts": completion.attempts,
                    "latency_s": round(completion.latency_s, 4),
                    "created_at": time.time(),
                }
                cache.append(record)
                if not completion.ok:
                    failures[keys[i]] = record
                bar.update(1)
        answers = {key: cache.get(key) for key in keys}
    return _write_outputs(
        config, backend, rows, prompts, keys, answers, failures, input_source, decoding, source,
        run_dir, n_cached, len(pending), started,
    )


def _write_outputs(config, backend, rows, prompts, keys, answers, failures, input_source, decoding, source,
                   run_dir, n_cached, n_called, started) -> RunResult:
    from mis_icc_metric.predictions_io import write_predictions

    predictions, raw_records = [], []
    parsed_by_dim: dict[str, list[bool]] = defaultdict(list)
    for row, prompt, key in zip(rows, prompts, keys):
        answer = answers.get(key)
        text = answer["response"] if answer else None
        value = parse_score(text, config.prompt_style) if text is not None else None
        parsed_by_dim[row["dimension"]].append(value is not None)
        predictions.append({"video_id": row["video_id"], "dimension": row["dimension"], "prediction": value,
                            "raw_response": text})
        failure = failures.get(key)
        raw_records.append({
            "video_id": row["video_id"], "dimension": row["dimension"], "prompt_hash": prompt.prompt_hash,
            "status": STATUS_OK if answer else STATUS_FAILED, "response": text, "prediction": value,
            "error": None if answer else (failure or {}).get("error", "not answered"),
        })
    run_dir.mkdir(parents=True, exist_ok=True)
    predictions_path = run_dir / "predictions.jsonl"
    write_predictions(predictions_path, predictions)
    raw_path = run_dir / "raw_responses.jsonl"
    with open(raw_path, "w", encoding="utf-8") as handle:
        for record in raw_records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
    references = {(r["video_id"], r["dimension"]): _gold(r["score"]) for r in rows if r.get("score") is not None}
    scores = None
    if references:
        from mis_icc_metric.scoring import score_predictions

        scored = {(p["video_id"], p["dimension"]): p["prediction"] for p in predictions
                  if (p["video_id"], p["dimension"]) in references}
        scores = score_predictions(scored, references, n_bootstrap=config.n_bootstrap, seed=0)
    parse_rates = {d: sum(v) / len(v) for d, v in parsed_by_dim.items()}
    dataset_info = {
        "name": config.dataset_name or (Path(source).name if isinstance(source, (str, Path)) else "in-memory"),
        "fingerprint": dataset_fingerprint(
            source, config.split, ("scoring", "features") if input_source == "features" else ("scoring",)
        ),
        "split": config.split,
    }
    synthetic = is_synthetic_build(source)
    if synthetic is not None:
        dataset_info["synthetic"] = synthetic
    from eval_scripts.results import package_versions, write_results

    decoding_info = {**decoding.as_dict(), "template_sha256": template_hash(config.modality, config.prompt_style)}
    if input_source == "features":
        decoding_info["feature_format"] = config.feature_format
    if config.few_shot_k:
        decoding_info["few_shot_seed"] = config.few_shot_seed
    results_path = run_dir / "results.json"
    write_results(
        results_path,
        system={"model": config.model, "backend": backend.name, "decoding": decoding_info,
                "package_versions": package_versions()},
        setting={k: v for k, v in _setting_dict(config, input_source).items()
                 if k in ("modality", "prompt_style", "few_shot_k", "input_source")},
        dataset=dataset_info,
        predictions=predictions,
        scores=scores,
        parse_rates=parse_rates,
    )
    n_failed = sum(1 for r in raw_records if r["status"] == STATUS_FAILED)
    return RunResult(
        config=config, input_source=input_source, n_rows=len(rows), n_cached=n_cached, n_called=n_called,
        n_failed=n_failed, n_parsed=sum(p["prediction"] is not None for p in predictions), scores=scores,
        parse_rates=parse_rates, run_dir=run_dir, predictions_path=predictions_path, raw_responses_path=raw_path,
        results_path=results_path, elapsed_s=time.monotonic() - started,
    )


def _gold(value: Any) -> float:
    """Gold scores are stored as float32: widen via the shortest repr (3.7, not 3.700000047)."""
    import numpy as np

    from mis_icc_metric.scoring import coerce_score

    return coerce_score(np.float32(value), what="gold score")


# ----------------------------------------------------------------------------- grid


@dataclass
class GridEntry:
    label: str
    result: RunResult | None = None
    refused: str | None = None


def run_grid(
    config: RunConfig,
    modalities: Iterable[str] = MODALITIES,
    styles: Iterable[str] = PROMPT_STYLES,
    *,
    backend: Backend | None = None,
    scoring: Any = None,
) -> list[GridEntry]:
    """Every (modality, style); settings the backend cannot take are listed as refused, with why."""
    from dataclasses import replace

    own_backend = backend is None
    backend = backend or make_backend(config)
    entries = []
    try:
        for modality in modalities:
            for style in styles:
                sub = replace(config, modality=modality, prompt_style=style)
                try:
                    entries.append(GridEntry(setting_label(sub), run_setting(sub, backend=backend, scoring=scoring)))
                except UnsupportedSetting as err:
                    logger.warning("refused %s: %s", setting_label(sub), err)
                    entries.append(GridEntry(setting_label(sub), refused=str(err)))
    finally:
        if own_backend:
            backend.close()
    return entries


def format_table(entries: Sequence[GridEntry]) -> str:
    """A Table-3-like text table: ICC (%) per dimension, mean, overall, parse rate."""
    from mis_bench_dataset.dimensions import DIMENSIONS

    header = ["setting", *(d.abbreviation for d in DIMENSIONS), "mean", "overall", "parsed"]
    lines = [header]
    for entry in entries:
        if entry.result is None:
            lines.append([entry.label, "refused: " + (entry.refused or "")[:90]])
            continue
        result = entry.result
        scores = result.scores or {}
        dims = scores.get("dimensions", {})

        def pct(value) -> str:
            return "-" if value is None or value != value else f"{100 * value:.1f}"

        lines.append([
            f"{entry.label} [{result.input_source}]",
            *(pct(dims.get(d.key, {}).get("icc")) for d in DIMENSIONS),
            pct(scores.get("mean_icc")),
            pct(scores.get("overall", {}).get("icc")),
            f"{100 * result.n_parsed / max(result.n_rows, 1):.0f}%",
        ])
    widths = [max(len(row[i]) for row in lines if i < len(row) and len(row) == len(header)) for i in range(len(header))]
    out = []
    for row in lines:
        if len(row) != len(header):
            out.append(row[0].ljust(widths[0]) + "  " + row[1])
        else:
            out.append("  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))))
    return "\n".join(out)

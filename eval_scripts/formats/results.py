"""The results JSON of one run (= a leaderboard submission, schema 1.1).

`write_results` assembles exactly the contract's fields and validates them with the
leaderboard's validator (`eval_scripts.formats.submission`) before writing, so a run never
leaves behind a file `mis-bench submit` would reject. `validate_results` is
re-exported from there.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

from eval_scripts.answers.answer_status import USAGE_FIELDS
from eval_scripts.formats.submission import SCHEMA_VERSION
from mis_bench_dataset.toolkit.atomic import AtomicFiles, write_atomic
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_bench_dataset.toolkit.text_safety import slug

_VERSIONED_PACKAGES = ("mis-bench", "torch", "transformers", "datasets", "numpy", "vllm")

# The CPU baselines' model ids (eval_scripts.baselines; their results say backend "baseline").
BASELINE_MODEL_IDS = {"mean": "baseline/train-mean", "features": "baseline/features-ridge"}
BASELINE_BACKEND = "baseline"
RESULTS_NAME = "results.json"  # a run's results file in its folder (beside `predictions.jsonl`): the one name


# The decoding options that change a run's answers (or its CIs: the seed), with the `mis-bench run` flag that sets
# each: a value other than the prompt style's default names the run's folder (`text__direct__max-tokens-2`) and is
# recorded in results.json as `system.decoding.changed`.
DECODING_FLAGS = {"max_new_tokens": "max-tokens", "temperature": "temperature", "top_p": "top-p", "seed": "seed"}


def changed_label(changed: Mapping[str, Any], *, sep: str = " ") -> list[str]:
    """`max-tokens 2`, `temperature 0.7`: each changed option as its flag and value (`sep` between)."""
    return [f"{DECODING_FLAGS.get(name, name)}{sep}{value:g}" for name, value in changed.items()]


def options_label(system: Mapping[str, Any]) -> list[str]:
    """What tells a model run from another of the same model and setting, from its recorded decoding: a
    cross-validation's folds and fold seed, the expected-score readout, the number of samples, the decoding options
    changed from the defaults, and the backend's answer-changing options set (`dtype float16`)."""
    decoding = system.get("decoding") or {}
    parts = []
    if isinstance(decoding.get("cv_folds"), int):  # a `run --cv-folds` run: every video predicted out of fold
        parts.append(f"{decoding['cv_folds']}-fold CV, fold seed {decoding.get('fold_seed')}")
    if decoding.get("score_from") not in (None, "text"):
        parts.append(f"{decoding['score_from']} readout")
    if isinstance(decoding.get("samples"), int) and decoding["samples"] > 1:
        parts.append(f"{decoding['samples']} samples")
    changed = decoding.get("changed")
    if isinstance(changed, Mapping):
        parts += changed_label({k: v for k, v in changed.items() if isinstance(v, (int, float))})
    options = system.get("backend_options")
    if isinstance(options, Mapping):
        parts += [f"{name} {option_text(value)}" for name, value in options.items()]
    return parts


def option_text(value: Any) -> str:
    """An answer-changing backend option's value as labels and run folders show it: a short word as it is, anything
    else (a JSON object, a list, a long text) by 8 hex digits of its JSON's SHA-256, so two values never share one."""
    text = str(value)
    if not isinstance(value, (str, int, float, bool)) or len(text) > 24 or slug(text) != text:
        return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:8]
    return text


def run_repr(kind: str, label: str, scores: Mapping[str, Any] | None, results_path: str | Path) -> str:
    """One line for a run object (a model run's `RunResult`, a baseline's `BaselineRun`): what ran, its overall and
    mean ICC, where its results are; the predictions and configuration stay in the object and the files."""
    scores = scores or {}
    overall = (scores.get("overall") or {}).get("icc")
    mean = scores.get("mean_icc")

    def shown(value: Any) -> str:
        return "n/a" if value is None else f"{float(value):.3f}"

    return f"{kind}({label!r}, overall_icc={shown(overall)}, mean_icc={shown(mean)}, results={str(results_path)!r})"


def is_floor_baseline(system: Mapping[str, Any]) -> bool:
    """Whether a results file's `system` is the `mean` floor (ICC 0 by construction): reports and the
    leaderboard show it beside the systems as a reference line, never ranked among them."""
    return system.get("backend") == BASELINE_BACKEND and system.get("model") == BASELINE_MODEL_IDS["mean"]


def package_versions(extra: Iterable[str] = ()) -> dict[str, str]:
    """Installed versions of the packages a result depends on (missing ones omitted)."""
    versions = {}
    for name in (*_VERSIONED_PACKAGES, *extra):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return versions


def usage_totals(usages: Iterable[Mapping[str, Any] | None]) -> dict[str, int]:
    """Token totals of responses' `usage` blocks (None: a response without one, not counted).

    `requests` counts the responses summed; a usage without `total_tokens` adds prompt + completion.
    """
    totals = dict.fromkeys(USAGE_FIELDS, 0)
    totals["requests"] = 0
    for usage in usages:
        if not usage:
            continue
        prompt, completion = int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0))
        totals["prompt_tokens"] += prompt
        totals["completion_tokens"] += completion
        totals["total_tokens"] += int(usage.get("total_tokens", prompt + completion))
        totals["requests"] += 1
    return totals


@dataclass(frozen=True)
class RunRecord:
    """What a run's results file records beside its scores: the system and the setting that answered, the dataset
    (split) asked, the predictions and their parse rates; `usage` (model runs: token totals of the responses) and
    `outcomes` (model runs: answered/unparsed/truncated/failed counts) are left out when None."""

    system: Mapping[str, Any]
    setting: Mapping[str, Any]
    dataset: Mapping[str, Any]
    predictions: Sequence[Mapping[str, Any]]
    parse_rates: Mapping[str, float]
    usage: Mapping[str, int] | None = None
    outcomes: Mapping[str, Any] | None = None


def build_results(
    record: RunRecord, *, scores: Mapping[str, Any] | None, created_at: str | None = None
) -> dict[str, Any]:
    """The results object of `record` with its `scores` (None: an unlabelled split)."""
    system, setting, dataset, predictions = record.system, record.setting, record.dataset, record.predictions
    parse_rates, usage, outcomes = record.parse_rates, record.usage, record.outcomes
    results = {
        "schema_version": SCHEMA_VERSION,
        "system": dict(system),
        "setting": dict(setting),
        "dataset": dict(dataset),
        "predictions": [dict(p) for p in predictions],
        "scores": None if scores is None else json_safe(scores),
        "parse_rates": dict(parse_rates),
        "created_at": created_at or _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
    }
    if usage is not None:
        results["usage"] = dict(usage)
    if outcomes is not None:
        results["outcomes"] = dict(outcomes)
    return results


def write_results(
    path: str | Path, record: RunRecord, *, scores: Mapping[str, Any] | None, files: AtomicFiles | None = None
) -> dict[str, Any]:
    """Build (see `build_results`), validate and atomically write the results JSON (staged in `files` if given).

    Results that fail the schema are a bug of the writer, not of a file: nothing is written, and the
    error says so instead of pointing at a file that does not exist.
    """
    from eval_scripts.formats.submission import SubmissionError
    from eval_scripts.formats.submission import validate_results as _validate

    obj = build_results(record, scores=scores)
    path = Path(path)
    try:
        _validate(obj, source=str(path))
    except SubmissionError as err:
        failure = SubmissionError(f"{path} (not written: the results built for it fail the schema)", err.reasons)
        failure.hint = "nothing was written; this is a bug of mis-bench: rerun with --debug and report it"
        raise failure from err
    text = json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    if files is not None:
        files.write(path, text)
    else:
        write_atomic(path, text)
    return obj


def validate_results(obj: Any, **kwargs: Any) -> Any:
    """The leaderboard's validator (eval_scripts.formats.submission.validate_results)."""
    from eval_scripts.formats.submission import validate_results as _validate

    return _validate(obj, **kwargs)

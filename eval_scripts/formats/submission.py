"""Results JSON / leaderboard submission: load, validate, package, push.

A submission is the results JSON that `mis-bench run` writes (schema
`schemas/submission.schema.json`, version 1.1, the only version a release wrote). Validation has two layers:
the JSON Schema (shape and types) and the semantic checks a schema cannot
express (NaN, duplicate keys, known video ids, full coverage of the split).
Every problem is reported, not only the first, so a submitter fixes all of
them in one go; a bad submission never raises anything but SubmissionError.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from mis_bench_dataset.dimensions import DIMENSION_KEYS, SCORE_MAX, SCORE_MIN
from mis_bench_dataset.toolkit.atomic import write_atomic
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.jsonio import DEFAULT_MAX_BYTES, JSONInputError, loads_strict, read_json
from mis_bench_dataset.toolkit.ownership import OutputFolder
from mis_bench_dataset.toolkit.text_safety import clip, safe_text, slug
from mis_bench_dataset.video_ids import normalize_video_id

logger = logging.getLogger(__name__)

SCHEMA_VERSION = "1.1"  # what this toolkit writes and reads (with the optional `usage` and `outcomes` blocks)
READABLE_SCHEMA_VERSIONS: tuple[str, ...] = (SCHEMA_VERSION,)
SCHEMA_PATH = Path(__file__).with_name("schemas") / "submission.schema.json"
# 996 videos x 8 dimensions with chain-of-thought raw responses of a few kB each
# stay well below this; anything larger is a mistake or an attack on the scorer.
# Reasons listed per kind of problem before the rest are summarised.
_MAX_REASONS_PER_KIND = 10
# A reason repeats at most this much of anything (a schema message quotes the submitted value).
MAX_REASON_CHARS = 300


class SubmissionError(DataError):
    """A submission that cannot be accepted; `reasons` lists every problem found (`listing()`)."""

    def __init__(self, source: str, reasons: list[str]):
        self.source = source
        # Valid Unicode and clipped: a reason reaches pages, CSV and JSON, and never repeats a long submitted value.
        self.reasons = [safe_text(reason, MAX_REASON_CHARS) for reason in reasons]
        self.problems = self.reasons
        first = self.reasons[0] if self.reasons else "no reason given"
        more = f" (and {len(self.reasons) - 1} more problem(s))" if len(self.reasons) > 1 else ""
        super().__init__(
            f"submission rejected: {first}{more}",
            where=source,
            hint="fix the file (`mis-bench submit` lists every problem)",
        )

    def listing(self) -> str:
        return "\n".join(f"  - {reason}" for reason in self.reasons)


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The shipped JSON Schema (cached; treat as read-only)."""
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def _validator():
    """The schema's validator, built once (immutable: jsonschema's `evolve` makes the variants it descends into)."""
    import jsonschema

    cls = jsonschema.validators.validator_for(load_schema())
    return cls(load_schema(), format_checker=cls.FORMAT_CHECKER)


# ----------------------------------------------------------------------------- loading


def parse_submission_bytes(data: bytes, source: str = "<submission>", *, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Strict JSON (`mis_bench_dataset.toolkit.jsonio`): size- and depth-limited, UTF-8, no NaN, no duplicate keys."""
    try:
        return loads_strict(data, source, max_bytes=max_bytes)
    except JSONInputError as err:
        raise SubmissionError(source, [err.reason]) from None


def load_submission(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> Any:
    """Read a submission file strictly (checks the size before reading it whole)."""
    try:
        return read_json(path, max_bytes=max_bytes)
    except JSONInputError as err:
        raise SubmissionError(str(path), [err.reason]) from None


# ----------------------------------------------------------------------------- validation


def _json_path(error) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path)
    return f"${parts}" if parts else "$ (top level)"


# What the predictions' schema may say for `_valid_quickly` to split it into per-value checks: an array of objects
# with these keywords only (each item valid = an object, its required keys, no other key, each value valid).
_ARRAY_KEYWORDS = frozenset({"type", "items", "description"})
_ITEM_KEYWORDS = frozenset({"type", "required", "additionalProperties", "properties", "description"})


@lru_cache(maxsize=1)
def _item_validators() -> tuple[dict[str, Any], tuple[str, ...]] | None:
    """(property -> the validator of its schema, required keys) of a prediction, read off the schema file; None when its
    predictions schema uses anything else (then every document goes through jsonschema whole)."""
    array = load_schema()["properties"]["predictions"]
    item = array.get("items")
    if set(array) - _ARRAY_KEYWORDS or array.get("type") != "array" or not isinstance(item, dict):
        return None
    if set(item) - _ITEM_KEYWORDS or item.get("type") != "object" or item.get("additionalProperties") is not False:
        return None
    if "$ref" in json.dumps(item):
        return None
    validator = _validator()
    return {key: validator.evolve(schema=sub) for key, sub in item["properties"].items()}, tuple(
        item.get("required", ())
    )


def _valid_quickly(obj: Any) -> bool:
    """True only when jsonschema finds nothing in `obj`: the document without its predictions by jsonschema,
    then each prediction's values, each distinct (property, value) validated by jsonschema once (800 items
    hold a few hundred). False means "not shown valid": `_schema_problems` then asks jsonschema for the
    messages on the whole document, as before."""
    parts, items = _item_validators(), obj.get("predictions") if isinstance(obj, dict) else None
    if parts is None or not isinstance(items, list):
        return False
    if not _validator().is_valid({**obj, "predictions": []}):
        return False
    properties, required = parts
    checked: dict[tuple[str, type, Any], bool] = {}
    for item in items:
        if type(item) is not dict or any(key not in item for key in required):
            return False
        for key, value in item.items():
            if key not in properties or isinstance(value, dict | list):
                return False  # an extra key, or a value not keyed by itself: the whole document's messages
            known = checked.get((key, type(value), value))
            if known is None:
                known = checked[(key, type(value), value)] = properties[key].is_valid(value)
            if not known:
                return False
    return True


def _schema_problems(obj: Any) -> list[str]:
    if _valid_quickly(obj):
        return []  # what iter_errors below yields for a valid document
    errors = sorted(_validator().iter_errors(obj), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    problems = []
    for error in errors:
        message = error.message
        if error.validator == "oneOf" and error.absolute_path and error.absolute_path[-1] == "prediction":
            message = f"{error.instance!r} is not a number in [{SCORE_MIN}, {SCORE_MAX}] or null"
        problems.append(f"{_json_path(error)}: {message}")
    return problems


def _summarise(kind: str, items: list[str]) -> list[str]:
    if len(items) <= _MAX_REASONS_PER_KIND:
        return items
    return items[:_MAX_REASONS_PER_KIND] + [f"... and {len(items) - _MAX_REASONS_PER_KIND} more {kind}"]


def _non_finite_paths(value: Any, path: str = "$") -> Iterable[str]:
    if isinstance(value, float) and not math.isfinite(value):
        yield path
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _non_finite_paths(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite_paths(item, f"{path}[{index}]")


def _surrogate_paths(value: Any, path: str = "$") -> Iterable[str]:
    """Where a string (or a key) holds a lone surrogate: valid JSON (a \\ud800 escape), but not UTF-8 text."""
    if isinstance(value, str):
        if any("\ud800" <= char <= "\udfff" for char in value):
            yield path
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str) and any("\ud800" <= char <= "\udfff" for char in key):
                yield f"{path} (a key)"
            yield from _surrogate_paths(item, f"{path}.{clip(key, 40)}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _surrogate_paths(item, f"{path}[{index}]")


def _prediction_problems(
    predictions: list[Any], video_ids: Iterable[str] | None, dimensions: tuple[str, ...]
) -> list[str]:
    problems: list[str] = []
    bad_ids, duplicates = [], []
    seen: Counter[tuple[str, str]] = Counter()
    for index, row in enumerate(predictions):
        if not isinstance(row, Mapping) or not isinstance(row.get("video_id"), str):
            continue  # the schema already reported it
        video_id, dimension = row["video_id"], row.get("dimension")
        try:
            canonical = normalize_video_id(video_id)
        except ValueError as err:
            bad_ids.append(f"$.predictions[{index}].video_id: {err}")
            continue
        if canonical != video_id:
            bad_ids.append(f"$.predictions[{index}].video_id: {video_id!r} is not canonical; write {canonical!r}")
        seen[(video_id, dimension)] += 1
        if seen[(video_id, dimension)] == 2:
            duplicates.append(f"$.predictions[{index}]: duplicate prediction for ({video_id!r}, {dimension!r})")
    problems += _summarise("malformed video ids", bad_ids)
    problems += _summarise("duplicates", duplicates)
    if video_ids is not None:
        expected_videos = set(video_ids)
        submitted_videos = {video for video, _ in seen}
        unknown = sorted(submitted_videos - expected_videos)
        if unknown:
            problems += _summarise("unknown videos", [f"video {v!r} is not in the evaluated split" for v in unknown])
        missing = sorted(
            (video, dimension)
            for video in expected_videos
            for dimension in dimensions
            if (video, dimension) not in seen
        )
        if missing:
            problems.append(
                f"coverage: {len(missing)} of {len(expected_videos) * len(dimensions)} (video, dimension) "
                f"pairs of the split have no prediction (use null for an unparseable output), e.g. "
                + ", ".join(f"({v!r}, {d!r})" for v, d in missing[:5])
            )
    return problems


def find_problems(
    obj: Any,
    *,
    video_ids: Iterable[str] | None = None,
    split: str | None = None,
    dimensions: tuple[str, ...] = DIMENSION_KEYS,
) -> list[str]:
    """Every reason `obj` is not an acceptable submission (empty when it is).

    `video_ids` (the evaluated split's videos) turns on the coverage checks:
    no unknown video, and one prediction per (video, dimension) of the split.
    `split` requires `dataset.split` to match.
    """
    if not isinstance(obj, Mapping):
        return [f"$ (top level): expected a JSON object, got {type(obj).__name__}"]
    version = obj.get("schema_version")
    if version not in READABLE_SCHEMA_VERSIONS:
        # Later checks assume a known layout; a clear single reason beats a wall of schema noise.
        readable = " and ".join(repr(v) for v in READABLE_SCHEMA_VERSIONS)
        return [f"$.schema_version: unsupported schema version {version!r}; this toolkit reads {readable}"]
    problems = [f"{path}: NaN or Infinity is not a number" for path in _non_finite_paths(obj)]
    problems += _summarise(
        "strings with lone surrogates",
        [
            f"{path}: holds a lone surrogate (a \\ud800-\\udfff escape), not valid Unicode"
            for path in _surrogate_paths(obj)
        ],
    )
    problems += _schema_problems(obj)
    created_at = obj.get("created_at")
    if isinstance(created_at, str):
        try:
            _dt.datetime.fromisoformat(created_at.replace("Z", "+00:00"))
        except ValueError:
            problems.append(f"$.created_at: {created_at!r} is not an ISO 8601 date-time")
    dataset = obj.get("dataset")
    if split is not None and isinstance(dataset, Mapping) and dataset.get("split") != split:
        problems.append(f"$.dataset.split: this leaderboard scores split {split!r}, got {dataset.get('split')!r}")
    predictions = obj.get("predictions")
    if isinstance(predictions, list):
        problems += _prediction_problems(predictions, video_ids, dimensions)
        if "outcomes" in obj:
            problems += _outcome_problems(obj["outcomes"], predictions)
    problems += _interval_problems(obj.get("scores"))
    return list(dict.fromkeys(problems))


def _interval_problems(scores: Any) -> list[str]:
    """A recorded CI must have its lower bound at or below its upper one (the schema checked each is a number in
    [-1, 1]): a hand-edited file is refused, never shown as an interval whose ends are swapped."""
    if not isinstance(scores, Mapping):
        return []
    blocks = [("$.scores.overall", scores.get("overall"))]
    dimensions = scores.get("dimensions")
    if isinstance(dimensions, Mapping):
        blocks += [(f"$.scores.dimensions.{key}", block) for key, block in dimensions.items()]
    found = [(f"{path}.icc_ci", block.get("icc_ci")) for path, block in blocks if isinstance(block, Mapping)]
    found.append(("$.scores.mean_icc_ci", scores.get("mean_icc_ci")))
    return [
        f"{path}: lower bound {ci[0]} is above the upper bound {ci[1]}"
        for path, ci in found
        if isinstance(ci, list) and len(ci) == 2 and all(isinstance(v, (int, float)) for v in ci) and ci[0] > ci[1]
    ]


def _outcome_problems(outcomes: Any, predictions: list[Any]) -> list[str]:
    """The `outcomes` counts must add up to the predictions they describe (the schema checked their shape)."""
    if not isinstance(outcomes, Mapping) or not isinstance(outcomes.get("dimensions"), Mapping):
        return []
    rows: Counter[str] = Counter()
    scored: Counter[str] = Counter()
    for row in predictions:
        if isinstance(row, Mapping):
            rows[row.get("dimension")] += 1
            scored[row.get("dimension")] += row.get("prediction") is not None
    problems = []
    per_dimension = outcomes["dimensions"]
    if set(per_dimension) != set(rows):
        problems.append(f"$.outcomes.dimensions: lists {sorted(per_dimension)}, the predictions have {sorted(rows)}")
    totals: Counter[str] = Counter()
    for dimension, counts in per_dimension.items():
        if not isinstance(counts, Mapping) or not all(isinstance(v, int) for v in counts.values()):
            continue
        totals.update(counts)
        if sum(counts.values()) != rows[dimension]:
            problems.append(
                f"$.outcomes.dimensions.{dimension}: counts add up to {sum(counts.values())}, "
                f"but there are {rows[dimension]} predictions"
            )
        if counts.get("answered") != scored[dimension]:
            problems.append(
                f"$.outcomes.dimensions.{dimension}.answered: {counts.get('answered')}, but "
                f"{scored[dimension]} predictions are scores"
            )
    overall = outcomes.get("overall")
    if isinstance(overall, Mapping) and dict(overall) != {k: totals[k] for k in overall}:
        problems.append("$.outcomes.overall: is not the sum of the per-dimension counts")
    failures = outcomes.get("failures")
    if isinstance(failures, Mapping) and isinstance(overall, Mapping):
        listed = sum(entry.get("count", 0) for entry in failures.values() if isinstance(entry, Mapping))
        if listed != overall.get("failed"):
            problems.append(f"$.outcomes.failures: counts add up to {listed}, but {overall.get('failed')} failed")
    return problems


def validate_results(
    obj: Any,
    *,
    video_ids: Iterable[str] | None = None,
    split: str | None = None,
    source: str = "<results>",
) -> Any:
    """Return `obj` unchanged when it is a valid submission; raise SubmissionError listing every problem."""
    problems = find_problems(obj, video_ids=video_ids, split=split)
    if problems:
        raise SubmissionError(source, problems)
    return obj


def predictions_mapping(obj: Mapping[str, Any]) -> dict[tuple[str, str], float | None]:
    """(video_id, dimension) -> prediction of a validated submission, the metric's input shape."""
    return {(row["video_id"], row["dimension"]): row["prediction"] for row in obj["predictions"]}


# ----------------------------------------------------------------------------- packaging


def canonical_bytes(obj: Any) -> bytes:
    """Byte-stable JSON (sorted keys, no NaN) so the same submission always hashes the same."""
    return (json.dumps(obj, sort_keys=True, ensure_ascii=False, allow_nan=False, indent=1) + "\n").encode("utf-8")


def submission_name(obj: Mapping[str, Any]) -> str:
    """`{model}__{modality}__{prompt}__{sha256[:12]}.json`: readable, unique per content."""
    digest = hashlib.sha256(canonical_bytes(obj)).hexdigest()[:12]
    setting = obj["setting"]
    return (
        f"{slug(obj['system']['model'])}__{slug(setting['modality'].replace('+', '-'))}__"
        f"{slug(setting['prompt_style'])}__{digest}.json"
    )


SUBMISSION_WRITER = "submission"


@dataclass(frozen=True)
class SplitCheck:
    """The build's split a submission is checked against: its `video_ids` (the coverage of the split, named
    `split`) and the build's `fingerprints` of it (`BuiltDataset.fingerprints(split)`: the predictions were made
    on that build); None: not checked."""

    video_ids: Sequence[str] | None = None
    split: str | None = None
    fingerprints: Collection[str] | None = None


def package_submission(
    results_path: str | Path,
    out_dir: str | Path,
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    replace_previous: bool = False,
    check: SplitCheck = SplitCheck(),
    command: str = "submit",
    model_name: str | None = None,
) -> Path:
    """Validate a results JSON and write it, canonicalised, as `out_dir/<submission_name>`.

    With `check` the coverage of the build's split is checked too, and that the predictions were made on that
    build (`SplitCheck`). The canonical
    package is checked against `max_bytes` before anything is written; on any failure nothing is left. With
    `replace_previous`, earlier packages of the same system, setting and prompt style that
    the toolkit wrote into `out_dir` are removed, so a rerun replaces its leaderboard entry
    instead of adding a twin; files it did not write are never touched. `model_name` replaces the
    model's name in the package (`submit --name`: a run of a local folder is named by its path).
    """
    video_ids, split, fingerprints = check.video_ids, check.split, check.fingerprints
    results_path = Path(results_path)
    loaded = load_submission(results_path, max_bytes=max_bytes)
    if model_name is not None and isinstance(loaded, dict) and isinstance(loaded.get("system"), dict):
        loaded["system"]["model"] = model_name  # validated below like any name
    dataset = loaded.get("dataset") if isinstance(loaded, Mapping) else None
    recorded = dataset.get("fingerprint") if isinstance(dataset, Mapping) else None
    if fingerprints is not None and isinstance(recorded, str) and recorded not in fingerprints:
        # another build first: its videos would otherwise all be listed as missing from this one
        raise SubmissionError(str(results_path), [fingerprint_reason(recorded, fingerprints, name=dataset.get("name"))])
    obj = validate_results(loaded, video_ids=video_ids, split=split, source=str(results_path))
    if fingerprints is not None and obj["dataset"].get("fingerprint") not in fingerprints:
        raise SubmissionError(str(results_path), [fingerprint_reason(obj["dataset"].get("fingerprint"), fingerprints)])
    package = canonical_bytes(obj)
    if len(package) > max_bytes:  # indentation can blow a deeply nested file up many times over
        raise SubmissionError(
            str(results_path),
            [
                f"the canonical package would be {len(package) / 2**20:.1f} MB, over the {max_bytes / 2**20:g} MB "
                "limit (--max-mb) the leaderboard reads; shorten the raw responses or nested values"
            ],
        )
    folder = OutputFolder(out_dir, command=command, inputs=[results_path])
    name = submission_name(obj)
    target = folder.claim(name, SUBMISSION_WRITER)
    write_atomic(target, package)  # recorded once written; a failed write leaves the folder as it was
    if replace_previous:
        entry_prefix = name.rsplit("__", 1)[0] + "__"
        for previous in sorted(folder.root.glob(f"{entry_prefix}*.json")):
            if previous.name != name and folder.remove_owned(previous.name, SUBMISSION_WRITER):
                logger.info("replaced earlier submission %s", previous)
    logger.info("packaged %s -> %s", results_path, target)
    return target


def fingerprint_reason(fingerprint: Any, fingerprints: Collection[str], *, name: Any = None) -> str | None:
    """Why a submission made on another dataset is not ranked (None when its fingerprint is the references');
    `name`: the dataset name the results record, said too."""
    if fingerprint in fingerprints:
        return None
    made_on = f" (dataset {clip(repr(name), 80)})" if isinstance(name, str) and name else ""
    return (
        f"dataset fingerprint {clip(repr(fingerprint), 80)}{made_on} is not the references' "
        f"({', '.join(sorted(fingerprints))}): "
        "the predictions were made on another build or another version of it, so they cannot be ranked "
        "against these labels; rerun on the references' build"
    )


def push_submission(
    package_path: str | Path, repo_id: str, *, token: str | None = None, path_in_repo: str | None = None, api=None
) -> str:
    """Open a pull request adding a packaged submission to a Hub dataset of requests; returns its URL.

    A pull request (`create_pr=True`), as Hub leaderboards take submissions: nothing reaches the requests
    repo's main branch without review, and the PR's author is the account the board's limits count.
    Thin on purpose: the leaderboard re-validates and scores whatever lands there. `api`: an `HfApi`.
    """
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    package_path = Path(package_path)
    info = api.upload_file(
        path_or_fileobj=str(package_path),
        path_in_repo=path_in_repo or f"requests/{package_path.name}",
        repo_id=repo_id,
        repo_type="dataset",
        commit_message=f"Submit {package_path.name}",
        create_pr=True,
    )
    return str(getattr(info, "pr_url", None) or getattr(info, "commit_url", info))

"""`mis-bench jury MEMBER [MEMBER ...]`: a new system made from several systems' predictions on the same pairs (the
real leaderboard page builds its juries with it too).

A member is a run folder, a results JSON, or any predictions file `score` reads (CSV/JSONL, long or wide:
`mis_icc_metric.predictions_io`). The jury is a system like any other: its folder holds `predictions.jsonl` and,
when every member is a run (results JSON: they record the build and setting), `results.json` (the submission
schema: scored, reported, submittable); its `system` block names it a combination of its members
(`jury(METHOD): A + B + ...`, backend `jury`), and `jury.json` beside them says how it was made (members, the
missing-pair rule, stacked weights per fold, the pairs answered by fewer than all members, the dimensions it
leaves unanswered), its scores, and how it compares with its best member (a paired comparison on the same
resamples, clinicians by default), each CI and p-value under the reporting floor
(`mis_icc_metric.reporting_floor`): withheld with its reason (the counts) below it. How scores are combined:
`baselines.stacking`.

Refused in one line, before any work: a jury of one, members on different builds or splits, a member off the
score scale, options that do not apply to the method (`--fit` or `--folds` with mean or median, `--folds` with
`--fit`, fewer than 2 folds), `--fit` members that do not match the members by identity (run: model, backend,
setting and options; predictions file: its file name), fit runs on the scored pairs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from eval_scripts.baselines.stacking import (
    DEFAULT_JURY_FOLDS,
    DEFAULT_JURY_MISSING,
    JURY_METHODS,
    JURY_MISSING,
    STACKED_FIT,
    apply_stacked,
    check_folds,
    combine_fixed,
    crossfit_stacked,
    fit_stacked,
    member_matrix,
)
from eval_scripts.formats.results import RESULTS_NAME, RunRecord
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY, DIMENSION_KEYS, SCORE_MAX, SCORE_MIN
from mis_bench_dataset.splits import ALL_SPLITS
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

logger = logging.getLogger(__name__)

Key = tuple[str, str]
JURY_BACKEND = "jury"
JURY_NAME = "jury.json"
WRITER = "jury"


@dataclass(frozen=True)
class JuryMember:
    """One member: its file, its name as the board shows it, its predictions, what identifies it across splits
    (`identity`), and its results record (None for a plain predictions file)."""

    path: Path
    name: str
    results: dict[str, Any] | None
    predictions: dict[Key, float | None]
    identity: str = field(default="")

    @property
    def data(self) -> tuple[str | None, str | None]:
        dataset = (self.results or {}).get("dataset") or {}
        return dataset.get("fingerprint"), dataset.get("split")


def member_label(results: Mapping[str, Any]) -> str:
    system, setting = results["system"], results.get("setting") or {}
    shown = [setting.get(k) for k in ("modality", "prompt_style") if setting.get(k) not in (None, "none")]
    return system["model"] + (f" ({' '.join(shown)})" if shown and system.get("backend") != JURY_BACKEND else "")


def run_identity(results: Mapping[str, Any]) -> str:
    """What makes two results files the same system on different splits: the model (compared as the board
    compares names, `text_safety.name_key`), backend, setting and run options (`formats.results.options_label`);
    a `--fit` run is matched to its member by it."""
    from eval_scripts.formats.results import options_label
    from mis_bench_dataset.toolkit.text_safety import name_key

    system, setting = results["system"], results.get("setting") or {}
    parts = [system.get("backend"), *(setting.get(k) for k in ("modality", "prompt_style", "few_shot_k"))]
    parts += [setting.get("input_source"), *options_label(system)]
    return f"{name_key(system['model'])} [{'; '.join(str(p) for p in parts)}]"


def read_member(path: str | Path) -> JuryMember:
    """A run folder (its results.json), a results file (a JSON object with a `system`: read strictly and
    validated) or a predictions file (`predictions_io.read_prediction_file`: named by its file, every score on the
    scale)."""
    from eval_scripts.formats.submission import SubmissionError, load_submission, validate_results
    from mis_icc_metric.predictions_io import predictions_to_mapping

    path = Path(path)
    file = path / RESULTS_NAME if path.is_dir() else path
    if not file.is_file():
        raise UsageError("no results.json in the run folder", where=str(path), hint="give a run folder or its file")
    if file.suffix.lower() != ".json":
        return _read_predictions_member(file)
    try:
        results = load_submission(file)
        if not (isinstance(results, dict) and "system" in results):  # a predictions JSON (a list, or predictions)
            return _read_predictions_member(file)
        results = validate_results(results, source=str(file))
    except SubmissionError as err:
        raise DataError(f"not a valid results file: {'; '.join(err.reasons[:2])}", where=str(file)) from None
    predictions = predictions_to_mapping(results["predictions"])
    return JuryMember(file, member_label(results), results, predictions, run_identity(results))


def _read_predictions_member(file: Path) -> JuryMember:
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file

    read = read_prediction_file(file)
    for record, row in zip(read.records, read.rows, strict=True):
        value = record["prediction"]
        if value is not None and not SCORE_MIN <= value <= SCORE_MAX:
            raise DataError(
                f"prediction {value} of ({record['video_id']!r}, {record['dimension']!r}) is off the score scale "
                f"[{SCORE_MIN}, {SCORE_MAX}]: a jury is a system on the benchmark's scale",
                where=f"{file}, row {row}",
                hint="map the member's scores to 1-5 first (mis-bench calibrate), or leave it out",
            )
    return JuryMember(file, file.stem, None, predictions_to_mapping(read.records), f"file {file.name}")


def check_members(members: Sequence[JuryMember], *, what: str = "jury", build=None) -> tuple[str | None, str | None]:
    """At least two members, none twice; the runs among them (results files) on one split and one build: each
    run's fingerprint one the build records for its split (`BuiltDataset.fingerprints`; a model run and a
    baseline read different configs), or, without a build to ask, one fingerprint for all. A predictions file
    records neither: its pairs are checked against the gold instead (`run_jury`). Returns the runs' (fingerprint,
    split), (None, None) when no member is a run."""
    if len(members) < 2:
        raise UsageError(f"a {what} needs at least two members, got {len(members)}", hint="name two or more runs")
    paths = [m.path.resolve() for m in members]
    if len(set(paths)) < len(paths):
        raise UsageError("a run is named twice", where=str(paths[0]), hint="name each member once")
    runs = [m for m in members if m.results is not None]
    if not runs:
        return None, None
    first = runs[0]
    for member in runs[1:]:
        if member.data[1] != first.data[1]:
            raise UsageError(
                f"runs on different splits in one {what} ({first.data[1]} and {member.data[1]})",
                where=str(member.path),
                hint="combine runs of the same split",
            )
    for member in runs:
        if build is not None and member.data[0] not in build.fingerprints(member.data[1]):
            raise UsageError(
                f"a member of the {what} was not run on the build of --references (fingerprint {member.data[0]})",
                where=str(member.path),
                hint="combine runs of one build, and give that build as --references",
            )
        if build is None and member.data[0] != first.data[0]:
            raise UsageError(
                f"runs on different builds in one {what} (fingerprints {first.data[0]} and {member.data[0]})",
                where=str(member.path),
                hint="combine runs of the same build (runs reading different configs of one build: pass the "
                "build as --references to check them)",
            )
    return first.data


def match_fit(members: Sequence[JuryMember], fit: Sequence[JuryMember]) -> list[JuryMember]:
    """The `--fit` members in the members' order, matched by identity (`run_identity`, or a predictions file's
    name), never by position: refused when the identities are not one-to-one."""
    if len(fit) != len(members):
        raise UsageError(f"{len(fit)} fit runs for {len(members)} members", where="--fit", hint="one per member")
    for group, option in ((members, "the members"), (fit, "--fit")):
        seen: dict[str, Path] = {}
        for member in group:
            if member.identity in seen:
                raise UsageError(
                    f"two of {option} are the same system ({member.identity}), so --fit cannot be matched to them",
                    where=f"{seen[member.identity]} and {member.path}",
                    hint="name each system once",
                )
            seen[member.identity] = member.path
    by_identity = {m.identity: m for m in fit}
    unmatched = [m for m in members if m.identity not in by_identity]
    if unmatched:
        spare = sorted(set(by_identity) - {m.identity for m in members})
        raise UsageError(
            f"--fit does not match the members: no fit run for {unmatched[0].identity}"
            + (f" (fit runs without a member: {', '.join(spare)})" if spare else ""),
            where=str(unmatched[0].path),
            hint="give each member's run of the fit split (same model, setting and options; same file name for a "
            "predictions file)",
        )
    return [by_identity[m.identity] for m in members]


def _keys(members: Sequence[JuryMember]) -> list[Key]:
    """Every pair any member names, in a fixed order: what the jury answers or leaves unanswered (a results file
    names every pair of its split, null where it has no score, and so does the jury's)."""
    return sorted({key for m in members for key in m.predictions})


@dataclass(frozen=True)
class JuryPredictions:
    predictions: dict[Key, float | None]
    record: dict[str, Any]


def check_options(method: str, *, missing: str, fit: Sequence | None, folds: int | None) -> None:
    """The options that do not apply to `method` (or contradict each other), refused before any work."""
    if method not in JURY_METHODS:
        raise UsageError(f"unknown jury method {method!r}", where="--method", hint=f"use {', '.join(JURY_METHODS)}")
    if missing not in JURY_MISSING:
        raise UsageError(f"unknown missing-pair rule {missing!r}", where="--missing", hint=", ".join(JURY_MISSING))
    if method != "stacked":
        for given, option in ((fit, "--fit"), (folds, "--folds")):
            if given:
                raise UsageError(
                    f"{option} applies to a stacked jury only; {method} fits nothing",
                    where=option,
                    hint=f"drop {option}, or use --method stacked",
                )
        return
    if missing != "require-all":
        raise UsageError("stacked weights need every member's score", where="--missing", hint="use require-all")
    if fit and folds is not None:
        raise UsageError(
            "--folds cross-fits on the scored split; with --fit the weights come from the fit runs",
            where="--folds",
            hint="drop one of --folds and --fit",
        )
    if folds is not None:
        check_folds(folds)


def _answered_by(matrix: np.ndarray, values: np.ndarray) -> dict[str, Any]:
    """How many members answered each pair the jury answered: `--missing available` combines fewer than all."""
    n_members = matrix.shape[1]
    counts = (~np.isnan(matrix)).sum(axis=1)[~np.isnan(values)]
    by_count = {f"{k} of {n_members}": int((counts == k).sum()) for k in range(n_members, 0, -1) if (counts == k).any()}
    return {"n_pairs_from_fewer_members": int((counts < n_members).sum()), "answered_by": by_count}


def _unanswered_dimensions(
    members: Sequence[JuryMember], matrix: np.ndarray, keys: Sequence[Key], values: np.ndarray
) -> dict[str, str]:
    """Each dimension the jury answers on no pair, and why (the members that answered none of it)."""
    dims = np.array([d for _, d in keys])
    reasons = {}
    for d in DIMENSION_KEYS:
        rows = dims == d
        if not rows.any() or (~np.isnan(values[rows])).any():
            continue
        silent = [m.name for j, m in enumerate(members) if np.isnan(matrix[rows, j]).all()]
        reasons[d] = f"{', '.join(silent)} answered none of its pairs" if silent else "no pair has every member's score"
    return reasons


def combine_members(
    members: Sequence[JuryMember],
    method: str,
    references: Mapping[Key, float],
    *,
    missing: str = DEFAULT_JURY_MISSING,
    fit: Sequence[JuryMember] | None = None,
    fit_references: Mapping[Key, float] | None = None,
    folds: int | None = None,
) -> JuryPredictions:
    """The jury's score of every pair its members name (see `baselines.stacking`), and how it was made; `fit`
    (matched to the members by identity), or cross-fitting in `folds` (default `DEFAULT_JURY_FOLDS`) folds."""
    check_options(method, missing=missing, fit=fit, folds=folds)
    keys = _keys(members)
    matrix = member_matrix([m.predictions for m in members], keys)
    record: dict[str, Any] = {
        "method": method,
        "members": [
            {"name": m.name, "identity": m.identity, "results" if m.results else "predictions": str(m.path)}
            for m in members
        ],
        "missing": missing,
        "n_pairs": len(keys),
        "n_pairs_every_member": int((~np.isnan(matrix)).all(axis=1).sum()),
    }
    if method != "stacked":
        values = combine_fixed(matrix, method, missing)
    elif fit:
        values, record["fit"] = _fit_elsewhere(members, match_fit(members, fit), fit_references or {}, matrix, keys)
    else:
        n_folds = DEFAULT_JURY_FOLDS if folds is None else folds
        gold = np.array([references.get(k, np.nan) for k in keys], dtype=np.float64)
        values, fitted = crossfit_stacked(matrix, gold, keys, n_folds)
        record["fit"] = {
            "how": f"cross-fitted on the scored split: {n_folds} clinician folds (GroupKFold), each fold scored by "
            f"weights fitted on the other folds only ({STACKED_FIT})",
            "folds": fitted,
        }
    predictions = {k: None if np.isnan(v) else float(v) for k, v in zip(keys, values, strict=True)}
    record["n_pairs_answered"] = sum(v is not None for v in predictions.values())
    record.update(_answered_by(matrix, values))
    record["dimensions_unanswered"] = _unanswered_dimensions(members, matrix, keys, values)
    return JuryPredictions(predictions, record)


def _fit_elsewhere(members, fit, fit_references, matrix, keys) -> tuple[np.ndarray, dict]:
    """Weights fitted on the fit runs' pairs (the members' systems, matched by identity, on other videos)."""
    scored_videos = {video for video, _ in keys}
    fit_keys = _keys(fit)
    shared = sorted({video for video, _ in fit_keys} & scored_videos)
    if shared:
        raise UsageError(
            f"the fit runs score {len(shared)} of the scored videos (e.g. {shared[0]!r}): their weights would see "
            "the gold they are scored on",
            where="--fit",
            hint="fit on another split, or drop --fit to cross-fit by clinician folds",
        )
    fit_keys = [key for key in fit_keys if key in fit_references]
    fit_matrix = member_matrix([m.predictions for m in fit], fit_keys)
    gold = np.array([fit_references[k] for k in fit_keys], dtype=np.float64)
    weights = fit_stacked(fit_matrix, gold, fit_keys)
    splits = sorted({str(m.data[1]) for m in fit if m.data[1]})
    return apply_stacked(matrix, keys, weights), {
        "how": f"fitted on {'split ' + ', '.join(splits) if splits else 'the fit files'} ({STACKED_FIT})",
        "runs": [str(m.path) for m in fit],
        "n_pairs": len(fit_keys),
        "weights": weights,
    }


def jury_name(method: str, members: Sequence[JuryMember], names: Sequence[str] | None = None) -> str:
    """`jury(METHOD): A + B + ...`: every board and report shows a jury as the combination it is."""
    return f"jury({method}): " + " + ".join(names or [m.name for m in members])


@dataclass(frozen=True)
class JuryResult:
    name: str
    results_path: Path | None  # None when a member is a predictions file (no build or setting to record)
    jury_path: Path
    results: dict[str, Any]
    record: dict[str, Any]


def _best_member(members, references, *, seed: int) -> int:
    """The member that answers the most dimensions (an ICC defined) and, among those, has the highest mean ICC
    over them: a member that never answered some dimensions is not ranked on a mean over fewer."""
    from mis_icc_metric.scoring import score_predictions

    def rank(member: JuryMember) -> tuple[int, float]:
        scored = {k: v for k, v in member.predictions.items() if k in references}
        result = score_predictions(scored, references, resampling=ResamplingOptions(n_bootstrap=0, seed=seed))
        icc = [e["icc"] for e in result["dimensions"].values() if e["icc"] is not None and not np.isnan(e["icc"])]
        return len(icc), float(np.mean(icc)) if icc else -np.inf

    return max(range(len(members)), key=lambda i: rank(members[i]))


def _withhold(entry: dict[str, Any], support, what: str) -> None:
    """The reporting floor on one comparison entry: its CI and p-value withheld with the reason."""
    from mis_icc_metric.reporting_floor import degenerate_reason, withhold_reason

    ci = entry.get("delta_ci")
    reason = entry.get("withheld")
    if isinstance(reason, dict):  # `paired_comparison` applied the rule per figure: one line for the entry
        reason = (withhold_reason(support, what) or "; ".join(dict.fromkeys(reason.values()))) if reason else None
    if reason is None and entry.get("delta") is None:
        reason = f"the difference is undefined ({entry.get('n', 0)} pairs both answered)"
    reason = reason or withhold_reason(support, what)
    if reason is None and ci is not None:
        reason = degenerate_reason(*(np.nan if v is None else v for v in ci), what=what)
    if reason:
        entry.update(delta_ci=None, p_value=None, withheld=reason)


def floor_comparison(versus: dict[str, Any]) -> dict[str, Any]:
    """`versus` (a paired comparison, JSON-safe) with each entry's CI and p-value withheld below the reporting
    floor (`mis_icc_metric.reporting_floor`: videos and, resampling clinicians, clinicians behind the entry);
    the mean over dimensions rests on its weakest dimension."""
    from mis_icc_metric.reporting_floor import Support, floor_description

    unit = (versus["meta"].get("resampling") or {}).get("unit", "video")
    what = "a CI and p-value"
    dims = list(versus["dimensions"].values())
    for entry in [*dims, versus["overall"]]:
        _withhold(entry, Support(entry["n"], entry.get("n_clusters"), unit), what)
    clusters = [e.get("n_clusters") for e in dims]
    weakest = Support(
        min((e["n"] for e in dims), default=0),
        None if not dims or any(c is None for c in clusters) else min(clusters),
        unit,
    )
    if versus["mean_icc"].get("delta") is None:
        undefined = [e["abbreviation"] for e in dims if e.get("delta") is None]
        versus["mean_icc"]["withheld"] = (
            f"the mean over the eight dimensions is undefined: no difference on {', '.join(undefined) or 'them'}"
        )
    _withhold(versus["mean_icc"], weakest, what)
    versus["meta"]["floor"] = floor_description()
    return versus


def compare_with_best(
    jury: Mapping[Key, float | None],
    members: Sequence[JuryMember],
    references: Mapping[Key, float],
    *,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The jury against its best member (highest mean ICC on these references), paired on the same resamples,
    each CI and p-value under the reporting floor (`floor_comparison`)."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.paired import paired_comparison

    n_bootstrap, seed = resampling.n_bootstrap, resampling.seed

    index = _best_member(members, references, seed=seed)
    best, best_name = members[index], (names or [m.name for m in members])[index]
    paired = paired_comparison(
        {k: v for k, v in jury.items() if k in references},
        {k: v for k, v in best.predictions.items() if k in references},
        references,
        resampling=replace(resampling, n_bootstrap=max(1, n_bootstrap)),
        names=("jury", best_name),
    )
    return floor_comparison({"best_member": best_name, **json_safe(paired)})


def floor_scores(scores: Mapping[str, Any]) -> dict[str, Any]:
    """The jury's own mean ICC with its CI under the reporting floor (the weakest dimension's videos and
    clinicians), and each dimension's ICC: what `jury` prints."""
    from mis_icc_metric.reporting_floor import Support, degenerate_reason, withhold_reason

    dims = scores["dimensions"]
    unit = ((scores.get("meta") or {}).get("resampling") or {}).get("unit", "video")
    defined = {k: e["icc"] for k, e in dims.items() if e.get("icc") is not None}
    clusters = [e.get("n_clusters") for e in dims.values()]
    support = Support(
        min((e["n"] for e in dims.values()), default=0),
        None if any(c is None for c in clusters) else min(clusters, default=0),
        unit,
    )
    ci = scores.get("mean_icc_ci")
    if scores.get("mean_icc") is None:
        missing = [DIMENSION_BY_KEY[k].abbreviation for k in DIMENSION_KEYS if k not in defined]
        reason = f"undefined: no ICC on {', '.join(missing) or 'some dimension'}"
    elif ci is None:  # withheld by `score_predictions` under the one rule (its reason), or never drawn
        reason = (scores.get("withheld") or {}).get("mean_icc_ci") or "no CI (no bootstrap)"
    else:
        reason = withhold_reason(support, "a CI") or degenerate_reason(*ci)
    return {
        "value": scores.get("mean_icc"),
        "ci": None if reason else ci,
        "withheld": reason,
        "dimensions": defined,
    }


def write_jury(
    out: str | Path,
    members: Sequence[JuryMember],
    combined: JuryPredictions,
    references: Mapping[Key, float],
    *,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    command: str = "jury",
    names: Sequence[str] | None = None,
) -> JuryResult:
    """The jury's run folder `out/jury-<method>/` (predictions, results when every member is a run, jury.json): a
    system like any other; `names` shortens the members' names in the jury's own. Everything is computed (the
    scores, the comparison) before anything is written."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.scoring import score_predictions

    method = combined.record["method"]
    name = jury_name(method, members, names)
    record = {**combined.record, "name": name}
    scores = None
    if references:
        scored = {k: v for k, v in combined.predictions.items() if k in references}
        scores = score_predictions(scored, references, resampling=resampling)
        record["scores"] = floor_scores(json_safe(scores))
        record["versus_best_member"] = compare_with_best(
            combined.predictions, members, references, resampling=resampling, names=names
        )
    jury_text = json.dumps(json_safe(record), indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    records = [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in combined.predictions.items()]
    output = _JuryOutput(record, jury_text, records)
    if all(m.results is not None for m in members):
        return _write_run_jury(out, members, combined, references, output, command=command, resampling=resampling)
    return _write_file_jury(out, output, scores, command=command)


@dataclass(frozen=True)
class _JuryOutput:
    """What a jury writes whatever its members: its record (jury.json's object), that record's text, and its
    predictions as rows."""

    record: dict[str, Any]
    text: str
    records: list[dict[str, Any]]


def _write_run_jury(out, members, combined, references, output: _JuryOutput, *, command, resampling):
    """A jury of runs: a run folder like any other (`harness.run_writer.write_run`) plus jury.json."""
    from eval_scripts.harness.run_writer import write_run
    from mis_bench_dataset.toolkit.atomic import write_atomic
    from mis_bench_dataset.toolkit.ownership import OutputFolder

    record, jury_text, records = output.record, output.text, output.records
    method, name = record["method"], record["name"]
    folder = OutputFolder(out, command=command)
    run_dir = f"jury-{method}"
    jury_path = folder.claim(f"{run_dir}/{JURY_NAME}", WRITER)
    first = members[0].results
    dims = {d for _, d in combined.predictions}
    rates = {
        d: float(np.mean([p is not None for (_, dd), p in combined.predictions.items() if dd == d]))
        for d in DIMENSION_KEYS
        if d in dims
    }
    written = write_run(
        folder,
        run_dir,
        record=RunRecord(
            system={
                "model": name,
                "backend": JURY_BACKEND,
                "decoding": {"jury": {k: v for k, v in combined.record.items() if k != "members"}},
                "package_versions": {},
                "description": f"a combination of its members ({method}; pairs a member lacks: "
                f"{combined.record['missing']})"
                ", not a model of its own: " + "; ".join(m.name for m in members),
            },
            setting=first["setting"],
            dataset=first["dataset"],
            predictions=records,
            parse_rates=rates,
        ),
        references=references,
        resampling=resampling,
    )
    write_atomic(jury_path, jury_text)
    return JuryResult(name, written.results_path, jury_path, written.results, record)


def _write_file_jury(out, output: _JuryOutput, scores, *, command) -> JuryResult:
    """A jury with a predictions-file member: its predictions and jury.json (with the scores) only: no
    results.json, since nothing records the build or the setting it would have to name."""
    from mis_bench_dataset.toolkit.atomic import AtomicFiles
    from mis_bench_dataset.toolkit.ownership import OutputFolder
    from mis_icc_metric.predictions_io import write_predictions

    record, jury_text, records = output.record, output.text, output.records
    method = record["method"]
    folder = OutputFolder(out, command=command)
    run_dir = f"jury-{method}"
    predictions_path, jury_path = folder.claim_all([f"{run_dir}/predictions.jsonl", f"{run_dir}/{JURY_NAME}"], WRITER)
    with AtomicFiles() as files:
        write_predictions(predictions_path, records, files=files)
        files.write(jury_path, jury_text)
    return JuryResult(record["name"], None, jury_path, {"scores": scores} if scores else {}, record)


@dataclass(frozen=True)
class JuryRecipe:
    """How a jury combines its members: `method` (mean, median or stacked simplex weights), which pairs it scores
    where a member lacks one (`missing`), and for a stacked jury the runs its weights are fitted on (`fit`) or the
    clinician folds it is cross-fitted over (`folds`)."""

    method: str
    missing: str = DEFAULT_JURY_MISSING
    fit: Sequence[str | Path] | None = None
    folds: int | None = None


def run_jury(
    runs: Sequence[str | Path],
    out: str | Path,
    recipe: JuryRecipe,
    *,
    references: str | Path | None = None,
    split: str | None = None,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
) -> JuryResult:
    """`mis-bench jury`: a new system from several systems' predictions on the same pairs (`method` mean, median
    or stacked simplex weights), written to `out` as a system like any other (`predictions.jsonl`, `results.json`
    marked a combination of its members when every member is a run, and `jury.json`: how it was made, its
    scores and a paired comparison with its best member on the same resamples). Members are run folders, results
    files or predictions files; `split`: the scored split of a build (default: the runs' split, else test).
    Options that do not apply, members on different builds or splits, and unmatched `fit` runs are refused in
    one line before any work."""
    method, missing, fit, folds = recipe.method, recipe.missing, recipe.fit, recipe.folds
    check_options(method, missing=missing, fit=fit, folds=folds)
    if method == "stacked" and references is None:
        raise UsageError("a stacked jury is fitted to gold", where="--references", hint="pass the build or labels")
    members = [read_member(path) for path in runs]
    build = _build(references)
    _, run_split = check_members(members, build=build)
    if split and run_split and split != run_split:
        raise UsageError(
            f"--split {split} but the runs are on split {run_split}", where="--split", hint=f"use --split {run_split}"
        )
    split = run_split or split or "test"
    gold = _references(references, split) if references is not None else {}
    if gold:
        _check_pairs(members, gold, f"split {split!r} of {references}" if build is not None else str(references))
    fit_members = [read_member(path) for path in fit] if fit else None
    fit_gold = None
    if fit_members:
        fit_split = check_members(fit_members, what="fit set", build=build)[1]
        fit_gold = _references(references, fit_split or ALL_SPLITS if build is not None else None)
        _check_pairs(fit_members, fit_gold, f"the fit gold of {references}")
    combined = combine_members(
        members, method, gold, missing=missing, fit=fit_members, fit_references=fit_gold, folds=folds
    )
    return write_jury(out, members, combined, gold, resampling=resampling)


def _check_pairs(members: Sequence[JuryMember], gold: Mapping[Key, float], where: str) -> None:
    """A predictions-file member's pairs all have gold (`predictions_io.check_predicted_pairs`: file and row)."""
    from mis_icc_metric.predictions_io import check_predicted_pairs, read_prediction_file

    for member in members:
        if member.results is None and any(key not in gold for key in member.predictions):
            check_predicted_pairs(read_prediction_file(member.path), gold, where)


def _build(source: str | Path | None):
    """The build `source` names (to check the members' fingerprints), or None for a labels file."""
    from mis_bench_dataset.dataset.handle import BuiltDataset

    if source is None or not Path(source).is_dir():
        return None
    return BuiltDataset.of(str(source))


def _references(source: str | Path, split: str | None) -> dict[Key, float]:
    from mis_icc_metric.predictions_io import read_references

    try:
        return read_references(source, split=split or "test")
    except DataError:  # the reader's own line names the file, row and side
        raise
    except (OSError, ValueError) as err:
        raise DataError(f"cannot read the references: {err}", where=str(source)) from None

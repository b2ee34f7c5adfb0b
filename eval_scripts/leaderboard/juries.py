"""`mis-bench jury RUN [RUN ...]`: a new system made from several systems' predictions on the same pairs (the
real leaderboard page builds its juries with it too).

The jury is a system like any other: its folder holds `predictions.jsonl` and `results.json` (the submission
schema: scored, reported, submittable), its `system` block names it a combination of its members
(`jury(METHOD): A + B + ...`, backend `jury`), and `jury.json` beside them says how it was made (members, the
missing-pair rule, stacked weights per fold) and how it compares with its best member (a paired comparison on
the same resamples, clinicians by default). How scores are combined: `baselines.stacking`.

Refused in one line: a jury of one, members on different builds or splits, fit runs on another build or in
another order, a stacked jury whose fit and scored splits are the same split without cross-fitting.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eval_scripts.baselines.stacking import (
    DEFAULT_JURY_FOLDS,
    DEFAULT_JURY_MISSING,
    JURY_METHODS,
    JURY_MISSING,
    apply_stacked,
    combine_fixed,
    crossfit_stacked,
    fit_stacked,
    member_matrix,
)
from mis_bench_dataset.dimensions import DEFAULT_BOOTSTRAP, DEFAULT_RESAMPLE, DEFAULT_SEED, DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import DataError, UsageError

logger = logging.getLogger(__name__)

Key = tuple[str, str]
JURY_BACKEND = "jury"
JURY_NAME = "jury.json"
WRITER = "jury"


@dataclass(frozen=True)
class JuryMember:
    """One member: its results file, its name as the board shows it, its predictions."""

    path: Path
    name: str
    results: dict[str, Any]
    predictions: dict[Key, float | None]

    @property
    def data(self) -> tuple[str | None, str | None]:
        dataset = self.results.get("dataset") or {}
        return dataset.get("fingerprint"), dataset.get("split")


def member_label(results: Mapping[str, Any]) -> str:
    system, setting = results["system"], results.get("setting") or {}
    shown = [setting.get(k) for k in ("modality", "prompt_style") if setting.get(k) not in (None, "none")]
    return system["model"] + (f" ({' '.join(shown)})" if shown and system.get("backend") != JURY_BACKEND else "")


def read_member(path: str | Path) -> JuryMember:
    """A run folder (its results.json) or a results file, read strictly and validated."""
    from eval_scripts.formats.submission import SubmissionError, load_submission, validate_results
    from mis_icc_metric.predictions_io import predictions_to_mapping

    path = Path(path)
    file = path / "results.json" if path.is_dir() else path
    if not file.is_file():
        raise UsageError("no results.json in the run folder", where=str(path), hint="give a run folder or its file")
    try:
        results = validate_results(load_submission(file), source=str(file))
    except SubmissionError as err:
        raise DataError(f"not a valid results file: {'; '.join(err.reasons[:2])}", where=str(file)) from None
    return JuryMember(file, member_label(results), results, predictions_to_mapping(results["predictions"]))


def check_members(members: Sequence[JuryMember], *, what: str = "jury", build=None) -> tuple[str | None, str | None]:
    """At least two members, none twice, one split, one build: each member's fingerprint one the build records
    for its split (`BuiltDataset.fingerprints`; a model run and a baseline read different configs), or, without
    a build to ask, one fingerprint for all."""
    if len(members) < 2:
        raise UsageError(f"a {what} needs at least two members, got {len(members)}", hint="name two or more runs")
    paths = [m.path.resolve() for m in members]
    if len(set(paths)) < len(paths):
        raise UsageError("a run is named twice", where=str(paths[0]), hint="name each member once")
    first = members[0]
    for member in members[1:]:
        if member.data[1] != first.data[1]:
            raise UsageError(
                f"runs on different splits in one {what} ({first.data[1]} and {member.data[1]})",
                where=str(member.path),
                hint="combine runs of the same split",
            )
    for member in members:
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


def _keys(members: Sequence[JuryMember]) -> list[Key]:
    """Every pair any member names, in a fixed order: what the jury answers or leaves unanswered (a results file
    names every pair of its split, null where it has no score, and so does the jury's)."""
    return sorted({key for m in members for key in m.predictions})


@dataclass(frozen=True)
class JuryPredictions:
    predictions: dict[Key, float | None]
    record: dict[str, Any]


def combine_members(
    members: Sequence[JuryMember],
    method: str,
    references: Mapping[Key, float],
    *,
    missing: str = DEFAULT_JURY_MISSING,
    fit: Sequence[JuryMember] | None = None,
    fit_references: Mapping[Key, float] | None = None,
    folds: int = DEFAULT_JURY_FOLDS,
) -> JuryPredictions:
    """The jury's score of every pair its members name (see `baselines.stacking`), and how it was made."""
    if method not in JURY_METHODS:
        raise UsageError(f"unknown jury method {method!r}", where="--method", hint=f"use {', '.join(JURY_METHODS)}")
    if missing not in JURY_MISSING:
        raise UsageError(f"unknown missing-pair rule {missing!r}", where="--missing", hint=", ".join(JURY_MISSING))
    keys = _keys(members)
    matrix = member_matrix([m.predictions for m in members], keys)
    record: dict[str, Any] = {
        "method": method,
        "members": [{"name": m.name, "results": str(m.path)} for m in members],
        "missing": missing,
        "n_pairs": len(keys),
        "n_pairs_every_member": int((~np.isnan(matrix)).all(axis=1).sum()),
    }
    if method != "stacked":
        values = combine_fixed(matrix, method, missing)
    elif missing != "require-all":
        raise UsageError("stacked weights need every member's score", where="--missing", hint="use require-all")
    elif fit:
        values, record["fit"] = _fit_elsewhere(members, fit, fit_references or {}, matrix, keys)
    else:
        gold = np.array([references.get(k, np.nan) for k in keys], dtype=np.float64)
        values, fitted = crossfit_stacked(matrix, gold, keys, folds)
        record["fit"] = {
            "how": f"cross-fitted on the scored split: {folds} clinician folds (GroupKFold), each fold scored by "
            "weights fitted on the other folds only",
            "folds": fitted,
        }
    predictions = {k: None if np.isnan(v) else float(v) for k, v in zip(keys, values, strict=True)}
    record["n_pairs_answered"] = sum(v is not None for v in predictions.values())
    return JuryPredictions(predictions, record)


def _fit_elsewhere(members, fit, fit_references, matrix, keys) -> tuple[np.ndarray, dict]:
    """Weights fitted on the fit runs' split (same members, same order, same build, another split)."""
    if len(fit) != len(members):
        raise UsageError(f"{len(fit)} fit runs for {len(members)} members", where="--fit", hint="one per member")
    if fit[0].data[1] == members[0].data[1]:
        raise UsageError(
            "the fit runs are on the scored split: their weights would see the gold they are scored on",
            where="--fit",
            hint="fit on another split, or drop --fit to cross-fit by clinician folds",
        )
    fit_keys = [key for key in _keys(fit) if key in fit_references]
    fit_matrix = member_matrix([m.predictions for m in fit], fit_keys)
    gold = np.array([fit_references[k] for k in fit_keys], dtype=np.float64)
    weights = fit_stacked(fit_matrix, gold, fit_keys)
    return apply_stacked(matrix, keys, weights), {
        "how": f"fitted on split {fit[0].data[1]!r} (scipy.optimize.nnls per dimension, no intercept)",
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
    results_path: Path
    jury_path: Path
    results: dict[str, Any]
    record: dict[str, Any]


def _best_member(members, references, *, seed: int) -> int:
    from mis_icc_metric.scoring import score_predictions

    def mean_icc(member: JuryMember) -> float:
        scored = {k: v for k, v in member.predictions.items() if k in references}
        value = score_predictions(scored, references, n_bootstrap=0, seed=seed)["mean_icc"]
        return -np.inf if value is None or np.isnan(value) else value

    return max(range(len(members)), key=lambda i: mean_icc(members[i]))


def compare_with_best(
    jury: Mapping[Key, float | None],
    members: Sequence[JuryMember],
    references: Mapping[Key, float],
    *,
    n_bootstrap: int,
    seed: int,
    resample: str = DEFAULT_RESAMPLE,
    names: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The jury against its best member (highest mean ICC on these references), paired on the same resamples."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.paired import paired_comparison

    index = _best_member(members, references, seed=seed)
    best, best_name = members[index], (names or [m.name for m in members])[index]
    paired = paired_comparison(
        {k: v for k, v in jury.items() if k in references},
        {k: v for k, v in best.predictions.items() if k in references},
        references,
        n_bootstrap=max(1, n_bootstrap),
        seed=seed,
        resample=resample,
        names=("jury", best_name),
    )
    return {"best_member": best_name, **json_safe(paired)}


def write_jury(
    out: str | Path,
    members: Sequence[JuryMember],
    combined: JuryPredictions,
    references: Mapping[Key, float],
    *,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    resample: str = DEFAULT_RESAMPLE,
    command: str = "jury",
    names: Sequence[str] | None = None,
) -> JuryResult:
    """The jury's run folder `out/jury-<method>/` (predictions, results, jury.json): a system like any other;
    `names` shortens the members' names in the jury's own."""
    import json

    from eval_scripts.harness.run_writer import write_run
    from mis_bench_dataset.toolkit.atomic import write_atomic
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_bench_dataset.toolkit.ownership import OutputFolder

    method = combined.record["method"]
    name = jury_name(method, members, names)
    folder = OutputFolder(out, command=command)
    run_dir = f"jury-{method}"
    jury_path = folder.claim(f"{run_dir}/{JURY_NAME}", WRITER)
    first = members[0].results
    records = [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in combined.predictions.items()]
    dims = {d for _, d in combined.predictions}
    rates = {
        d: float(np.mean([p is not None for (_, dd), p in combined.predictions.items() if dd == d]))
        for d in DIMENSION_KEYS
        if d in dims
    }
    written = write_run(
        folder,
        run_dir,
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
        references=references,
        parse_rates=rates,
        n_bootstrap=n_bootstrap,
        seed=seed,
        resample=resample,
    )
    record = {**combined.record, "name": name}
    if references:
        record["versus_best_member"] = compare_with_best(
            combined.predictions,
            members,
            references,
            n_bootstrap=n_bootstrap,
            seed=seed,
            resample=resample,
            names=names,
        )
    write_atomic(jury_path, json.dumps(json_safe(record), indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return JuryResult(name, written.results_path, jury_path, written.results, record)


def run_jury(
    runs: Sequence[str | Path],
    out: str | Path,
    *,
    method: str,
    references: str | Path | None = None,
    fit: Sequence[str | Path] | None = None,
    missing: str = DEFAULT_JURY_MISSING,
    folds: int = DEFAULT_JURY_FOLDS,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    resample: str = DEFAULT_RESAMPLE,
) -> JuryResult:
    """`mis-bench jury`: a new system from several systems' predictions on the same pairs (`method` mean, median
    or stacked NNLS weights), written to `out` as a system like any other (`predictions.jsonl`, `results.json`
    marked a combination of its members, and `jury.json`: how it was made and a paired comparison with its best
    member on the same resamples). Members on different builds or splits are refused in one line."""
    members = [read_member(path) for path in runs]
    if method == "stacked" and references is None:
        raise UsageError("a stacked jury is fitted to gold", where="--references", hint="pass the build or labels")
    build = _build(references)
    _, split = check_members(members, build=build)
    gold = _references(references, split) if references is not None else {}
    fit_members = [read_member(path) for path in fit] if fit else None
    if fit_members:
        if build is None:
            raise UsageError("--fit needs the build the runs were made on", where="--references", hint="pass it")
        check_members(fit_members, what="fit set", build=build)
    fit_gold = _references(references, fit_members[0].data[1]) if fit_members else None
    combined = combine_members(
        members, method, gold, missing=missing, fit=fit_members, fit_references=fit_gold, folds=folds
    )
    return write_jury(out, members, combined, gold, n_bootstrap=n_bootstrap, seed=seed, resample=resample)


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

"""The real leaderboard from the authors' public files (`mis-bench leaderboard --from-authors DIR`), as a Markdown
page: the docs' "Real leaderboard" page is this command's output.

Two boards, each built by `build_leaderboard` from submission files, so ranked by the same rules as any
submission (overall ICC, then mean ICC; the `mean` floor shown, never ranked):

- on the authors' own test pairs (the row-level `paper-rows` split, which LEAKS: a test video's other dimensions
  are in training): their three Table 4 systems (the committed prediction files, null where a pair was not
  asked), the text ridge and the `mean` floor fitted on their training rows;
- on the paper's stated video-level split (`mis-bench build`'s default, seed 0): the text ridge and the floor.

Then the paper's Table 3, reported and not rescored (its predictions are not public).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from eval_scripts.formats.results import RunRecord
from eval_scripts.leaderboard.juries import JURY_BACKEND
from eval_scripts.leaderboard.page import rank_text
from eval_scripts.leaderboard.references import BoardReferences
from eval_scripts.leaderboard.scoring import build_leaderboard
from eval_scripts.report.formatting import withheld_cell
from mis_bench_dataset.dimensions import DIMENSIONS
from mis_bench_dataset.paper_results import TABLE3, TABLE4
from mis_bench_dataset.release.provenance import CODING, PUBLIC_FILES, TRANSCRIPTS, describe_source, source_record
from mis_bench_dataset.splits import PAPER_ROWS
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.numbers import MISSING, ci_pct, num, pct
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)

PAGE_NAME = "real-leaderboard.md"
JSON_NAME = "real-leaderboard.json"
WRITER = "leaderboard-from-authors"
AUTHORS_BACKEND = "authors' predictions file"
SETTING = {"modality": "video+text", "prompt_style": "paper", "input_source": "raw"}  # Qwen2.5-VL on video + text


def _file(folder: Path, name: str) -> Path:
    path = folder / name
    if not path.is_file():
        known = next(f for f in PUBLIC_FILES if f.name == name)
        raise DataError(f"no {name} in the folder", where=str(folder), hint=f"`mis-bench fetch`, or `{known.git_show}`")
    return path


def _authors_results(handle, folder: Path, condition, work: Path) -> Path:
    """One Table 4 file as a results JSON on the build's test split: its asked pairs, null elsewhere."""
    from eval_scripts.harness.run_writer import write_run
    from mis_bench_dataset.dataset.loading import gold_references
    from mis_bench_dataset.dimensions import DIMENSION_KEYS
    from mis_bench_dataset.protocol import FewShot, setting_record
    from mis_bench_dataset.toolkit.ownership import OutputFolder
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file

    path = _file(folder, condition.file)
    asked = predictions_to_mapping(read_prediction_file(path).records)
    test_rows = list(handle.features("test").rows())
    references = gold_references(test_rows)
    videos = sorted({str(row["video_id"]) for row in test_rows})
    records = [{"video_id": v, "dimension": k, "prediction": asked.get((v, k))} for v in videos for k in DIMENSION_KEYS]
    gold_pairs = {k: [p for p in references if p[1] == k] for k in DIMENSION_KEYS}
    rates = {k: sum(asked.get(p) is not None for p in pairs) / len(pairs) for k, pairs in gold_pairs.items() if pairs}
    system = {
        "model": f"Qwen2.5-VL-7B-Instruct, {condition.title} (Table 4)",
        "backend": AUTHORS_BACKEND,
        "decoding": {},
        "package_versions": {},
        "description": f"the authors' {condition.file} ({describe_source(source_record(path)) or 'a modified file'})",
    }
    written = write_run(
        OutputFolder(work, command="leaderboard"),
        condition.key,
        record=RunRecord(
            system=system,
            setting=setting_record(
                SETTING["modality"], SETTING["prompt_style"], SETTING["input_source"], few_shot=FewShot(k=0)
            ),
            dataset=handle.record("test"),
            predictions=records,
            parse_rates=rates,
        ),
        references=references,
        resampling=ResamplingOptions(n_bootstrap=0),
    )
    return written.results_path


# The juries of the paper-rows board: the authors' two systems that answer every pair and the text ridge.
JURY_MEMBERS = (("mis_raft", "MIS-RAFT"), ("raw", "Raw"), ("ridge", "text ridge"))
JURY_FOLDS = 5


def _juries(handle, members: Mapping[str, Path], work: Path, *, n_bootstrap: int, seed: int) -> list[Any]:
    """mean, median and stacked (cross-fitted by clinician folds) juries of `JURY_MEMBERS`, as results files."""
    from eval_scripts.leaderboard.juries import check_members, combine_members, read_member, write_jury
    from mis_bench_dataset.dataset.loading import gold_references

    references = gold_references(list(handle.features("test").rows()))
    jury_members = [read_member(members[key]) for key, _ in JURY_MEMBERS]
    check_members(jury_members, build=handle)
    juries = []
    for method in ("mean", "median", "stacked"):
        combined = combine_members(jury_members, method, references, folds=JURY_FOLDS if method == "stacked" else None)
        juries.append(
            write_jury(
                work,
                jury_members,
                combined,
                references,
                resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed),
                command="leaderboard",
                names=[name for _, name in JURY_MEMBERS],
            )
        )
    return juries


def _jury_summary(jury) -> dict[str, Any]:
    versus = jury.record["versus_best_member"]
    return {
        "name": jury.name,
        "method": jury.record["method"],
        "best_member": versus["best_member"],
        "mean_icc": versus["mean_icc"]["icc_a"],
        "best_member_mean_icc": versus["mean_icc"]["icc_b"],
        "delta": versus["mean_icc"]["delta"],
        "delta_ci": versus["mean_icc"]["delta_ci"],
        "p_value": versus["mean_icc"]["p_value"],
        "resampling": versus["meta"]["resampling"],
        "fit": (jury.record.get("fit") or {}).get("how"),
    }


def _board(handle, results: list[Path], work: Path, *, n_bootstrap: int, seed: int) -> dict[str, Any]:
    """Package each results file and rank them with `build_leaderboard` against the build's test gold."""
    from eval_scripts.formats.submission import package_submission
    from mis_bench_dataset.dataset.loading import gold_references

    submissions = work / "submissions"
    for path in results:
        package_submission(path, submissions, command="leaderboard")
    references = gold_references(list(handle.features("test").rows()))
    fingerprints = handle.fingerprints("test")
    return build_leaderboard(
        submissions,
        BoardReferences(references, fingerprints, None),
        split="test",
        resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed),
    )


def _baseline_results(handle, work: Path) -> list[Path]:
    """The text ridge and the `mean` floor fitted on the build's train split, as `mis-bench run` runs them."""
    from eval_scripts.baselines.baseline_run import run_baseline

    runs = [
        run_baseline(handle, work, baseline=name, modality="text", resampling=ResamplingOptions(n_bootstrap=0))
        for name in ("features", "mean")
    ]
    return [run.results_path for run in runs]


def authors_leaderboard(
    folder: str | Path,
    transcripts: str | Path | None = None,
    *,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """Both boards and the files they came from (see the module docstring)."""
    from eval_scripts.baselines.on_the_fly import temporary_build
    from mis_bench_dataset.release.labels import read_labels

    folder = Path(folder)
    transcripts = Path(transcripts) if transcripts is not None else _file(folder, TRANSCRIPTS.name)
    labels = read_labels(_file(folder, CODING.name))
    boards = {}
    with _quiet(), tempfile.TemporaryDirectory(prefix="mis-bench-authors-") as tmp:
        for scheme in (PAPER_ROWS, "video"):
            work = Path(tmp) / scheme
            with temporary_build(labels, transcripts, split_by=scheme) as handle:
                results = _baseline_results(handle, work / "runs")
                juries = []
                if scheme == PAPER_ROWS:
                    authors = {c.key: _authors_results(handle, folder, c, work / "authors") for c in TABLE4}
                    members = {**authors, "ridge": results[0]}
                    juries = _juries(handle, members, work / "juries", n_bootstrap=n_bootstrap, seed=seed)
                    results = [*authors.values(), *results, *(jury.results_path for jury in juries)]
                boards[scheme] = _board(handle, results, work, n_bootstrap=n_bootstrap, seed=seed)
                if juries:
                    boards[scheme]["juries"] = [_jury_summary(jury) for jury in juries]
                boards[scheme]["n_test_pairs"] = len(_test_pairs(handle))
    paths = [folder / CODING.name, transcripts, *(folder / c.file for c in TABLE4)]
    return {"boards": boards, "files": [source_record(p) for p in paths], "n_bootstrap": n_bootstrap, "seed": seed}


@contextlib.contextmanager
def _quiet():
    """The runs' and packages' INFO lines name temporary folders gone after the command: warnings only."""
    loggers = [logging.getLogger(name) for name in ("eval_scripts", "mis_bench_dataset")]
    levels = [log.level for log in loggers]
    for log in loggers:
        log.setLevel(logging.WARNING)
    try:
        yield
    finally:
        for log, level in zip(loggers, levels, strict=True):
            log.setLevel(level)


def _test_pairs(handle):
    from mis_bench_dataset.dataset.loading import gold_references

    return gold_references(list(handle.features("test").rows()))


# ------------------------------------------------------------------------------------------ the page


def _system_name(entry: Mapping[str, Any]) -> str:
    if entry["backend"] == AUTHORS_BACKEND:
        return entry["model"]
    if entry["backend"] == JURY_BACKEND:
        return f"{entry['model']} *(combination)*"
    return {"baseline/features-ridge": "Text ridge (`features` baseline, text)", "baseline/train-mean": "`mean` floor"}[
        entry["model"]
    ]


def _board_table(board: Mapping[str, Any]) -> list[str]:
    head = "| # | System | Overall ICC % | Mean ICC % [95% CI] | " + " | ".join(d.abbreviation for d in DIMENSIONS)
    lines = [head + " | Halo (gold) | p vs leader (mean ICC) |", "|---" * (len(DIMENSIONS) + 6) + "|"]
    for entry in [*board["entries"], *board.get("floors", [])]:
        scores = entry["scores"]
        dims = [pct((scores["dimensions"].get(d.key) or {}).get("icc")) for d in DIMENSIONS]
        halo = scores.get("halo") or {}
        model, gold = ((halo.get(side) or {}).get("value") for side in ("model", "gold"))
        halo_text = f"{num(model, 2)} ({num(gold, 2)})"
        p_value = (entry.get("vs_leader") or {}).get("mean_icc_p_value")
        p_text = "leader" if entry.get("leader") else (MISSING if entry["rank"] is None else num(p_value, 4))
        rank = rank_text(entry)
        withheld = (scores.get("withheld") or {}).get("mean_icc_ci")  # the one rule: mis_icc_metric.reporting_floor
        mean_ci = f"({withheld_cell(withheld)})" if withheld else ci_pct(scores.get("mean_icc_ci"))
        mean = f"{pct(scores.get('mean_icc'))} {mean_ci}"
        cells = [rank, _system_name(entry), pct(scores["overall"].get("icc")), mean, *dims, halo_text, p_text]
        lines.append("| " + " | ".join(cells) + " |")
    for entry in board.get("unranked", []):  # listed with its coverage and no figure, as on any board
        coverage = f"unranked: {entry['n_answered']:,} of {entry['n_pairs']:,} pairs answered ({entry['reason']})"
        lines.append(
            "| " + " | ".join(["–", _system_name(entry), MISSING, coverage, *[MISSING] * (len(DIMENSIONS) + 2)]) + " |"
        )
    return lines


def _jury_lines(board: Mapping[str, Any]) -> list[str]:
    """What the combinations on the board are, and each against its best member."""
    juries = board.get("juries") or []
    if not juries:
        return []
    plan = juries[0]["resampling"]
    lines = [
        "### Juries: combinations of the systems above",
        "",
        "The rows marked *(combination)* are no model of their own: each is `mis-bench jury` over MIS-RAFT, Raw "
        "and the text ridge on the same pairs (mean, median, or non-negative weights summing to one per dimension, "
        f"fitted by least squares and cross-fitted over {JURY_FOLDS} clinician folds so no pair is scored by weights "
        "that saw its gold). Against the best member (paired, the same resamples for both: "
        f"{plan['method']}, {plan['n_resamples']:,} resamples, seed {plan['seed']}, {plan['n_clusters']} clinicians):",
        "",
        "| Jury | Mean ICC % | Best member | Its mean ICC % | Difference [95% CI] | p |",
        "|---|---|---|---|---|---|",
    ]
    for jury in juries:
        lines.append(
            f"| {jury['name']} | {pct(jury['mean_icc'])} | {jury['best_member']} | "
            f"{pct(jury['best_member_mean_icc'])} | {pct(jury['delta'])} {ci_pct(jury['delta_ci'])} | "
            f"{num(jury['p_value'], 4)} |"
        )
    return [*lines, ""]


def _table3_lines() -> list[str]:
    lines = [
        "| Model | Size | Inputs | " + " | ".join(d.abbreviation for d in DIMENSIONS) + " | Mean |",
        "|---" * (len(DIMENSIONS) + 4) + "|",
    ]
    for row in TABLE3:
        cells = [row.model, row.size, row.inputs, *(f"{row.icc[d.key]:.1f}" for d in DIMENSIONS), row.mean_text]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def render_authors_page(doc: Mapping[str, Any], command: str) -> str:
    """The Markdown page: no timestamp, no local path, so regenerating it from the same files gives the same text."""
    rows, video = doc["boards"][PAPER_ROWS], doc["boards"]["video"]
    files = "; ".join(
        f"`{f['file']}` ({describe_source(f) or 'not the published file, sha256 ' + f['sha256'][:12]})"
        for f in doc["files"]
    )
    lines = [
        "# Real leaderboard",
        "",
        "<!-- Generated by `mis-bench leaderboard --from-authors`: do not edit by hand. -->",
        "",
        "The real MIS-Bench text benchmark, scored from the authors' public files by this toolkit: "
        f"{files}. Generated with `{command}`.",
        "",
        f"Ranked as any submission is (`mis-bench leaderboard`: overall ICC(3,1), then mean ICC; the `mean` floor is "
        f"shown, never ranked). CIs: 95% percentile bootstrap over the test videos' clinicians (each with all its "
        f"videos), {doc['n_bootstrap']:,} resamples, "
        f"seed {doc['seed']}. Halo: the mean correlation between dimensions over videos, the expert gold's on the "
        "same pairs in brackets ([Agreement](agreement.md#halo)). p vs leader: paired bootstrap of the mean ICC.",
        "",
        "## The authors' test pairs (row-level split: it leaks)",
        "",
        f"**LEAKING SPLIT (paper-rows)**: the {rows['n_test_pairs']} (video, dimension) test pairs of the paper's "
        "Table 4, split by row as the authors' code split them, so a test video's other dimensions (and its "
        "transcript) are in training. No video has all eight dimensions here, so no overall ICC: the ranking "
        "falls to the mean ICC. Only a system that answers every pair is ranked (an unanswered pair is not dropped "
        "from its score: [Reports](reports.md)), so a file with a blank answer is listed unranked, with its coverage. "
        "The three Qwen2.5-VL-7B-Instruct systems are the authors' committed prediction "
        "files; the ridge and the floor are fitted on the authors' training rows, per dimension on transcripts "
        "alone, so a test pair's gold never reaches its own prediction (see [Reproducing](reproducing.md)).",
        "",
        *_board_table(rows),
        "",
        *_jury_lines(rows),
        "## The video-level split (the paper's stated rule)",
        "",
        f"`mis-bench build`'s default split by video (seed 0): {video['n_videos']} test videos, all eight dimensions "
        "each. The authors' predictions cover other pairs, so only the toolkit's baselines are on this board.",
        "",
        *_board_table(video),
        "",
        "## The paper's Table 3: reported, not rescored",
        "",
        "Each zero-shot model's best configuration as the paper prints it (ICC(3,1) %; the mean over the eight "
        "dimensions, as §4.2 gives it). Their predictions are not public, so these numbers are **reported, not "
        "rescored**, and on the paper's own split of videos: they are not comparable cell by cell with the boards "
        "above.",
        "",
        *_table3_lines(),
        "",
    ]
    return "\n".join(lines)


def write_authors_page(doc: Mapping[str, Any], folder, command: str) -> tuple[Path, Path]:
    """The page and its data into `folder` (an OutputFolder), together or not at all."""
    import json

    from mis_bench_dataset.toolkit.atomic import AtomicFiles

    page_path, json_path = folder.claim_all([PAGE_NAME, JSON_NAME], WRITER)
    with AtomicFiles() as files:
        files.write(page_path, render_authors_page(doc, command))
        files.write(json_path, json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    return page_path, json_path

"""Score every submission in a folder against hidden labels; never stop on a bad one.

Each file is loaded strictly, validated (schema, known videos, full coverage of
the split, and, when the references are a build, the dataset fingerprint), screened for its identity and
coverage (`identity`), and scored by the metric from its predictions; the `scores` a
submitter sent are ignored. A file that fails any step is listed as rejected
with its reasons; an unexpected crash is caught and reported the same way, so
one submission can never hide another. What is published of the scores is `disclosure`'s rule.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.formats.results import is_floor_baseline
from eval_scripts.formats.submission import (
    DEFAULT_MAX_BYTES,
    MAX_REASON_CHARS,
    SubmissionError,
    fingerprint_reason,
    load_submission,
    predictions_mapping,
    validate_results,
)
from eval_scripts.leaderboard.disclosure import (
    MIN_PUBLISHED_VIDEOS,
    SIGNIFICANT_DIGITS,
    published_comparison,
    published_scores,
    significant,
)
from eval_scripts.leaderboard.identity import Candidate, is_trusted, screen
from eval_scripts.leaderboard.received import Request, file_request
from eval_scripts.leaderboard.references import BoardReferences
from mis_bench_dataset.dimensions import DIMENSIONS, HUMAN_CEILING
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.progress import progress
from mis_bench_dataset.toolkit.text_safety import normal_name, safe_text
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

logger = logging.getLogger(__name__)

LEADERBOARD_FORMAT_VERSION = "1.0"
References = Mapping[tuple[str, str], "float | None"]


RANKING_RULE = (
    "Ranked: entries that answer every video and dimension of the split with a score, by overall ICC (the "
    "paper's Table 3 criterion), then mean ICC, both at the published three significant digits; entries equal on "
    "both share a rank (shown as 2=; listed in the order the board received them, the first compared with by the "
    "rest). A parse failure is an unanswered pair: an entry with any is "
    "listed unranked with its coverage (the paper's overall rule excludes unparsed videos for a model's own "
    "report; a ranking must not let a model choose which videos count)."
)


def _load_all(
    paths: list[Path],
    video_ids: set[str],
    split: str,
    max_bytes: int,
    fingerprints: Collection[str] | None,
    requests: Mapping[str, Request],
) -> tuple[list[Candidate], list[dict[str, Any]]]:
    accepted: list[Candidate] = []
    rejected: list[dict[str, Any]] = []
    for path in progress(paths, desc="validating submissions", unit="file", show=len(paths) >= 5):
        shown = safe_text(path.name, 200)
        try:
            results = validate_results(
                load_submission(path, max_bytes=max_bytes), video_ids=video_ids, split=split, source=shown
            )
            mismatch = (
                None if fingerprints is None else fingerprint_reason(results["dataset"]["fingerprint"], fingerprints)
            )
            if mismatch is not None:
                rejected.append({"file": shown, "reasons": [mismatch]})
                continue
            request = requests.get(path.name) or file_request(path)
            accepted.append(Candidate(path.name, results, predictions_mapping(results), request))
        except SubmissionError as err:
            rejected.append({"file": shown, "reasons": err.reasons})
        except Exception as err:  # noqa: BLE001 - a crash must not hide the other submissions
            logger.exception("unexpected error while validating %s", shown)
            reason = f"internal error while validating: {type(err).__name__}: {err}"
            rejected.append({"file": shown, "reasons": [safe_text(reason, MAX_REASON_CHARS)]})
    return accepted, rejected


def _entry(sub: Candidate, scores: dict[str, Any], synthetic: bool | None) -> dict[str, Any]:
    """A scored entry; every text a submitter wrote made valid Unicode (the page, CSV and JSON are UTF-8)."""
    system, setting, dataset = sub.results["system"], sub.results["setting"], sub.results["dataset"]
    return {
        "id": safe_text(Path(sub.file).stem, 200),
        "file": safe_text(sub.file, 200),
        "model": safe_text(normal_name(system["model"])),  # shown as compared (NFKC)
        "backend": safe_text(system["backend"]),
        # How the model was trained (its folder's setting.json, recorded by the run), "" when not said.
        "method": safe_text(system.get("method") or "", 100),
        "modality": setting["modality"],
        "prompt_style": setting["prompt_style"],
        "few_shot_k": setting["few_shot_k"],
        "input_source": safe_text(setting["input_source"]),
        # What tells it from another run of the same model and setting (`3 samples`, `max-tokens 2`), or "".
        "options": sub.options,
        "dataset_fingerprint": safe_text(dataset["fingerprint"]),
        # The references' flag; only where they have none (a labels file) may the submitter's claim add it.
        "synthetic": bool(dataset.get("synthetic", False)) if synthetic is None else synthetic,
        # The `mean` baseline: shown as a reference line (board["floors"]), never ranked among the systems.
        "floor": is_floor_baseline(system),
        **sub.request.to_dict(),
        # Recomputed by the metric from the predictions, like the scores: never the submitter's claim.
        "parse_rates": scores.get("parse_rates") or {},
        # The coverage rule of mis_icc_metric.coverage (a leaderboard admits only full coverage of the split).
        "coverage": scores.get("coverage"),
        # Why rows have no score (unparsed / truncated at the token limit / failed), as the run recorded it
        # (schema 1.1; checked to add up to the predictions); null for baselines.
        "outcomes": sub.results.get("outcomes"),
        "scores": scores,
    }


def _published_key(entry: Mapping[str, Any]) -> tuple:
    """Published overall ICC, then mean ICC (descending, undefined last): entries equal here are tied."""
    overall = significant(entry["scores"]["overall"].get("icc"))
    mean = significant(entry["scores"].get("mean_icc"))
    return (overall is None, -(overall or 0.0), mean is None, -(mean or 0.0))


def _rank_key(pair: tuple[dict[str, Any], Candidate]) -> tuple:
    """The published figures, then the earlier received (the order among tied entries, not a rank)."""
    entry, sub = pair
    return (*_published_key(entry), sub.request.received_at, sub.file)


def _shared_ranks(entries: list) -> None:
    """Competition ranks (1, 2=, 2=, 4): entries equal on the published figures share a rank, never one above
    the other by the order they arrived; `leader` marks the first listed, whom the others are compared with."""
    keys = [_published_key(entry) for entry, _ in entries]
    for position, (entry, _) in enumerate(entries):
        entry["rank"] = keys.index(keys[position]) + 1
        entry["tied"] = keys.count(keys[position]) > 1
        entry["leader"] = position == 0


def _vs_leader(comparison: Mapping[str, Any]) -> dict[str, Any]:
    """The parts of mis_icc_metric.paired_comparison(leader, entry) the page shows.

    `delta` is leader minus entry (positive: the leader is ahead); p-values are two-sided.
    """
    overall = comparison["overall"]
    return {
        "p_value": overall["p_value"],
        "delta": overall["delta"],
        "delta_ci": overall["delta_ci"],
        "n": overall["n"],
        "mean_icc_p_value": comparison["mean_icc"]["p_value"],
        # why the p-value or the CI is withheld (`mis_icc_metric.reporting_floor`), shown where the number stands
        "withheld": dict(overall.get("withheld") or {}),
        "dimension_p_values": {key: block["p_value"] for key, block in comparison["dimensions"].items()},
    }


def _submission_files(submissions_dir: Path) -> list[Path]:
    """The folder's `.json` files; hidden files (the output manifest, editor backups) are never submissions."""
    if not submissions_dir.is_dir():
        raise DataError(
            f"the submissions folder {submissions_dir} does not exist",
            where="SUBMISSIONS_DIR",
            hint="give the folder `mis-bench submit --out` wrote",
        )
    return sorted(
        p
        for p in submissions_dir.iterdir()
        if p.is_file() and p.suffix.lower() == ".json" and not p.name.startswith(".")
    )


def _score_all(accepted: list[Candidate], references, rejected: list, plan: tuple[int, int, str], synthetic) -> list:
    """(entry, submission) for each accepted file it could score (unrounded); one that fails is added to
    `rejected`."""
    from eval_scripts.report.inputs import predictions_on
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import score_predictions

    n_bootstrap, seed, resample = plan
    entries = []
    for sub in progress(accepted, desc="scoring submissions", unit="file", show=len(accepted) >= 5):
        try:
            scores = json_safe(
                score_predictions(
                    predictions_on(sub.predictions, references),  # a pair without gold is not scored
                    references,
                    resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed, resample=resample),
                )
            )
            entries.append((_entry(sub, scores, synthetic), sub))
        except Exception as err:  # noqa: BLE001
            logger.exception("scoring failed for %s", sub.file)
            reason = safe_text(f"could not be scored: {type(err).__name__}: {err}", MAX_REASON_CHARS)
            rejected.append({"file": safe_text(sub.file, 200), "reasons": [reason]})
    return entries


def _rank_against_leader(entries: list, references, plan: tuple[int, int, str]) -> None:
    """Number the ranked entries and compare each with the leader (a paired bootstrap on the same videos)."""
    from eval_scripts.report.inputs import predictions_on
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import paired_comparison

    n_bootstrap, seed, resample = plan
    _shared_ranks(entries)
    for entry, sub in entries:
        if entry["leader"]:
            entry["vs_leader"] = None
            continue
        try:
            comparison = paired_comparison(
                predictions_on(entries[0][1].predictions, references),
                predictions_on(sub.predictions, references),
                references,
                resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed, resample=resample),
            )
            entry["vs_leader"] = _vs_leader(json_safe(comparison))
        except Exception as err:  # noqa: BLE001 - a failed comparison only blanks the p-value
            logger.warning("paired comparison %s vs leader failed: %s", sub.file, err)
            entry["vs_leader"] = {
                "p_value": None,
                "delta": None,
                "delta_ci": None,
                "error": safe_text(f"{type(err).__name__}: {err}", MAX_REASON_CHARS),
            }


def _publish(entries: list[dict[str, Any]], *, hidden: bool, n_videos: int) -> None:
    """Replace each entry's figures by what the board publishes of them (`disclosure`)."""
    for entry in entries:
        entry["scores"] = published_scores(entry["scores"], hidden=hidden, n_videos=n_videos)
        entry["parse_rates"] = significant(entry["parse_rates"])
        if entry.get("vs_leader") is not None:
            entry["vs_leader"] = published_comparison(entry["vs_leader"], n_videos=n_videos)


@dataclass(frozen=True)
class BoardRules:
    """How a board admits and shows submissions: the largest file it reads (`max_bytes`), whether the labels are
    public (False: a hidden-label board: only agreement figures, one ranked submission per account a day), and the
    operators' accounts, trusted to rank a floor baseline or resubmit (`trusted_accounts`)."""

    max_bytes: int = DEFAULT_MAX_BYTES
    labels_public: bool = True
    trusted_accounts: Collection[str] = ()


def build_leaderboard(
    submissions_dir: str | Path,
    references: References | BoardReferences,
    *,
    split: str = "test",
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
    rules: BoardRules = BoardRules(),
    requests: Mapping[str, Request] | None = None,
) -> dict[str, Any]:
    """The leaderboard as a JSON-ready dict: ranked and unranked entries, rejected files, the human ceiling.

    Ranked by `RANKING_RULE`; each ranked entry carries a paired bootstrap comparison against the leader on
    the same videos. The `mean` floor baseline is scored but not ranked: it is listed under `floors`.
    `references`: the gold (video, dimension) -> score, or the board's `BoardReferences`
    (`references.read_board_references`) whose fingerprints and SYNTHETIC flag also apply: a submission
    recording another fingerprint is rejected, and the board's SYNTHETIC mark is the references' flag, never
    the submitter's (a plain mapping: not checked / the submitter's claim may add the mark).
    `rules`: what the board admits and shows (`BoardRules`). `requests`: file name -> who sent it and when
    (`received`; default: the operator's, at its mtime).
    """
    if not isinstance(references, BoardReferences):
        references = BoardReferences(references, None, None)
    references, fingerprints, synthetic = references.labels, references.fingerprints, references.synthetic
    n_bootstrap, seed, resample = resampling.n_bootstrap, resampling.seed, resampling.resample
    max_bytes, labels_public, trusted_accounts = rules.max_bytes, rules.labels_public, rules.trusted_accounts
    paths = _submission_files(Path(submissions_dir))
    video_ids = {video for video, _ in references}
    accepted, rejected = _load_all(paths, video_ids, split, max_bytes, fingerprints, requests or {})
    screened = screen(accepted, references, hidden=not labels_public, trusted_accounts=trusted_accounts)
    rejected += screened.rejected
    plan = (n_bootstrap, seed, resample)
    entries = _score_all(screened.ranked, references, rejected, plan, synthetic)
    floors = [entry for entry, sub in entries if entry["floor"] and is_trusted(sub.request, trusted_accounts)]
    for entry in floors:
        entry["rank"], entry["vs_leader"], entry["tied"], entry["leader"] = None, None, False, False
    entries = sorted((pair for pair in entries if not pair[0]["floor"]), key=_rank_key)
    _rank_against_leader(entries, references, plan)
    ranked = [entry for entry, _ in entries]
    _publish([*ranked, *floors], hidden=not labels_public, n_videos=len(video_ids))
    shown = [*ranked, *floors, *screened.unranked]
    return {
        "format_version": LEADERBOARD_FORMAT_VERSION,
        "generated_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "split": split,
        "n_videos": len(video_ids),
        "n_common_videos": len(video_ids) if ranked else 0,  # every ranked entry answers every video
        "n_bootstrap": n_bootstrap,
        "seed": seed,
        "resample": resample,
        # The references' flag when they have one; else any entry whose submitter marked it.
        "synthetic": bool(synthetic) if synthetic is not None else any(e.get("synthetic") for e in shown),
        "labels_public": labels_public,
        "ranking_rule": RANKING_RULE,
        "significant_digits": SIGNIFICANT_DIGITS,
        "min_published_videos": MIN_PUBLISHED_VIDEOS,
        "references_fingerprints": None if fingerprints is None else sorted(fingerprints),
        "dimensions": [{"key": d.key, "name": d.name, "abbreviation": d.abbreviation} for d in DIMENSIONS],
        "human_ceiling": {key: {"icc": c.icc, "icc_ci": [c.ci_low, c.ci_high]} for key, c in HUMAN_CEILING.items()},
        "entries": ranked,
        "floors": floors,
        "unranked": screened.unranked,
        "rejected": sorted(rejected, key=lambda r: r["file"]),
    }

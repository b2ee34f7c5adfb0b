"""`mis-bench trust`: one page that answers "can I use this judge?" from a judge file and expert labels.

The clinician's case: a judge scored every video, experts rated a few. The page gives a verdict in plain words by
the rules stated in `RULES` (agreement against the human ceiling, calibration coverage by clinician, interval
width against the no-judge one, the PPI++ gain), the one number to cite with its CI and how it was resampled, what
the judge is biased by (time point, stimulus, transcript length), the flags to read before relying on it, and the
sample sizes to go further. Every number comes from the toolkit's functions, the ones the commands call:
`score_predictions` (`score`), `agreement_by` (`score --by`), `fit_calibrator` / `Calibrator.apply` and
`conformal_quantile` (`calibrate`), `estimate_means` (`estimate`), `plan_labels` / `plan_icc` (`plan`). Below the
floors of `mis_icc_metric.reporting_floor` a figure is withheld and the page shows why.

For research on judges only, not therapist supervision, training, hiring or patient-facing evaluation.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mis_bench_dataset.dimensions import (
    DIMENSION_BY_KEY,
    DIMENSION_KEYS,
    HUMAN_CEILING,
    HUMAN_CEILING_MEAN,
    SCORE_MAX,
    SCORE_MIN,
)
from mis_bench_dataset.splits import ALL_SPLITS
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_SEED, MIN_PLAN_RESAMPLES
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.wording import HEADLINE_NUMBERS, RESEARCH_USE
from mis_icc_metric.calibrator_file import DEFAULT_COVERAGE
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)

Key = tuple[str, str]
TRUST_COMMAND = "mis-bench trust"
CARD_FILES = ("trust.html", "trust.json")
WRITER = "trust"

# ---------------------------------------------------------------------------------------------- the rules
# The verdict's thresholds, each stated on the page (`RULES`) and in docs/trust-card.md.
CEILING_SHARE = 0.75  # agreement: the judge's ICC(3,1) reaches this share of the human ceiling (Table 2) ...
CEILING_DIMENSIONS = 6  # ... on at least this many of the eight dimensions
COVERAGE_SLACK = 0.05  # calibration: pooled coverage at least the nominal level minus this ...
CLINICIAN_COVERAGE = 0.80  # ... and a clinician whose pairs are covered less often than this ...
CLINICIAN_CHANCE = 0.05  # ... and less often than chance allows at the nominal level (one-sided binomial p) ...
CLINICIANS_UNDER = 0.10  # ... at most this share of the labelled clinicians
WIDTH_DIMENSIONS = 6  # intervals: the judge's narrower than the no-judge one on at least this many dimensions
PPI_GAIN = 0.90  # estimates: PPI++ CIs at most this wide, relative to experts only, averaged over dimensions
BIAS_LEVEL = 0.05 / 3  # biased by: the equal-bias tests' level (0.05, Bonferroni over the three groupings)
CALIBRATION_FOLDS = 3  # fit, calibrate and evaluate on three disjoint sets of clinicians, rotated
MEAN_HALF_WIDTH = 0.05  # going further: expert labels for a cohort mean's CI of +/- this many score points
ICC_HALF_WIDTH = 0.10  # going further: videos and clinicians for an ICC(3,1) CI of +/- this

RULES = {
    "agreement": f"the judge's ICC(3,1) reaches {CEILING_SHARE:.0%} of the human ceiling (paper Table 2, the raters' "
    f"own ICC) on at least {CEILING_DIMENSIONS} of the 8 dimensions",
    "calibration": f"its calibrated intervals cover at least the nominal level minus {COVERAGE_SLACK * 100:g} points "
    f"on held-out clinicians, and at most {CLINICIANS_UNDER:.0%} of the clinicians are covered less than "
    f"{CLINICIAN_COVERAGE:.0%} of the time and less often than chance allows (one-sided binomial p < "
    f"{CLINICIAN_CHANCE:g} over the clinician's pairs at the nominal level)",
    "width": f"its intervals are narrower than the no-judge ones (the mean of the fit videos plus or minus the same "
    f"conformal quantile) on at least {WIDTH_DIMENSIONS} of the 8 dimensions",
    "ppi": f"PPI++ CIs of a cohort mean are at most {PPI_GAIN:.0%} as wide as the experts-only ones (mean over the "
    "dimensions): the judge saves expert labels",
}
VERDICT_RULE = (
    "Yes: every rule holds. No: agreement and the PPI gain both fail. With care: otherwise, naming what the judge "
    "can be used for (single scores: agreement; per-video intervals: calibration and width; cohort means: PPI gain). "
    "Cannot tell yet: the agreement rule is withheld (too few labelled videos or clinicians)."
)
CITE = HEADLINE_NUMBERS["mean ICC"] + " (here on the videos the experts rated)"


@dataclass(frozen=True)
class CardInputs:
    """What the page is computed from: the judge on every video, the experts' gold on a few, and (from a build)
    each labelled video's transcript length in words."""

    judge: dict[Key, float | None]
    gold: dict[Key, float]
    lengths: dict[str, int] | None
    synthetic: bool
    judge_name: str
    experts_name: str

    @property
    def labelled_judge(self) -> dict[Key, float | None]:
        return {key: value for key, value in self.judge.items() if key in self.gold}


def read_card_inputs(judge: str | Path, experts: str | Path, split: str = ALL_SPLITS) -> CardInputs:
    """The judge file (any form `score` reads), the experts' labels (a build folder's `split`, or a labels file)
    and, from a build, the transcripts' lengths."""
    from eval_scripts.formats.data_names import any_synthetic
    from mis_icc_metric.predictions_io import predictions_to_mapping, read_prediction_file, read_references

    predicted = predictions_to_mapping(read_prediction_file(judge).records)
    gold = read_references(experts, split=split)
    lengths = _transcript_lengths(Path(experts), split) if Path(experts).is_dir() else None
    return CardInputs(predicted, gold, lengths, any_synthetic([experts, judge]), str(judge), str(experts))


def _transcript_lengths(build: Path, split: str) -> dict[str, int] | None:
    """Each video's transcript length in words, from the build's `scoring` rows (None: no transcripts)."""
    from mis_bench_dataset.dataset.handle import BuiltDataset

    handle = BuiltDataset.open(build)
    lengths: dict[str, int] = {}
    for name in handle.splits() if split == ALL_SPLITS else [split]:
        for row in handle.rows(name):
            text = row.get("transcript")
            if isinstance(text, str) and text.strip():
                lengths[str(row["video_id"])] = len(text.split())
    return lengths or None


# ---------------------------------------------------------------------------------------------- sections


def _agreement(inputs: CardInputs, n_bootstrap: int, seed: int) -> dict:
    """`score_predictions` on the labelled pairs, clinicians resampled: each dimension against its ceiling, and the
    number to cite (withheld below the floor)."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.reporting_floor import Support, degenerate_reason, withhold_reason
    from mis_icc_metric.scoring import score_predictions

    scored = json_safe(
        score_predictions(
            inputs.labelled_judge, inputs.gold, resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed)
        )
    )
    plan = scored["meta"].get("resampling") or {}
    n_videos, n_clusters = scored["meta"]["n_videos"], plan.get("n_clusters")
    ci = scored.get("mean_icc_ci")
    reason = withhold_reason(Support(n_videos, n_clusters, "clinician"))
    if reason is None and ci and ci[0] is not None:
        reason = degenerate_reason(ci[0], ci[1])
    if reason is None and not (ci and ci[0] is not None):
        reason = "no CI: " + (scored.get("overall", {}).get("note") or "the bootstrap gave none (--bootstrap 0?)")
    dimensions = {}
    for key, entry in scored["dimensions"].items():
        ceiling = HUMAN_CEILING[key].icc
        icc = entry.get("icc")
        dimensions[key] = {
            "abbreviation": DIMENSION_BY_KEY[key].abbreviation,
            "icc": icc,
            "icc_ci": entry.get("icc_ci"),
            "ceiling": ceiling,
            "share_of_ceiling": None if icc is None else icc / ceiling,
            "n": entry.get("n"),
        }
    cite = {
        "what": CITE,
        "value": scored.get("mean_icc"),
        "ci": None if reason else ci,
        "withheld": reason,
        "ceiling": HUMAN_CEILING_MEAN,
        "resampling": plan.get("method"),
        "n_resamples": plan.get("n_resamples"),
        "seed": plan.get("seed"),
        "n_videos": n_videos,
        "n_clinicians": n_clusters,
    }
    overall = scored.get("overall") or {}
    others = {
        "overall": {
            "value": overall.get("icc"),
            "what": HEADLINE_NUMBERS["Overall"],
        }
    }
    return {"cite": cite, "others": others, "dimensions": dimensions, "score": scored}


def _videos_and_clinicians(keys) -> tuple[list[str], list[str]]:
    from mis_bench_dataset.video_ids import parse_video_id

    videos = sorted({video for video, _ in keys})
    return videos, [parse_video_id(video).clinician for video in videos]


def _calibration(inputs: CardInputs, coverage: float, seed: int) -> dict:
    """Calibrated intervals on held-out clinicians: the labelled clinicians in `CALIBRATION_FOLDS` groups, each group
    evaluated with the map fitted on the next and the conformal quantile set on the one after (`fit_calibrator`,
    `Calibrator.apply`); coverage and width per dimension and per clinician, beside the no-judge interval."""
    from eval_scripts.baselines.crossval import clinician_folds
    from mis_icc_metric.calibration import fit_calibrator
    from mis_icc_metric.reporting_floor import Support, withhold_reason

    labelled = {k: v for k, v in inputs.labelled_judge.items() if v is not None}
    videos, clinicians = _videos_and_clinicians(labelled)
    out: dict[str, Any] = {"nominal": coverage, "n_videos": len(videos), "n_clinicians": len(set(clinicians))}
    reason = withhold_reason(Support(len(videos), len(set(clinicians)), "labelled"), "a calibration check")
    if reason is None and len(set(clinicians)) < CALIBRATION_FOLDS:
        reason = (
            f"{len(set(clinicians))} clinician(s); the check fits, calibrates and evaluates on {CALIBRATION_FOLDS} "
            "disjoint sets of clinicians"
        )
    if reason:
        return {**out, "withheld": reason}
    folds = clinician_folds([{"clinician": c} for c in clinicians], CALIBRATION_FOLDS, seed)
    fold_of = dict(zip(videos, folds.tolist(), strict=True))
    pairs = []  # (video, dim, covered, width, no-judge covered, no-judge width)
    try:
        for fold in range(CALIBRATION_FOLDS):
            part = [{k: v for k, v in labelled.items() if fold_of[k[0]] == (fold + shift) % 3} for shift in (1, 2, 0)]
            gold = [{k: inputs.gold[k] for k in p} for p in part]
            calibrator = fit_calibrator(part[0], gold[0], part[1], gold[1], coverage=coverage)
            for dim in calibrator.dimensions:
                yardstick = calibrator.no_judge[dim]  # the fit mean +/- its conformal quantile: calibrate's own
                low0 = max(SCORE_MIN, yardstick["center"] - yardstick["half_width"])
                high0 = min(SCORE_MAX, yardstick["center"] + yardstick["half_width"])
                for record in calibrator.apply({k: v for k, v in part[2].items() if k[1] == dim}):
                    truth = inputs.gold[(record["video_id"], dim)]
                    covered = record["lower"] <= truth <= record["upper"]
                    pairs.append(
                        (record["video_id"], dim, covered, record["upper"] - record["lower"])
                        + (low0 <= truth <= high0, high0 - low0)
                    )
    except DataError as err:
        return {**out, "withheld": f"the calibration check could not run: {err.what}"}
    return {**out, **_coverage_tables(pairs, fold_of, coverage)}


def _coverage_tables(pairs: list[tuple], fold_of: Mapping[str, int], nominal: float) -> dict:
    from scipy import stats

    from mis_bench_dataset.video_ids import parse_video_id

    covered = np.array([p[2] for p in pairs], dtype=float)
    by_dim = {}
    for dim in DIMENSION_KEYS:
        rows = [p for p in pairs if p[1] == dim]
        if rows:
            by_dim[dim] = {
                "abbreviation": DIMENSION_BY_KEY[dim].abbreviation,
                "n": len(rows),
                "coverage": float(np.mean([p[2] for p in rows])),
                "mean_width": float(np.mean([p[3] for p in rows])),
                "no_judge_coverage": float(np.mean([p[4] for p in rows])),
                "no_judge_width": float(np.mean([p[5] for p in rows])),
            }
    per_clinician: dict[str, list[bool]] = {}
    for video, _, hit, *_ in pairs:
        per_clinician.setdefault(parse_video_id(video).clinician, []).append(hit)
    clinicians = {
        c: {"n": len(h), "coverage": float(np.mean(h)), "p_chance": float(stats.binom.cdf(sum(h), len(h), nominal))}
        for c, h in sorted(per_clinician.items())
    }
    under = sorted(
        (c for c, e in clinicians.items() if e["coverage"] < CLINICIAN_COVERAGE and e["p_chance"] < CLINICIAN_CHANCE),
        key=lambda c: (clinicians[c]["coverage"], clinicians[c]["p_chance"]),
    )
    return {
        "method": f"{CALIBRATION_FOLDS} disjoint sets of the labelled clinicians (scikit-learn GroupKFold), each "
        "evaluated with the isotonic map fitted on the next and the conformal quantile set on the one after",
        "coverage": float(covered.mean()),
        "n_pairs": len(pairs),
        "dimensions": by_dim,
        "clinicians": clinicians,
        "n_clinicians_under": len(under),
        "share_clinicians_under": len(under) / len(clinicians),
        "worst": [{"clinician": c, **clinicians[c]} for c in under[:3]],
        "n_folds": len(set(fold_of.values())),
    }


def _estimates(inputs: CardInputs) -> dict:
    """`estimate_means` (PPI++ beside experts only and judge only) and whether the labelled set looks random."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.estimates import estimate_means
    from mis_icc_metric.reporting_floor import Support, withhold_reason

    videos, clinicians = _videos_and_clinicians(inputs.gold)
    n_videos, n_clinicians = len(videos), len(set(clinicians))
    # The gain is judged on widths that take videos as independent: it needs the labelled videos and clinicians
    # any clinician-resampled figure needs, and a labelled set that looks random (PPI++'s assumption).
    reason = withhold_reason(Support(n_videos, n_clinicians, "labelled"), "a PPI++ CI") or withhold_reason(
        Support(n_videos, n_clinicians, "clinician"), "the PPI++ gain"
    )
    try:
        result = json_safe(estimate_means(inputs.judge, inputs.gold))
    except DataError as err:
        return {"withheld": err.what, "labelled_set": labelled_set_check(None, err.what)}
    ratios = {}
    for key, block in result["dimensions"].items():
        classical = block["classical"]["width"]
        ratios[key] = block["ppi"]["width"] / classical if classical else None
    usable = [r for r in ratios.values() if r is not None]
    labelled_set = labelled_set_check(result)
    if not reason and labelled_set.get("looks_random") is False:
        reason = "the expert-rated videos do not look like a random draw of the judged ones, which PPI++ assumes"
    return {
        "withheld": reason,
        "result": result,
        "width_ratios": ratios,
        "mean_width_ratio": float(np.mean(usable)) if usable and not reason else None,
        "judge_offsets": {
            key: block["judge_only"]["estimate"] - block["ppi"]["estimate"]
            for key, block in result["dimensions"].items()
        },
        "labelled_set": labelled_set,
    }


def labelled_set_check(estimate: dict | None, withheld: str | None = None) -> dict:
    """Does the labelled set look like a random draw of the judged videos? `estimate`'s own check
    (`mis_icc_metric.labelled_check`, in `estimate_means`'s `labelled_check`): one rule for the command and the
    page; when the estimate could not be made, the check is withheld with its reason."""
    if estimate and isinstance(estimate.get("labelled_check"), Mapping):
        return dict(estimate["labelled_check"])
    return {"looks_random": None, "warning": None, "withheld": withheld or "no estimate"}


def _biases(inputs: CardInputs, n_bootstrap: int, seed: int) -> dict:
    """The equal-bias tests (model minus expert, clinicians as clusters) by time point and stimulus (`agreement_by`,
    its `overall` block) and by transcript length in thirds (`equal_bias_test` on the same per-video differences)."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.groups import agreement_by, equal_bias_test

    tests = {}
    for by in ("time_point", "stimulus"):
        grouped = json_safe(
            agreement_by(
                inputs.labelled_judge, inputs.gold, by, resampling=ResamplingOptions(n_bootstrap=n_bootstrap, seed=seed)
            )
        )
        test = grouped["overall"]["equal_bias"]
        groups = grouped["overall"]["groups"]
        tests[by] = {**test, "biases": {g: e.get("bias") for g, e in groups.items()}}
    tests["transcript_length"] = _length_test(inputs, equal_bias_test)
    for test in tests.values():
        p = test.get("p_value")
        test["biased"] = None if p is None else bool(p < BIAS_LEVEL)
    return tests


def _length_test(inputs: CardInputs, equal_bias_test) -> dict:
    if not inputs.lengths:
        return {
            "note": "no transcripts: give --references as a build folder (its scoring rows hold them)",
            "p_value": None,
        }
    from mis_bench_dataset.video_ids import parse_video_id

    differences: dict[str, list[float]] = {}
    for (video, _), value in inputs.labelled_judge.items():
        if value is not None and video in inputs.lengths:
            differences.setdefault(video, []).append(value - inputs.gold[(video, _)])
    videos = sorted(differences)
    if len(videos) < 3:
        return {"note": f"{len(videos)} labelled video(s) with a transcript: no test", "p_value": None}
    words = np.array([inputs.lengths[v] for v in videos], dtype=float)
    edges = np.quantile(words, [1 / 3, 2 / 3])
    thirds = np.searchsorted(edges, words, side="right")
    d = np.array([np.mean(differences[v]) for v in videos])
    test = equal_bias_test(d, thirds, np.array([parse_video_id(v).clinician for v in videos]))
    names = ["short", "middle", "long"]
    present = sorted(set(thirds.tolist()))
    test["biases"] = {names[t]: m for t, m in zip(present, test.get("means") or [], strict=False)}
    test["thirds_words"] = [float(e) for e in edges]
    return test


def _going_further(inputs: CardInputs, seed: int) -> dict:
    """`plan_labels` (expert labels for a cohort mean's CI of +/- MEAN_HALF_WIDTH) and `plan_icc` (videos and
    clinicians for an ICC CI of +/- ICC_HALF_WIDTH), the labelled videos as the pilot."""
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric.planning import plan_icc, plan_labels
    from mis_icc_metric.reporting_floor import Support, withhold_reason

    videos, clinicians = _videos_and_clinicians(inputs.gold)
    reason = withhold_reason(Support(len(videos), len(set(clinicians)), "clinician"), "a planned size")
    if reason:
        return {"withheld": reason}
    try:
        labels = json_safe(plan_labels(inputs.judge, inputs.gold, half_width=MEAN_HALF_WIDTH))
        icc = json_safe(
            plan_icc(
                inputs.labelled_judge, inputs.gold, half_width=ICC_HALF_WIDTH, n_resamples=MIN_PLAN_RESAMPLES, seed=seed
            )
        )
    except DataError as err:
        return {"withheld": err.what}
    more = {}
    for key, entry in labels["dimensions"].items():  # how many more than the experts rated already
        needed, have = entry.get("ppi_labels"), entry.get("n_pilot_labelled")
        more[key] = None if needed is None or have is None else max(0, int(needed) - int(have))
    return {
        "labels": labels,
        "more_labels_ppi": more,
        "icc": icc,
        "mean_half_width": MEAN_HALF_WIDTH,
        "icc_half_width": ICC_HALF_WIDTH,
    }


# ---------------------------------------------------------------------------------------------- verdict


def _rule(name: str, passed: bool | None, value: str, withheld: str | None = None) -> dict:
    return {
        "name": name,
        "rule": RULES[name],
        "passed": None if withheld else passed,
        "value": value,
        "withheld": withheld,
    }


def judge_rules(card: dict) -> list[dict]:
    """Each rule of `RULES` applied to the card's sections: passed (True/False), or withheld with its reason."""
    agreement, calibration, estimates = card["agreement"], card["calibration"], card["estimates"]
    near = [e for e in agreement["dimensions"].values() if (e["share_of_ceiling"] or 0) >= CEILING_SHARE]
    rules = [
        _rule(
            "agreement",
            len(near) >= CEILING_DIMENSIONS,
            f"{len(near)} of 8 dimensions at {CEILING_SHARE:.0%} of the ceiling or above",
            agreement["cite"]["withheld"],
        )
    ]
    if calibration.get("withheld"):
        rules += [_rule(n, None, "", calibration["withheld"]) for n in ("calibration", "width")]
    else:
        ok = calibration["coverage"] >= calibration["nominal"] - COVERAGE_SLACK
        ok = ok and calibration["share_clinicians_under"] <= CLINICIANS_UNDER
        rules.append(
            _rule(
                "calibration",
                ok,
                f"coverage {calibration['coverage']:.1%} (nominal {calibration['nominal']:.0%}); "
                f"{calibration['n_clinicians_under']} of {len(calibration['clinicians'])} clinicians under "
                f"{CLINICIAN_COVERAGE:.0%} beyond chance",
            )
        )
        dims = calibration["dimensions"].values()
        narrower = [e for e in dims if e["mean_width"] < e["no_judge_width"]]
        rules.append(
            _rule(
                "width",
                len(narrower) >= WIDTH_DIMENSIONS,
                f"narrower than no judge on {len(narrower)} of {len(calibration['dimensions'])} dimensions",
            )
        )
    ratio = estimates.get("mean_width_ratio")
    rules.append(
        _rule(
            "ppi",
            ratio is not None and ratio <= PPI_GAIN,
            "" if ratio is None else f"PPI++ CIs {ratio:.2f}x as wide as experts-only",
            estimates.get("withheld"),
        )
    )
    return rules


def verdict(rules: list[dict]) -> dict:
    """The answer in plain words, by `VERDICT_RULE`."""
    passed = {r["name"]: r["passed"] for r in rules}
    if passed["agreement"] is None:
        return {
            "answer": "cannot tell yet",
            "sentence": "Cannot tell yet: too few expert-rated videos or clinicians to judge the agreement "
            f"({next(r['withheld'] for r in rules if r['name'] == 'agreement')}). Have more videos rated first.",
        }
    if all(passed.values()):
        return {
            "answer": "yes",
            "sentence": "Yes, for research use: it agrees with the experts nearly as well as they agree with each "
            "other, its intervals hold their level on new clinicians, and it saves expert labels.",
        }
    if passed["agreement"] is False and passed["ppi"] is not True:
        return {
            "answer": "no",
            "sentence": "No: its single scores agree with the experts far less than the experts agree with each "
            "other, and it does not make cohort estimates from a few expert labels noticeably tighter.",
        }
    uses = []
    if passed["agreement"]:
        uses.append("its single scores")
    if passed["calibration"] and passed["width"]:
        uses.append("its per-video intervals")
    if passed["ppi"]:
        uses.append("cohort means corrected by expert labels (`mis-bench estimate`)")
    failed = [r["name"] for r in rules if r["passed"] is False]
    not_for = {
        "agreement": "its single scores in place of an expert's",
        "calibration": "its intervals at face value on new clinicians",
        "width": "its intervals, which are no narrower than knowing nothing about the video",
        "ppi": "saving expert labels",
    }
    withheld = [r["name"] for r in rules if r["passed"] is None]
    sentence = "With care: use it for " + (", ".join(uses) if uses else "nothing on its own yet")
    if failed:
        sentence += "; not for " + "; ".join(not_for[name] for name in failed)
    if withheld:
        sentence += "; too few rated videos to judge its " + " and ".join(withheld) + " yet"
    return {"answer": "with care", "sentence": sentence + "."}


def judge_flags(card: dict, inputs: CardInputs) -> list[str]:
    """What to read before relying on the judge, one sentence each."""
    flags = []
    if card["synthetic"]:
        flags.append("SYNTHETIC data: these numbers say nothing about any model on MIS-Bench.")
    values = [v for v in inputs.judge.values() if v is not None]
    if values and (min(values) < SCORE_MIN or max(values) > SCORE_MAX):
        flags.append(
            f"The judge's scores run from {min(values):g} to {max(values):g}, outside the expert scale "
            f"{SCORE_MIN:g}-{SCORE_MAX:g}: calibrate it before reading its scores as FIS points."
        )
    counts = card["counts"]
    if counts["n_expert_videos_not_judged"]:
        flags.append(f"{counts['n_expert_videos_not_judged']} expert-rated video(s) have no judge score: left out.")
    for section in ("calibration", "estimates", "going_further"):
        reason = card[section].get("withheld")
        if reason:
            flags.append(f"Withheld ({section.replace('_', ' ')}): {reason}.")
    if card["agreement"]["cite"]["withheld"]:
        flags.append(f"The number to cite has no CI: {card['agreement']['cite']['withheld']}.")
    check = card["estimates"].get("labelled_set") or {}
    if check.get("looks_random") is False:
        flags.append(f"{check['warning']} PPI++ and the agreement assume a random draw.")
    calibration = card["calibration"]
    if calibration.get("worst"):
        named = ", ".join(f"{w['clinician']} ({w['coverage']:.0%} of {w['n']} pairs)" for w in calibration["worst"])
        flags.append(
            f"{calibration['n_clinicians_under']} clinician(s) covered less than {CLINICIAN_COVERAGE:.0%} of the time, "
            f"below chance at the nominal level; the worst: {named}."
        )
    wider = [
        e["abbreviation"]
        for e in (calibration.get("dimensions") or {}).values()
        if e["mean_width"] >= e["no_judge_width"]
    ]
    if wider:
        flags.append(f"On {', '.join(wider)} the judge's intervals are no narrower than the no-judge ones.")
    for by, test in card["biases"].items():
        if test.get("biased"):
            flags.append(
                f"Biased by {by.replace('_', ' ')}: the mean bias differs across groups (p = {test['p_value']:.3g}, "
                f"below {BIAS_LEVEL:.3g})."
            )
    offsets = card["estimates"].get("judge_offsets") or {}
    if offsets:
        key = max(offsets, key=lambda k: abs(offsets[k]))
        flags.append(
            f"The judge alone is off the corrected cohort mean by up to {offsets[key]:+.2f} points "
            f"({DIMENSION_BY_KEY[key].abbreviation}): never report its raw mean as the cohort's."
        )
    return flags


def judge_card(
    judge: str | Path,
    experts: str | Path,
    *,
    split: str = ALL_SPLITS,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    coverage: float = DEFAULT_COVERAGE,
) -> dict:
    """The page's content as JSON: counts, the verdict and its rules, the number to cite, each section, the flags."""
    inputs = read_card_inputs(judge, experts, split)
    judged = {video for video, value in ((k[0], v) for k, v in inputs.judge.items()) if value is not None}
    expert_videos, expert_clinicians = _videos_and_clinicians(inputs.gold)
    if not inputs.labelled_judge:
        raise DataError(
            "the judge scored none of the expert-rated videos",
            where=str(judge),
            hint="give the judge's predictions on the videos the experts rated (and the others)",
        )
    card: dict[str, Any] = {
        "what": "mis-bench trust: can I use this judge?",
        "purpose": RESEARCH_USE,
        "synthetic": inputs.synthetic,
        "inputs": {"judge": inputs.judge_name, "experts": inputs.experts_name, "split": split},
        "counts": {
            "n_judged_videos": len(judged),
            "n_expert_videos": len(expert_videos),
            "n_expert_clinicians": len(set(expert_clinicians)),
            "n_expert_videos_not_judged": len(set(expert_videos) - judged),
        },
        "draw": {"n_bootstrap": n_bootstrap, "seed": seed, "coverage": coverage},
    }
    card["agreement"] = _agreement(inputs, n_bootstrap, seed)
    card["calibration"] = _calibration(inputs, coverage, seed)
    card["estimates"] = _estimates(inputs)
    card["biases"] = _biases(inputs, n_bootstrap, seed)
    card["going_further"] = _going_further(inputs, seed)
    card["rules"] = judge_rules(card)
    card["verdict"] = {**verdict(card["rules"]), "how": VERDICT_RULE}
    card["flags"] = judge_flags(card, inputs)
    from mis_icc_metric.reporting_floor import floor_description

    card["floors"] = floor_description()
    return card


def trust_page(judge: str | Path, experts: str | Path, out: str | Path, **options: Any) -> tuple[dict, dict[str, Path]]:
    """`mis-bench trust`: the output folder checked first (never an input, never a file another command wrote), the
    card computed (`judge_card`'s `options`), then trust.html and trust.json written together; (card, files)."""
    from mis_bench_dataset.toolkit.ownership import OutputFolder

    folder = OutputFolder(out, command="trust", inputs=[judge, experts])
    folder.claim_all(CARD_FILES, WRITER)
    card = judge_card(judge, experts, **options)
    return card, write_card(card, folder)


def write_card(card: dict, out: str | Path | Any) -> dict[str, Path]:
    """trust.html and trust.json into the folder `out` (a path or the command's OutputFolder), together, replacing
    only what this command wrote there."""
    import json

    from eval_scripts.report.judge_card_html import card_html
    from mis_bench_dataset.toolkit.atomic import AtomicFiles
    from mis_bench_dataset.toolkit.ownership import as_output_folder

    folder = as_output_folder(out, "trust")
    html_path, json_path = folder.claim_all(CARD_FILES, WRITER)
    page = card_html(card)  # rendered before anything is written
    with AtomicFiles() as files:
        files.write(json_path, json.dumps(card, indent=1, allow_nan=False, ensure_ascii=False) + "\n")
        files.write(html_path, page)
    return {"html": html_path, "json": json_path}

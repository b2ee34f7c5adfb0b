"""`mis-bench reproduce trust`: the docs page "How far to trust a judge" (docs/trust.md), generated from the public
data laid out as `../shared` (the authors' gold and Table 4 files, the 996 transcripts).

The page is a list of section functions (`SECTIONS`), each `(TrustData) -> str` of Markdown; a new section (the
calibration, the PPI simulation, planning) is one more function in the list. `TrustData` computes what the
sections share once, on first use: the judges' predictions and their scores under each resampling.

The judges: the text ridge (the `features` baseline, text setting) predicted out of fold on all 996 videos by a
5-fold cross-validation grouped by clinician (fold seed 0, as docs/reproducing.md describes it), and the
authors' three Table 4 systems on their test pairs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import cached_property
from pathlib import Path

from mis_bench_dataset.dimensions import DIMENSION_BY_KEY
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_SEED, MIN_PLAN_RESAMPLES, RESAMPLE_UNITS
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.numbers import MISSING, ci_pct, num, pct, signed
from mis_bench_dataset.video_ids import THERAPIST_LEVEL
from mis_bench_dataset.wording import HEADLINE_NUMBERS
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger(__name__)

TRUST_COMMAND = "mis-bench reproduce trust --shared ../shared --out docs/trust.md"
RIDGE = "Text ridge (5-fold CV by clinician)"
CV_FOLDS = 5
# Where the inputs lie inside a folder laid out like ../shared (its README.md).
AUTHORS_FOLDER = Path("data") / "authors"
TRANSCRIPTS_FILE = Path("data") / "mis-bench-transcripts.csv"


class TrustData:
    """The inputs of the page and what several sections share, each computed once when first asked for."""

    def __init__(self, shared: str | Path, *, n_bootstrap: int = DEFAULT_BOOTSTRAP, seed: int = DEFAULT_SEED) -> None:
        self.shared = Path(shared)
        self.authors = self.shared / AUTHORS_FOLDER
        self.transcripts = self.shared / TRANSCRIPTS_FILE
        for path in (self.authors / "coding.csv", self.transcripts):
            if not path.is_file():
                raise DataError(
                    f"no {path.relative_to(self.shared)} in the shared folder",
                    where=str(self.shared),
                    hint="pass the folder laid out as ../shared (data/authors/ and data/mis-bench-transcripts.csv)",
                )
        self.n_bootstrap, self.seed = n_bootstrap, seed
        self._scores: dict[tuple[str, str], dict] = {}

    @cached_property
    def labels(self):
        from mis_bench_dataset.release.labels import read_labels

        labels = read_labels(self.authors / "coding.csv", round_gold=True)  # the paper's rule (§3.2)
        if labels.problems:
            raise DataError(f"{len(labels.problems)} problem(s) in the labels: {labels.problems[0]}")
        return labels

    @cached_property
    def references(self) -> dict[tuple[str, str], float]:
        gold = self.labels.gold
        return {(v, k): s for v, scores in gold.items() for k, s in scores.items() if s is not None}

    @cached_property
    def systems(self) -> dict[str, dict]:
        """Name -> predictions: the text ridge out of fold on every video, then the three Table 4 systems."""
        from mis_bench_dataset.paper_results import TABLE4
        from mis_icc_metric.predictions_io import check_predicted_pairs, predictions_to_mapping, read_prediction_file

        systems = {RIDGE: self.ridge_predictions}
        for condition in TABLE4:
            file = read_prediction_file(self.authors / condition.file)
            check_predicted_pairs(file, self.references, str(self.authors / "coding.csv"))
            systems[f"{condition.title} (Table 4)"] = predictions_to_mapping(file.records)
        return systems

    @cached_property
    def ridge_predictions(self) -> dict:
        """The text ridge's out-of-fold predictions of every labelled pair (folds grouped by clinician, seed 0)."""
        from eval_scripts.baselines.crossval import all_feature_rows, clinician_folds, out_of_fold_predictions
        from eval_scripts.baselines.on_the_fly import RIDGE_SETTING, temporary_build

        logger.info("cross-validating the text ridge on the 996 transcripts (%d folds by clinician)", CV_FOLDS)
        with temporary_build(self.labels, self.transcripts, split_by="video") as handle:
            rows = all_feature_rows(handle)
        folds = clinician_folds(rows, CV_FOLDS, DEFAULT_SEED)
        predicted = out_of_fold_predictions(rows, "features", RIDGE_SETTING, folds)
        return {key: value for key, value in predicted.items() if key in self.references}

    def score(self, system: str, unit: str) -> dict:
        """`score_predictions` of one system with one resampling unit (cached)."""
        from mis_bench_dataset.toolkit.jsonio import json_safe
        from mis_icc_metric.scoring import score_predictions

        if (system, unit) not in self._scores:
            scored = score_predictions(
                self.systems[system],
                self.references,
                resampling=ResamplingOptions(n_bootstrap=self.n_bootstrap, seed=self.seed, resample=unit),
            )
            self._scores[(system, unit)] = json_safe(scored)
        return self._scores[(system, unit)]

    def groups(self, system: str, by: str) -> dict:
        """`agreement_by` of one system: by time point, stimulus or clinician, or at the therapist level."""
        from mis_bench_dataset.toolkit.jsonio import json_safe
        from mis_icc_metric.groups import agreement_by

        return json_safe(
            agreement_by(
                self.systems[system],
                self.references,
                by,
                resampling=ResamplingOptions(n_bootstrap=self.n_bootstrap, seed=self.seed),
            )
        )


# ------------------------------------------------------------------------------------------ sections


def _table(table) -> str:
    from eval_scripts.report.table import to_markdown

    return to_markdown(table)


def purpose_section(data: TrustData) -> str:
    from mis_icc_metric.groups import PURPOSE

    return "\n".join(
        [
            "# How far to trust a judge",
            "",
            f"Generated from the public data by `{TRUST_COMMAND}` (a slow test regenerates it from `../shared` and "
            "compares it with this page). Every number below is computed by the toolkit's own commands and "
            "functions, named beside it.",
            "",
            f'!!! warning "What these statistics are for"\n    They are {PURPOSE}. They say how far a model\'s '
            "scores can stand in for the experts' in research; they say nothing a therapist should be judged by.",
            "",
            f"Every CI says which resampling made it: **video** (videos drawn as if independent, the paper's "
            f"protocol) or **clinician** (clinicians drawn with all their videos, the toolkit's default), "
            f"{data.n_bootstrap:,} resamples, seed {data.seed}, 95% percentile intervals. The gold is the rounded "
            "mean of the raters (the paper's rule, §3.2) from the authors' `coding.csv`.",
            "",
            f"Which number is which: the **mean ICC** is {HEADLINE_NUMBERS['mean ICC']}; **Overall** is "
            f"{HEADLINE_NUMBERS['Overall'].split(' (`All`', 1)[0]}, {HEADLINE_NUMBERS['Overall'].split(': ', 1)[1]} "
            "([which number to cite](workflow.md#which-number-to-cite)). For a judge of your own, `mis-bench trust` "
            "gives one page with the verdict ([A judge on every video, experts on a few](workflow.md)).",
        ]
    )


def judges_section(data: TrustData) -> str:
    """The four judges: what each is and which pairs it is scored on."""
    from eval_scripts.report.table import Table
    from mis_bench_dataset.video_ids import parse_video_id

    rows = []
    for name, predictions in data.systems.items():
        entries = data.score(name, "clinician")["dimensions"].values()
        videos = {video for video, _ in predictions}
        clinicians = {parse_video_id(video).clinician for video in videos}
        per_dim = sum(e["n"] / e["n_clusters"] for e in entries) / len(entries)  # each dimension's own clinicians
        rows.append([name, str(len(predictions)), str(len(videos)), str(len(clinicians)), num(per_dim, 1)])
    header = ["Judge", "scored pairs", "videos", "clinicians", "videos per clinician per dimension"]
    return "\n".join(
        [
            "## The judges",
            "",
            f"- **{RIDGE}**: the `features` baseline in the text setting (transcript TF-IDF and lexical summaries, "
            f"a ridge per dimension), each of the 996 videos predicted by the model fitted on the other "
            f"{CV_FOLDS - 1} folds, the folds grouped by clinician (scikit-learn's GroupKFold, fold seed "
            f"{DEFAULT_SEED}): the cross-validation of [Reproducing the paper](reproducing.md), fold seed 0. Scored "
            "as the paper's Table 3 scores a model: on every video.",
            "- **Raw, Fine-tuning, MIS-RAFT (Table 4)**: the authors' Qwen2.5-VL-7B prediction files on their "
            "test pairs (797 pairs, the `paper-rows` split, which leaks: see [Reproducing the paper]"
            "(reproducing.md)).",
            "",
            _table(Table(header, rows, set(), label_columns=1)),
        ]
    )


def _shown_ci(entry: dict) -> str:
    """An ICC's CI, or "withheld: ..." where the one rule (`mis_icc_metric.reporting_floor`) withheld it."""
    from eval_scripts.report.formatting import withheld_cell

    reason = (entry.get("withheld") or {}).get("icc_ci")
    return withheld_cell(reason) if reason else ci_pct(entry["icc_ci"])


def resampling_section(data: TrustData) -> str:
    """Per judge and dimension: the ICC with its video and clinician CI, the width ratio and the design effect."""
    from eval_scripts.report.table import Table

    rows, summary = [], []
    for name in data.systems:
        video, clinician = (data.score(name, unit) for unit in RESAMPLE_UNITS)
        ratios = []
        entries = [(DIMENSION_BY_KEY[k].abbreviation, k) for k in clinician["dimensions"]] + [("Overall", None)]
        for i, (label, key) in enumerate(entries):
            v, c = (s["overall"] if key is None else s["dimensions"][key] for s in (video, clinician))
            ratio = _width(c["icc_ci"]) / _width(v["icc_ci"]) if _width(v["icc_ci"]) else None
            if key is not None and ratio is not None:
                ratios.append(ratio)
            rows.append(
                [name if i == 0 else "", label, pct(c["icc"]), _shown_ci(v), _shown_ci(c)]
                + [num(ratio, 2), str(c.get("n_clusters") or MISSING), num(c.get("design_effect"), 2)]
            )
        if ratios:
            summary.append(
                f"- {name}: clinician CIs {min(ratios):.2f}x to {max(ratios):.2f}x as wide as video CIs over the "
                f"eight dimensions (mean {sum(ratios) / len(ratios):.2f}x)."
            )
    header = ["Judge", "Dimension", "ICC %", "video CI", "clinician CI", "width ratio", "clinicians"]
    header += ["design effect"]
    return "\n".join(
        [
            "## Video or clinician resampling",
            "",
            "The 996 videos come from 78 clinicians. Resampling videos treats them as independent; resampling "
            "clinicians (all of a clinician's videos together) is the honest CI wherever a clinician's videos "
            "resemble each other. Per dimension, `mis-bench score --resample video` and `--resample clinician` "
            "(the default) on the same seed: the ICC(3,1), both 95% CIs, the width of the clinician CI over the "
            "video one, and the design effect (the variance of the ICC over clinician resamples over that over "
            "video resamples, the same number of resamples).",
            "",
            *summary,
            "",
            _table(Table(header, rows, set(), label_columns=2)),
        ]
    )


def _width(ci) -> float | None:
    return None if not ci or ci[0] is None else ci[1] - ci[0]


def subgroups_section(data: TrustData) -> str:
    """Agreement by time point and by stimulus, with the test of equal bias, for the ridge (every video) and
    by time point for MIS-RAFT (its test pairs)."""
    from eval_scripts.report.subgroups import BY_TITLES, equal_bias_table, subgroup_paragraphs, subgroup_table

    raft = next(name for name in data.systems if name.startswith("MIS-RAFT"))
    parts = [
        "## Agreement by time point and stimulus",
        "",
        "`mis-bench score --by time_point,stimulus` (`mis_icc_metric.subgroup_agreement`): each group's scored "
        "pairs as one more block of the score's own clinician draw. Bias is model minus expert in score points; "
        "the overall score is the per-video mean of the eight dimensions.",
    ]
    for system, by in ((RIDGE, "time_point"), (RIDGE, "stimulus"), (raft, "time_point")):
        result = data.groups(system, by)
        parts += ["", f"### {system}, by {BY_TITLES[by]}", "", _table(subgroup_table(result)), ""]
        parts += [_table(equal_bias_table(result)), "", *[f"{p}\n" for p in subgroup_paragraphs(result)[:-1]]]
    return "\n".join(parts).rstrip()


def therapist_section(data: TrustData) -> str:
    """Agreement of therapist means and of each clinician's T1-to-T3 change, for the ridge (every video)."""
    from eval_scripts.report.subgroups import therapist_paragraphs, therapist_table

    result = data.groups(RIDGE, THERAPIST_LEVEL)
    return "\n".join(
        [
            "## Agreement at the therapist level",
            "",
            "FIS research reports therapists, not single responses: a clinician's mean over the stimuli at a time "
            "point, and the change of that mean from T1 to T3. `mis-bench score --by therapist` "
            "(`mis_icc_metric.therapist_agreement`), the text ridge on every video:",
            "",
            _table(therapist_table(result)),
            "",
            *[f"{p}\n" for p in therapist_paragraphs(result)[:-1]],
        ]
    ).rstrip()


def _calibrations(data: TrustData) -> dict[int, dict]:
    """`calibrate` of the ridge's out-of-fold predictions on builds split by clinician (seeds CALIBRATION_SEEDS):
    fit on train, conformal on validation, evaluated on the test split's held-out clinicians."""
    import tempfile

    from eval_scripts.jobs.calibration import calibrate
    from mis_bench_dataset import SplitPlan, build_dataset
    from mis_icc_metric.predictions_io import write_predictions

    runs = {}
    with tempfile.TemporaryDirectory(prefix="mis-bench-trust-") as tmp:
        work = Path(tmp)
        records = [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in data.ridge_predictions.items()]
        write_predictions(work / "ridge-oof.csv", records)
        for seed in CALIBRATION_SEEDS:
            build = work / f"clinician-{seed}"
            build_dataset(
                None,
                build,
                labels=data.labels,
                transcripts=data.transcripts,
                split=SplitPlan(split_by="clinician", seed=seed),
                progress=False,
            )
            runs[seed] = calibrate(
                work / "ridge-oof.csv",
                build,
                work / f"calibrated-{seed}",
                resampling=ResamplingOptions(n_bootstrap=data.n_bootstrap, seed=data.seed),
            )
    return runs


def _before_after(entry: dict, stat: str, scale) -> str:
    """`before -> after [CI of the change]`, in percent (ICCs) or score points."""
    before, after, change = (entry[part][stat] for part in ("before", "after", "change"))
    interval = ci_pct(change["ci"]) if scale is pct else _ci_num(change["ci"])
    return f"{scale(before['value'])} -> {scale(after['value'])} {interval}"


def _ci_num(ci) -> str:
    return MISSING if not ci else f"[{signed(ci[0])}, {signed(ci[1])}]"


def _markdown_table(header: list[str], rows: list[list[str]]) -> str:
    from eval_scripts.report.table import Table

    return _table(Table(header, rows, set(), label_columns=1))


def _seed_table(runs: dict[int, dict]) -> tuple[str, float, float]:
    """(the per-split coverage table, the coverage pooled over splits and dimensions, the nominal level)."""
    rows, cells = [], []
    for seed, run in runs.items():
        pooled = run["evaluated"]["test"]["pooled"]
        cells.append((pooled["coverage"], pooled["n"]))
        rows.append([str(seed), str(pooled["n"]), pct(pooled["coverage"]), num(pooled["mean_width"], 2)])
        rows[-1].append(num(pooled["mae"], 3))
    nominal = next(iter(runs.values()))["evaluated"]["test"]["coverage_nominal"]
    table = _markdown_table(["split seed", "test pairs", "coverage %", "mean width", "MAE"], rows)
    return table, sum(c * n for c, n in cells) / sum(n for _, n in cells), nominal


def _dimension_table(test: dict) -> str:
    rows = [
        [
            DIMENSION_BY_KEY[key].abbreviation,
            _before_after(entry, "icc3_1", pct),
            _before_after(entry, "icc2_1", pct),
            _before_after(entry, "mae", lambda v: num(v, 3)),
            _before_after(entry, "bias", signed),
            pct(entry["coverage"]),
            num(entry["mean_width"], 2),
        ]
        for key, entry in test["dimensions"].items()
        if "before" in entry
    ]
    return _markdown_table(["Dimension", "ICC(3,1) %", "ICC(A,1) %", "MAE", "bias", "coverage %", "mean width"], rows)


def _group_and_risk_tables(test: dict) -> tuple[str, str]:
    groups = [("time point", test["by_time_point"]), ("stimulus", test["by_stimulus"])]
    group_rows = [
        [f"{what} {g}", str(c["n"]), pct(c["coverage"]), num(c["mean_width"], 2)]
        for what, cells in groups
        for g, c in cells.items()
    ]
    risk_rows = [
        [num(r["max_width"], 2), pct(r["share"]), str(r["n"]), num(r["mae"], 3), pct(r["coverage"])]
        for r in test["risk_coverage"]
    ]
    return (
        _markdown_table(["group", "pairs", "coverage %", "mean width"], group_rows),
        _markdown_table(["max width", "share %", "pairs", "MAE", "coverage %"], risk_rows),
    )


def calibration_section(data: TrustData) -> str:
    """Calibration and conformal intervals of the ridge on held-out clinicians (three clinician splits)."""
    runs = _calibrations(data)
    seed_table, pooled, nominal = _seed_table(runs)
    first = runs[CALIBRATION_SEEDS[0]]["evaluated"]["test"]
    group_table, risk_table = _group_and_risk_tables(first)
    return "\n".join(
        [
            "## Calibration and an interval for every score",
            "",
            "`mis-bench calibrate` fits a monotone map from the judge's score to the gold per dimension (isotonic, "
            "equal to scikit-learn's) on the train split and sets split-conformal intervals (MAPIE's rule) on the "
            f"validation split at {pct(nominal)}% coverage; here on builds split **by clinician** "
            f"(`build --split-by clinician --seed S`), so the test split's clinicians are never seen by the map or "
            "the intervals. The judge is the text ridge's out-of-fold predictions.",
            "",
            seed_table,
            "",
            f"Pooled over the {len(runs)} splits and the dimensions, the intervals cover **{pct(pooled)}%** of the "
            f"held-out pairs (nominal {pct(nominal)}%). The guarantee is an average over calibration draws: a "
            "validation split of about 100 videos holds only 7 to 10 clinicians, so one split can miss by several "
            "points.",
            "",
            f"### Split seed {CALIBRATION_SEEDS[0]}: before -> after, and the change's clinician-resampled CI",
            "",
            "The map is refitted in every resample (`mis_icc_metric.calibration_checks`).",
            "",
            _dimension_table(first),
            "",
            "The ridge is fitted to the gold scale already, so calibration moves its agreement little; for this "
            "judge the value is the interval. A zero-shot judge with an offset gains in ICC(A,1), MAE and bias; "
            "ICC(3,1) ignores offset and scale by construction.",
            "",
            "Coverage by time point and by stimulus (same split):",
            "",
            group_table,
            "",
            "Risk and coverage: the share of pairs whose interval is at most a width wide (scores a reader could "
            "accept without an expert at that tolerance), their error and coverage:",
            "",
            risk_table,
        ]
    )


def ppi_section(data: TrustData) -> str:
    """The PPI++ simulation on the ridge: reveal 10% of the gold, 500 draws, coverage and width against experts
    only."""
    from eval_scripts.report.table import Table
    from mis_icc_metric.estimates import ppi_coverage_simulation

    result = ppi_coverage_simulation(data.ridge_predictions, data.references, share=PPI_SHARE, n_draws=PPI_DRAWS)
    rows = [
        [
            entry["abbreviation"],
            str(entry["n_labelled"]),
            pct(entry["ppi_coverage"]),
            pct(entry["classical_coverage"]),
            num(entry["ppi_width"], 3),
            num(entry["classical_width"], 3),
            num(entry["width_ratio"], 2),
            num(entry["mean_lambda"], 2),
            signed(entry["judge_only_bias"]),
        ]
        for entry in result["dimensions"].values()
    ]
    pooled = result["pooled"]
    header = ["Dimension", "expert labels", "PPI++ coverage %", "experts-only coverage %", "PPI++ width"]
    header += ["experts-only width", "width ratio", "mean lambda", "judge-only bias"]
    return "\n".join(
        [
            "## Saving expert time: prediction-powered estimates",
            "",
            "A cohort's mean FIS from a judge on every video and an expert on a few: `mis-bench estimate --predictions "
            "PREDICTIONS --references LABELS` combines them by PPI++ (power-tuned, equal to `ppi_py`), beside the "
            "experts-only estimate and the judge-only one (biased by the judge's offset). Simulated on the real "
            f"gold with the text ridge as the judge ({result['method']}; "
            "`mis_icc_metric.estimates.ppi_coverage_simulation`):",
            "",
            _table(Table(header, rows, set(), label_columns=1)),
            "",
            f"Pooled over the dimensions: PPI++ covers {pct(pooled['ppi_coverage'])}% (experts only "
            f"{pct(pooled['classical_coverage'])}%) with CIs {num(pooled['width_ratio'], 2)}x as wide as the "
            "experts-only ones: the same validity for fewer expert ratings, as far as the judge tracks the gold. "
            "The CI assumes videos are independent and the labelled ones a random subset; `estimate --resample "
            "clinician` gives the clustered variant. The judge-only mean is off by the judge's bias, which no "
            "number of judged videos removes.",
        ]
    )


def planning_section(data: TrustData) -> str:
    """A planning example from the ridge as a pilot: videos and clinicians for an ICC CI half-width."""
    from eval_scripts.report.table import Table
    from mis_icc_metric.planning import plan_icc

    plan = plan_icc(
        data.ridge_predictions,
        data.references,
        half_width=PLAN_HALF_WIDTH,
        n_resamples=max(data.n_bootstrap, MIN_PLAN_RESAMPLES),  # `mis-bench plan`'s floor: a size needs a spread
        seed=data.seed,
    )

    def span(entry: dict) -> str:
        low_high = entry["videos_needed_range"]
        return MISSING if low_high is None else f"{low_high[0]:,}-{low_high[1]:,}"

    rows = [
        [
            entry["abbreviation"],
            pct(entry["pilot_icc"]),
            num(entry["pilot_half_width"], 3) if entry["pilot_half_width"] is not None else MISSING,
            num(entry["design_effect"], 2) if entry["design_effect"] is not None else MISSING,
            f"{entry['videos']:,}" if entry["videos"] else MISSING,
            str(entry["clinicians"] or MISSING),
            span(entry),
            str(entry["bonett_design_videos"] or MISSING),
            num(entry["reachable_half_width"], 3) if entry["reachable_half_width"] is not None else MISSING,
        ]
        for entry in plan["dimensions"].values()
    ]
    design = plan["design"]
    header = ["Dimension", "pilot ICC %", "pilot half-width", "design effect", "videos", "clinicians"]
    header += ["range needed", "Bonett x deff videos", f"+/- all {design['clinicians_available']}"]
    return "\n".join(
        [
            "## Planning an evaluation",
            "",
            f"How many videos and clinicians a judge's ICC(3,1) needs for a 95% CI of half-width "
            f"{PLAN_HALF_WIDTH} (`mis-bench plan icc --half-width {PLAN_HALF_WIDTH}`, `mis_icc_metric.plan_icc`), "
            "with the text ridge's out-of-fold predictions as the pilot, for a study of "
            f"{num(design['videos_per_clinician'], 1)} videos per clinician and at most "
            f"{design['clinicians_available']} clinicians (the benchmark's): the pilot's videos resampled at each "
            f"size ({plan['resampling']['n_resamples']:,} resamples a size) times the design effect at that "
            "clustering (the headline), beside Bonett's (2002) analytic n times the same design effect. A size "
            "that needs more clinicians than exist is withheld (-); the last column is the half-width all of them "
            "reach, and the range the videos needed over clinician resamples of the pilot.",
            "",
            _table(Table(header, rows, set(), label_columns=1)),
            "",
            f"Headline: {plan['headline']['why']}. "
            + " ".join(f"{w[0].upper()}{w[1:]}." for w in plan["warnings"])
            + " `mis-bench plan difference` sizes a comparison of two judges and `mis-bench plan labels` the "
            "expert labels an `estimate` needs ([Estimates and sample sizes](estimates.md)).",
        ]
    )


PPI_SHARE, PPI_DRAWS = 0.1, 500
CALIBRATION_SEEDS = (0, 1, 2)
PLAN_HALF_WIDTH = 0.05

Section = Callable[[TrustData], str]
# The page, in order.
SECTIONS: list[Section] = [
    purpose_section,
    judges_section,
    resampling_section,
    subgroups_section,
    therapist_section,
    calibration_section,
    ppi_section,
    planning_section,
]


def reproduce_trust_page(
    shared: str | Path,
    *,
    n_bootstrap: int = DEFAULT_BOOTSTRAP,
    seed: int = DEFAULT_SEED,
    sections: list[Section] | None = None,
) -> str:
    """The Markdown of docs/trust.md from the folder laid out as ../shared."""
    data = TrustData(shared, n_bootstrap=n_bootstrap, seed=seed)
    return "\n\n".join(section(data) for section in (SECTIONS if sections is None else sections)) + "\n"


def write_page(page: str, out: str | Path) -> Path:
    """Write the page to `out`, replacing only a page this command wrote (it names the command), never another
    file."""
    from mis_bench_dataset.toolkit.atomic import write_atomic

    out = Path(out)
    if out.is_dir():
        raise DataError(f"--out {out} is a folder", hint="give the path of the page to write, e.g. docs/trust.md")
    if out.exists() and TRUST_COMMAND.split(" --")[0] not in out.read_text(encoding="utf-8", errors="replace"):
        raise DataError(
            f"{out} is not a page `mis-bench reproduce trust` wrote; left as it is",
            hint="choose another --out, or move that file away",
        )
    write_atomic(out, page)
    return out

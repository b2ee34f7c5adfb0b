"""The dataset card (README.md): YAML configs/features for `load_dataset`, and the
documentation a Hub dataset needs (provenance, privacy, rubric, splits, problems)."""

from __future__ import annotations

from pathlib import Path

import yaml

from mis_bench_dataset.dataset.format import STATS_FOLDER
from mis_bench_dataset.dimensions import DIMENSIONS, GOLD_STATS, HUMAN_CEILING, RUBRIC
from mis_bench_dataset.release.provenance import describe_source
from mis_bench_dataset.release.tree import MODALITIES
from mis_bench_dataset.splits import FRACTIONS, PAPER_ROWS, SPLITS
from mis_bench_dataset.toolkit.atomic import write_atomic
from mis_bench_dataset.toolkit.numbers import MISSING, num

SYNTHETIC_BANNER = (
    "> **SYNTHETIC DATA.** Every video, feature, transcript and rating in this folder was generated "
    "by `mis-bench synth` (`mis_bench_dataset.synth.generator`) with planted signal. It is NOT the MIS-Bench "
    "release and says nothing about real therapists. Use it to test software, never to report results."
)


def card_metadata(report, features_yaml, scoring_yaml, files) -> dict:
    """The card's YAML front matter; `features_yaml`, `scoring_yaml`: each config's columns as a card lists them
    (`builder.schema.features_yaml`)."""
    configs = []
    infos = []
    for config, feats in (("scoring", scoring_yaml), ("features", features_yaml)):
        configs.append(
            {
                "config_name": config,
                **({"default": True} if config == "scoring" else {}),
                "data_files": [
                    {"split": split, "path": f"{config}/{split}-*.parquet"}
                    for split in SPLITS
                    if files[(config, split)]
                ],
            }
        )
        n_rows = report.split_rows if config == "scoring" and report.split_rows else report.split_counts
        if config == "scoring" and not report.split_rows:  # a report written before split_rows existed
            n_rows = {split: count * 8 for split, count in report.split_counts.items()}
        infos.append(
            {
                "config_name": config,
                "features": feats,
                "splits": [
                    {
                        "name": split,
                        "num_bytes": sum(p.stat().st_size for p in files[(config, split)]),
                        "num_examples": n_rows[split],
                    }
                    for split in SPLITS
                    if files[(config, split)]
                ],
            }
        )
    return {
        "pretty_name": "MIS-Bench (synthetic)" if report.synthetic else "MIS-Bench",
        "language": ["en"],
        "license": "other",
        "task_categories": ["video-classification", "text-classification"],
        "tags": ["psychotherapy", "interpersonal-skills", "FIS", "ICC", "multimodal"]
        + (["synthetic"] if report.synthetic else []),
        "size_categories": ["n<1K"] if report.n_videos < 1000 else ["1K<n<10K"],
        "configs": configs,
        "dataset_info": infos,
    }


def _table(rows: list[list[str]], header: list[str]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# Where the build keeps `mis-bench stats` output for the card (stats.json and the figures).

_GROUP_TITLES = {"split": "split", "time_point": "time point", "stimulus": "stimulus"}


def _mean_sd(summary: dict) -> str:
    return MISSING if summary["mean"] is None else f"{num(summary['mean'], 2)} ± {num(summary['sd'], 2)}"


def statistics_section(stats: dict, folder: str = STATS_FOLDER) -> str:
    """Gold-score statistics as the paper's Appendix C shows them: Table 6, Figure 5, Figure 6,
    and the per-split / time point / stimulus summaries (the splits should look alike)."""
    abbr = [d.abbreviation for d in DIMENSIONS]
    table6 = [
        [
            d.name,
            d.abbreviation,
            *(num(stats["dimensions"][d.key][f], 3) for f in ("mean", "sd")),
            *(num(stats["dimensions"][d.key][f], 1) for f in ("min", "max")),
            str(stats["dimensions"][d.key]["n"]),
            f"{GOLD_STATS[d.key].mean:.3f} ± {GOLD_STATS[d.key].std:.3f}",
        ]
        for d in DIMENSIONS
    ]
    corr = [[d.abbreviation, *(num(stats["correlation"][d.key][e.key], 2) for e in DIMENSIONS)] for d in DIMENSIONS]
    parts = [
        "## Gold-score statistics (cf. paper Appendix C)",
        "Computed at build time by the code of `mis-bench stats`, over all splits "
        f"({stats['n_labelled_videos']} labelled of "
        f"{stats['n_videos']} videos); machine-readable in `{folder}/stats.json`.",
        "Per dimension (cf. paper Table 6; sd with ddof = 1):\n\n"
        + _table(table6, ["dimension", "abbr.", "mean", "sd", "min", "max", "n", "paper mean ± sd"]),
        f"Pearson correlation over the {stats['n_complete_videos']} videos with all eight gold scores "
        "(cf. paper Figure 5):\n\n" + _table(corr, ["", *abbr]),
        f"![Pearson correlation of the eight gold scores]({folder}/{stats['figures']['correlation']})",
        f"Gold-score histograms at 0.1 resolution (cf. paper Figure 6):\n\n"
        f"![Gold-score histograms]({folder}/{stats['figures']['histograms']})",
    ]
    for grouping, title in _GROUP_TITLES.items():
        rows = [
            [
                value,
                str(group["n_videos"]),
                str(group["n_labelled_videos"]),
                *(_mean_sd(group["dimensions"][d.key]) for d in DIMENSIONS),
            ]
            for value, group in stats["groups"][grouping].items()
        ]
        parts.append(f"Gold mean ± sd per {title}:\n\n" + _table(rows, [title, "videos", "labelled", *abbr]))
    if stats.get("human_ceiling"):
        parts.append(
            f"Human ceiling: {stats['n_fully_rated_videos']} fully rated videos; ICC(3,1) with 95% CI "
            "in the Labels section above."
        )
    return "\n\n".join(parts)


def _splits_section(report, counts: str) -> str:
    target = "/".join(str(round(f * 100)) for f in FRACTIONS)
    if report.split_by == PAPER_ROWS:
        rows = ", ".join(f"{k}: {v} rows" for k, v in report.split_rows.items())
        return (
            f"## Splits\n\n**{report.split_warning}**\n\nScheme `paper-rows`, seed {report.seed}: {rows} of the "
            f"`scoring` config; videos with at least one row there: {counts}. A `features` row appears in each "
            "split that holds one of its video's rows, with the gold of that split's rows only (the others null)."
        )
    rule = (
        "by video (the paper's rule: no video in two splits)"
        if report.split_by == "video"
        else "by clinician (no clinician in two splits; clinicians shuffled with the seed, each assigned to the "
        "split furthest below its target share)"
    )
    return (
        f"## Splits\n\nTarget {target} train/validation/test, grouped {rule}, seed {report.seed}. Counts: {counts}. "
        "Deterministic: the same ids, grouping and seed give the same splits."
    )


def _labels_text(report) -> str:
    """Where the gold comes from, the rounding rule and its count, and the notes on the labels file."""
    text = (
        "Gold score = arithmetic mean of the available ratings of a (video, dimension), rounded half up "
        "to one decimal (the paper's rule, §3.2)."
    )
    labels_source = describe_source((report.sources or {}).get("labels"))
    if labels_source:
        text += f" The gold comes from the authors' public aggregated scores: {labels_source}."
    rounding = report.gold_rounding
    if rounding:
        what = "means of the ratings" if rounding["form"] == "long" else "aggregated values of the labels file"
        text += (
            f" {rounding['n_rounded']} of the {rounding['n_values']} gold values ({what}) were not at one decimal "
            "and were rounded half up to one decimal on their exact decimal value"
            + (
                " (the file holds unrounded rater means)."
                if rounding["form"] == "wide" and rounding["n_rounded"]
                else "."
            )
        )
    if report.label_notes:
        listed = "\n".join(f"* {n['kind']} (row {n.get('row', '?')}): {n['text']}" for n in report.label_notes[:50])
        more = f"\n* ... and {len(report.label_notes) - 50} more" if len(report.label_notes) > 50 else ""
        text += f"\n\nRead as written, noted ({len(report.label_notes)}):\n\n{listed}{more}"
    return text


def _intro(report) -> list[str]:
    parts = ["# MIS-Bench" + (" (SYNTHETIC)" if report.synthetic else "")]
    if report.synthetic:
        parts.append(SYNTHETIC_BANNER)
    if report.split_warning:
        parts.append(f"> **{report.split_warning}**")
    parts.append(
        "MIS-Bench asks whether (multimodal) models can judge psychotherapists' Facilitative "
        "Interpersonal Skills (FIS) the way trained expert raters do: each therapist response video "
        "is scored on eight FIS dimensions on a 1.0-5.0 scale (one decimal). Models are evaluated "
        "by ICC(3,1) against the gold score."
    )
    return parts


def _loading_section(report) -> str:
    folder = f"./{Path(report.out_dir).name}"
    return (
        "## Loading\n\nBy the folder's path (a bare name is looked up on the Hub and, offline, in the `datasets` "
        "cache, which may hold another build of that name):\n\n```python\nfrom datasets import load_dataset\n"
        f'scoring = load_dataset("{folder}", "scoring", split="test")'
        "   # one row per (video, dimension)\n"
        f'features = load_dataset("{folder}", "features", split="test").with_format("numpy")\n'
        'features[0]["openface"].shape   # (T, 208) float32; (0, 208) when absent\n```\n\n'
        "Uploaded with `mis-bench build ... --push-to-hub USER/REPO`, it loads as "
        '`load_dataset("USER/REPO", "scoring")`.'
    )


def _provenance_section(report) -> str:
    def name(path):  # folder/file names only: the card is published, local paths are not
        return Path(path).name

    provenance = (
        "Built by `mis-bench build` (package `mis-bench`) from "
        + (f"release folder `{name(report.release_dir)}`" if report.release_dir else "no release folder")
        + (f", transcripts `{name(report.transcripts_path)}`" if report.transcripts_path else "")
        + (f", labels `{name(report.labels_path)}`" if report.labels_path else ", without labels (all scores null)")
        + f". Content fingerprint `{report.fingerprint}`; `build_report.json` lists every problem found."
    )
    for role, record in (report.sources or {}).items():
        published = describe_source(record)
        provenance += f"\n\n* {role}: `{record['file']}`, SHA-256 `{record['sha256']}`" + (
            f": the authors' public file ({published}), byte for byte" if published else ""
        )
    return "## Provenance\n\n" + provenance


PRIVACY_SECTION = (
    "## Privacy\n\nThe release holds de-identified features only: OpenFace action units, landmarks, "
    "gaze and confidence; librosa log-Mel/MFCC; wav2vec 2.0 frame embeddings; prosody descriptors; "
    "and transcripts. No raw video or audio is included. Video ids carry a clinician code, the time "
    "point and the standardized-patient stimulus, not names of real clients."
)
CITATION_SECTION = (
    "## Citation\n\nMIS-Bench: a multimodal interpersonal skills benchmark (996 psychotherapy response "
    "videos, 8 FIS dimensions)."
)


def _configs_section() -> str:
    return (
        "## Configs\n\n"
        "* `scoring` (default): one row per (video, dimension): `video_id`, `clinician`, `time_point`, "
        "`stimulus`, `dimension` (key), `dimension_name`, `transcript`, `criterion`, `rubric_1`..`rubric_5` "
        "(the paper's Table 5), `score` (gold, float32, null when unlabeled).\n"
        "* `features`: one row per video: ids, `transcript`, and per modality M in "
        + ", ".join(f"`{m.name}` (W={m.width})" for m in MODALITIES)
        + ": `M` as `Array2D((None, W), float32)`, `M_timestamps`, `has_M`. An absent or broken modality "
        "is an empty (0, W) array with `has_M = False` (nulls in Array2D are not safe in `datasets`). "
        "`duration_seconds` is the last timestamp plus one median frame step of the longest of "
        "openface/librosa/wav2vec (twice the prosody segment midpoint when only prosody exists; null "
        "with no timed modality). The eight gold scores are float32 columns named by dimension key."
    )


def _dimensions_and_rubric() -> list[str]:
    rows = [
        [
            d.key,
            d.name,
            d.abbreviation,
            f"{HUMAN_CEILING[d.key].icc:.2f}",
            f"{GOLD_STATS[d.key].mean:.3f} ± {GOLD_STATS[d.key].std:.3f}",
        ]
        for d in DIMENSIONS
    ]
    dimensions = "## Dimensions\n\n" + _table(
        rows, ["key", "name", "abbr.", "paper human ICC(3,1)", "paper gold mean ± sd"]
    )
    rubric_lines = []
    for d in DIMENSIONS:
        rubric_lines.append(f"**{d.name}.** {RUBRIC[d.key].criterion}\n")
        rubric_lines += [f"{i}. {text}" for i, text in enumerate(RUBRIC[d.key].scores, start=1)]
        rubric_lines.append("")
    return [dimensions, "## Rubric (paper Table 5)\n\n" + "\n".join(rubric_lines).strip()]


def _split_counts_section(report) -> str:
    counts = ", ".join(f"{k}: {v} videos" for k, v in report.split_counts.items())
    empty = [k for k, v in report.split_counts.items() if v == 0]
    if empty:
        counts += f" (too few videos: {', '.join(empty)} not written)"
    return _splits_section(report, counts)


def _labels_section(report) -> str:
    labels = _labels_text(report)
    if report.human_ceiling:
        crow = [
            [k, num(v["icc"], 3), f"[{num(v['ci_low'], 3)}, {num(v['ci_high'], 3)}]", str(v["n_videos"])]
            for k, v in report.human_ceiling.items()
        ]
        labels += (
            "\n\nHuman single-rater ICC(3,1) among the raters on the fully rated videos (cf. paper Table 2):\n\n"
            + _table(crow, ["dimension", "ICC(3,1)", "95% CI", "videos"])
        )
    return f"## Labels\n\n{labels}\n\nLabelled videos: {report.n_labeled_videos} of {report.n_videos}."


def _build_report_section(report) -> str:
    modal = ", ".join(f"{k} {v}/{report.n_videos}" for k, v in report.modalities_present.items())
    problems = f"{len(report.problems)} problem(s)" + (
        ": " + ", ".join(f"{k} x{v}" for k, v in report.problem_counts().items()) if report.problems else ""
    )
    return f"## Build report\n\nModalities present: {modal}. {problems}. Details in `build_report.json`."


def card_body(report, stats: dict | None = None) -> str:
    """The card's Markdown, section by section (the YAML front matter is `card_metadata`)."""
    parts = [*_intro(report), _loading_section(report), _provenance_section(report)]
    if report.synthetic:
        signal = report.synthetic_signal or "See mis_bench_dataset/synth/generator.py."
        parts.append("## Synthetic data: the planted signal\n\n" + signal.lstrip(": \n"))
    parts += [PRIVACY_SECTION, _configs_section(), *_dimensions_and_rubric(), _split_counts_section(report)]
    parts.append(_labels_section(report))
    if stats is not None:
        parts.append(statistics_section(stats))
    parts += [_build_report_section(report), CITATION_SECTION]
    return "\n\n".join(parts) + "\n"


def write_card(folder: Path, report, features_yaml, scoring_yaml, files, stats: dict | None = None) -> Path:
    metadata = card_metadata(report, features_yaml, scoring_yaml, files)
    front = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True)
    text = "---\n" + front + "---\n\n" + card_body(report, stats)
    return write_atomic(Path(folder) / "README.md", text)

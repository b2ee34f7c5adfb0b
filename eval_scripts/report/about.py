"""What a report was run on, said in its title and first paragraph: the synthetic sample, or a build with
its gold source (repository, commit, path of the authors' public file), the rounding rule and how many
values it rounded, and its split scheme; a leaking split (`paper-rows`) gets its warning at the top."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mis_bench_dataset.dataset.format import REPORT_NAME
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.release.provenance import describe_source
from mis_bench_dataset.wording import SYNTHETIC_MARK


@dataclass(frozen=True)
class About:
    """The dataset's name for a title, the paragraphs that open the report, and a warning for its top."""

    name: str
    paragraphs: list[str] = field(default_factory=list)
    warning: str | None = None


def _gold_sentence(report: Mapping[str, Any], synthetic: bool) -> str:
    labels = (report.get("sources") or {}).get("labels")
    published = describe_source(labels)
    if synthetic and labels:
        source = f"gold: the generator's {SYNTHETIC_MARK} ratings ({labels['file']}, sha256 {labels['sha256'][:12]}...)"
    elif published:
        source = f"gold from the authors' public {labels['file']} ({published})"
    elif labels:
        source = f"gold from {labels['file']} (sha256 {labels['sha256'][:12]}..., not a published file)"
    elif report.get("labels_path"):
        source = "gold from a labels file"
    else:
        return "no gold labels"
    rounding = report.get("gold_rounding")
    if rounding:
        source += (
            f"; gold rule: {rounding['rule']}; {rounding['n_rounded']:,} of {rounding['n_values']:,} values were not "
            "at one decimal and were rounded"
        )
    return source


def describe_build(
    report: Mapping[str, Any] | None, name: str, *, synthetic: bool, split: str, default_sample: bool = False
) -> About:
    """The `About` of a build from its build report (`build_report.json`, `BuiltDataset.report`)."""
    report = report or {}
    if default_sample:
        label = f"the default {SYNTHETIC_MARK} sample"
    else:
        label = f"{SYNTHETIC_MARK} build {name!r}" if synthetic else f"build {name!r}"
    scheme = report.get("split_by") or "unknown"
    seed = report.get("seed")
    gold = _gold_sentence(report, synthetic)
    seeded = f" (seed {seed})" if seed is not None else ""
    n_videos = report.get("n_videos", "?")
    text = f"Data: {label} ({n_videos} videos; {gold}); split {split!r} of the {scheme!r} scheme{seeded}."
    return About(label, [text], report.get("split_warning"))


def about_references(references: str | Path | None, split: str) -> About | None:
    """The `About` of `mis-bench report --references DIR` when DIR is a build (None for a labels file or none)."""
    if references is None or not (Path(references) / REPORT_NAME).is_file():
        return None
    handle = BuiltDataset.open(references)
    return describe_build(handle.report, handle.path.name, synthetic=bool(handle.synthetic), split=split)

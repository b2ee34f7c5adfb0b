"""Reports say what they show (issues 27.4, 28.6): the title and first paragraph name the dataset (the default
synthetic sample, or the build with its gold source, commit, path and rounding, and its split scheme), a leaking
split's warning is at the top, a `--cv-folds` run's report has its cross-validation section, the radar draws the
floor it lists, and the default job's closing line says how to get the real benchmark."""

from __future__ import annotations

import argparse
import json

import pytest

from eval_scripts.cli.run import run_default
from eval_scripts.report.about import describe_build
from mis_bench_dataset import SplitPlan
from mis_bench_dataset.splits import PAPER_ROWS_WARNING


def _job(dataset, out, **options):
    args = argparse.Namespace(dataset=str(dataset), out=str(out), bootstrap=30, seed=0, cv_seeds=2, **options)
    assert run_default(args) == 0
    return (out / "report.md").read_text(encoding="utf-8"), json.loads((out / "report.json").read_text())


@pytest.mark.slow
def test_a_cross_validated_build_report_names_its_data_and_has_the_section(synthetic_build, tmp_path, capsys):
    markdown, data = _job(synthetic_build, tmp_path / "job", cv_folds=2)
    lines = markdown.splitlines()
    assert lines[0] == "# MIS-Bench CPU baselines on SYNTHETIC build 'mis-bench'"
    first = next(line for line in lines[1:] if line and not line.startswith(">"))
    assert first.startswith("Data: SYNTHETIC build 'mis-bench' (40 videos; gold: the generator's SYNTHETIC ratings ")
    assert "split 'test' of the 'video' scheme (seed 0)" in first
    assert "## Cross-validation over every video" in markdown
    cv = json.loads((tmp_path / "job" / "cross_validation.json").read_text())
    section = markdown.split("## Cross-validation over every video", 1)[1].split("\n## ", 1)[0]
    summary = json.loads((tmp_path / "job" / "summary.json").read_text())
    for name, run in cv["runs"].items():
        row = next(line for line in section.splitlines() if line.startswith(f"| {name} |"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        test_mean = next(
            r["mean_icc"] for r in summary["runs"] if f"{r['baseline']} {r['modality']}" == name
        )  # the test-split number beside the cross-validation
        assert cells[1] == f"{100 * test_mean:.1f}"
        for k, seed in enumerate(cv["seeds"]):
            scores = run["by_seed"][str(seed)]
            assert cells[2 + k].startswith(f"{100 * scores['mean_icc']:.1f} [")
            folds = " / ".join("–" if v is None else f"{100 * v:.1f}" for v in scores["fold_mean_icc"])
            assert cells[2 + k].endswith(f"; folds {folds}") and len(scores["fold_mean_icc"]) == 2
        spread = run["across_seeds"]["mean_icc"]
        assert cells[2 + len(cv["seeds"])] == (
            f"{100 * spread['mean']:.1f} ({100 * spread['min']:.1f} to {100 * spread['max']:.1f})"
        )
    # The floor predicts one value per fold: each fold's own ICC is exactly 0.
    assert all(v == 0.0 for s in cv["runs"]["mean text"]["by_seed"].values() for v in s["fold_mean_icc"])
    assert data["cross_validation"]["seeds"] == [0, 1] and data["about"]["warning"] is None
    assert "mis-bench fetch" in capsys.readouterr().out  # the closing line of a synthetic run


def test_a_paper_rows_build_report_has_the_leak_warning_at_the_top(tmp_path):
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    release = generate_synthetic_release(tmp_path / "release", n_videos=30, seed=1)
    build = tmp_path / "rows"
    build_dataset(
        release.release_dir, build, labels=release.ratings_csv, split=SplitPlan(split_by="paper-rows"), progress=False
    )
    markdown, data = _job(build, tmp_path / "job", cv_folds=0)
    lines = markdown.splitlines()
    assert lines[0] == "# MIS-Bench CPU baselines on SYNTHETIC build 'rows'"
    assert lines[2].startswith("> **LEAKING SPLIT (paper-rows)")  # the first thing under the title
    assert "'paper-rows' scheme (seed 42)" in markdown and data["about"]["warning"] == PAPER_ROWS_WARNING
    html = (tmp_path / "job" / "report.html").read_text(encoding="utf-8")
    assert html.index("id='split-warning'") < html.index("id='legend'")


def test_a_real_build_names_the_authors_gold_file_and_rounding(real_text_build):
    from mis_bench_dataset import BuiltDataset

    about = describe_build(BuiltDataset.open(real_text_build).report, "mis-bench", synthetic=False, split="test")
    assert about.name == "build 'mis-bench'" and about.warning is None
    (text,) = about.paragraphs
    assert "gold from the authors' public coding.csv (https://github.com/calistalu/MIS-Bench, commit d2b9b8e, " in text
    assert "path coding.csv)" in text and "rounded half up to one decimal" in text
    assert "3,910 of 7,968 values were not at one decimal and were rounded" in text  # test_real_authors counts them
    assert "split 'test' of the 'video' scheme (seed 0)" in text


def test_the_radar_draws_the_floor_it_lists():
    from eval_scripts.report.plots import radar_figure
    from eval_scripts.report.table import RunView
    from mis_bench_dataset.dimensions import DIMENSION_KEYS

    def view(label, value, floor=False):
        return RunView(label, {"dimensions": {k: {"icc": value} for k in DIMENSION_KEYS}}, {}, floor=floor)

    figure = radar_figure([view("ridge", 0.3), view("baseline/train-mean", 0.0, floor=True)])
    ax = figure.axes[0]
    low, _ = ax.get_ylim()
    listed = [text.get_text() for text in ax.get_legend().get_texts()]
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert listed == ["Human ceiling (Table 2)", "ridge", "baseline/train-mean (floor)"]
    floor = lines["baseline/train-mean (floor)"]
    radius = floor.get_ydata() - low  # drawn at a radius above the centre: a visible ring
    assert radius.min() == pytest.approx(10.0) and floor.get_visible() and floor.get_linewidth() > 0

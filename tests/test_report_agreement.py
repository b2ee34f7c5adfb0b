"""The report's agreement section, figures and model-as-rater section: the tables show the scores' numbers,
the figures draw exactly the ICC's pairs (bias and limits from an independent computation), SYNTHETIC is
marked, and the page holds together in a real headless Chromium at 1280 px."""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib.colors import to_rgba

from eval_scripts import ReportOptions, write_report
from eval_scripts.report.agreement_plots import (
    bland_altman_figure,
    calibration_bins,
    calibration_figure,
    histogram_figure,
    pairs_of,
)
from eval_scripts.report.formatting import pct, signed
from eval_scripts.report.table import run_views
from mis_bench_dataset import DIMENSION_KEYS, DIMENSIONS, read_labels
from mis_bench_dataset.release.labels import write_ratings_long
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_icc_metric import ResamplingOptions, model_as_rater, score_predictions

from _independent import reference_agreement
from _leaderboard_helpers import make_results

BROWSER = next(
    (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None
)
VIDEOS = [f"SY{i:04d}_T{1 + i % 3}_Luke" for i in range(36)]


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """Two SYNTHETIC systems (one calibrated, one answering 3 or 4 only) scored against a SYNTHETIC
    three-rater labels file, and the report written with those raters."""
    root = tmp_path_factory.mktemp("agreement-report")
    rng = np.random.default_rng(1)
    true = rng.normal(3.3, 0.7, (len(VIDEOS), 8, 1))
    ratings = np.clip(np.round(true + rng.normal(0, 0.5, (len(VIDEOS), 8, 3))), 1, 5)
    rows = [
        (video, rater, dim, float(ratings[i, d, r]))
        for i, video in enumerate(VIDEOS)
        for d, dim in enumerate(DIMENSION_KEYS)
        for r, rater in enumerate(("R1", "R2", "R3"))
    ]
    labels = read_labels(write_ratings_long(root / "ratings.csv", rows))
    references = {(v, d): g for v, dims in labels.gold.items() for d, g in dims.items() if g is not None}
    good = {k: float(np.clip(round(g + rng.normal(0.1, 0.4), 1), 1, 5)) for k, g in sorted(references.items())}
    squashed = {k: (3.0 if g < 3.4 else 4.0) for k, g in sorted(references.items())}
    squashed[(VIDEOS[0], "empathy")] = None
    results = [
        make_results(
            p,
            model=name,
            scores=json_safe(score_predictions(p, references, resampling=ResamplingOptions(n_bootstrap=200, seed=0))),
        )
        for name, p in (("org/calibrated", good), ("org/squashed", squashed))
    ]
    files = write_report(
        results, root / "out", ReportOptions(comparison_bootstrap=50), references=references, raters=labels
    )
    return {
        "files": files,
        "results": results,
        "references": references,
        "labels": labels,
        "markdown": files.markdown.read_text(),
        "html": files.html.read_text(),
        "json": json.loads(files.json.read_text()),
        "root": root,
    }


def _md_table(markdown: str, caption: str) -> list[list[str]]:
    block = markdown.split(f"**{caption}**", 1)[1].strip().split("\n\n", 1)[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in block.splitlines()[2:]]


AGREEMENT_CAPTION = "Agreement with the gold scores of each system's best configuration"
RATERS_CAPTION = "The model as one more rater: ICC(3,1) % [95% F-test CI] of each system's best configuration"


def test_agreement_tables_show_the_scores_numbers(made):
    rows = _md_table(made["markdown"], AGREEMENT_CAPTION)
    assert len(rows) == 2 * 9
    for index, results in enumerate(made["results"]):
        run = run_views([results])[0]
        mine = rows[9 * index : 9 * (index + 1)]
        assert mine[0][0] == run.label and all(row[0] == "" for row in mine[1:])
        assert [row[1] for row in mine] == [d.abbreviation for d in DIMENSIONS] + ["Overall"]
        blocks = [results["scores"]["dimensions"][d.key] for d in DIMENSIONS] + [results["scores"]["overall"]]
        for row, block in zip(mine, blocks, strict=True):
            stats = block["agreement"]
            cells = row[1:]
            assert cells[1].split(" ")[0] == pct(block["icc"])  # ICC(3,1) first: the headline, as everywhere
            for column, key in ((2, "icc2_1"), (3, "icc1_1"), (4, "krippendorff_alpha"), (6, "spearman")):
                assert cells[column].split(" ")[0] == pct(stats[key]["value"]), key
            assert cells[8].split(" ")[0] == signed(stats["bias"]["value"])
            assert cells[9] == f"{signed(stats['loa_low']['value'])} to {signed(stats['loa_high']['value'])}"
            assert cells[12] == str(int(stats["n_distinct"]["value"]))
    squashed = rows[9:17]
    assert all(row[13] in ("1", "2") for row in squashed) and all(row[12] == "100.0" for row in squashed)


def test_bland_altman_draws_the_pairs_bias_and_limits(made):
    run = run_views(made["results"][1:])[0]
    fig = bland_altman_figure(run, made["references"], title="t")
    for ax, dim in zip(fig.axes, DIMENSIONS, strict=True):
        pairs = pairs_of(run, made["references"], dim.key)
        expected_pairs = sorted(
            (run.predictions[(v, dim.key)], made["references"][(v, dim.key)])
            for v in VIDEOS
            if run.predictions[(v, dim.key)] is not None
        )
        assert sorted(map(tuple, pairs.tolist())) == expected_pairs
        offsets = np.asarray(ax.collections[0].get_offsets(), dtype=float)
        expected_points = np.column_stack([pairs.mean(axis=1), pairs[:, 0] - pairs[:, 1]])
        np.testing.assert_allclose(np.array(sorted(map(tuple, offsets))), np.array(sorted(map(tuple, expected_points))))
        reference = reference_agreement(pairs[:, 0], pairs[:, 1])
        lines = sorted(float(line.get_ydata()[0]) for line in ax.get_lines())
        expected = sorted([0.0, reference["bias"], reference["loa_low"], reference["loa_high"]])
        np.testing.assert_allclose(lines, expected, atol=1e-12)


def test_calibration_bins_by_hand_and_figure(made):
    run = run_views(made["results"][:1])[0]
    pairs = pairs_of(run, made["references"], "empathy")
    bins = calibration_bins(pairs[:, 0], pairs[:, 1])
    for entry in bins:
        inside = [(p, g) for p, g in pairs.tolist() if entry["low"] <= g < entry["high"] or (g == 5.0 == entry["high"])]
        assert entry["n"] == len(inside)
        assert entry["model_mean"] == pytest.approx(sum(p for p, _ in inside) / len(inside), abs=1e-12)
        assert entry["gold_mean"] == pytest.approx(sum(g for _, g in inside) / len(inside), abs=1e-12)
    assert sum(entry["n"] for entry in bins) == len(pairs)
    fig = calibration_figure(run, made["references"], title="t")
    empathy = fig.axes[DIMENSION_KEYS.index("empathy")]
    diagonal, curve = empathy.get_lines()[0], empathy.get_lines()[1]
    assert list(diagonal.get_xdata()) == list(diagonal.get_ydata()) == [1.0, 5.0]
    np.testing.assert_allclose(np.asarray(curve.get_ydata(), dtype=float), [entry["model_mean"] for entry in bins])


def test_histograms_overlay_gold_and_model_counts(made):
    run = run_views(made["results"][1:])[0]
    fig = histogram_figure(run, made["references"], title="t")
    edges = np.round(np.arange(0.95, 5.1, 0.1), 2)
    for ax, dim in zip(fig.axes, DIMENSIONS, strict=True):
        pairs = pairs_of(run, made["references"], dim.key)
        gold_counts, _ = np.histogram(pairs[:, 1], bins=edges)
        model_counts, _ = np.histogram(pairs[:, 0], bins=edges)
        gold, model = ax.patches  # one filled outline per histogram, gold under model
        for patch, counts, label, colour in ((gold, gold_counts, "gold", "C0"), (model, model_counts, "model", "C1")):
            drawn = patch.get_data()
            assert drawn.values.tolist() == counts.tolist() and drawn.edges.tolist() == edges.tolist()
            assert patch.get_label() == label and patch.get_fill() and patch.get_alpha() == 0.5
            assert patch.get_facecolor() == to_rgba(colour, 0.5)
        assert ax.get_title().endswith(f"model values: {len(np.unique(pairs[:, 0]))}")
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["gold", "model"]


def test_figures_and_report_json_say_synthetic_and_hold_the_data(made):
    files, data = made["files"], made["json"]
    assert len(files.agreement_plots) == 6 and all(p.read_bytes()[:4] == b"\x89PNG" for p in files.agreement_plots)
    alts = re.findall(r"<img alt='([^']*)'", made["html"])
    agreement_alts = [alt for alt in alts if alt.startswith(("Bland-Altman", "calibration", "score histograms"))]
    assert len(agreement_alts) == 6 and all(alt.endswith("(SYNTHETIC data)") for alt in agreement_alts)
    assert data["synthetic"] is True
    assert [entry["model"] for entry in data["agreement"]] == ["org/calibrated", "org/squashed"]
    assert data["agreement"][0]["overall"] == made["results"][0]["scores"]["overall"]["agreement"]
    predictions = {(r["video_id"], r["dimension"]): r["prediction"] for r in made["results"][1]["predictions"]}
    expected = json_safe(model_as_rater(predictions, made["references"], made["labels"]))
    assert data["model_as_rater"][1]["dimensions"] == expected["dimensions"]
    assert data["model_as_rater"][1]["certification"]["best_run"] == expected["certification"]["best_run"]
    rater_rows = _md_table(made["markdown"], RATERS_CAPTION)
    vf = expected["dimensions"]["verbal_fluency"]
    squashed_vf = rater_rows[8]
    assert squashed_vf[:2] == ["org/squashed · text · direct", "VF"] and squashed_vf[2] == str(vf["n"])
    assert squashed_vf[3].split(" ")[0] == pct(vf["model_vs_rater"]["R1"]["icc"])
    assert squashed_vf[7].split(" ")[0] == pct(vf["raters_icc"]["icc"])
    certified = _md_table(made["markdown"], "Appendix B certification rule, run on each system's best configuration")
    assert [row[2] for row in certified] == [str(e["certification"]["best_run"]) for e in data["model_as_rater"]]


def test_raters_need_the_references(made, tmp_path):
    from mis_bench_dataset.toolkit.errors import UsageError

    with pytest.raises(UsageError, match="gold scores"):
        write_report(made["results"], tmp_path, raters=made["labels"])


PROBE = r"""
<script>
window.addEventListener('load', function () {
  const images = Array.from(document.images);
  const seen = {
    innerWidth: window.innerWidth,
    scrollWidth: document.documentElement.scrollWidth,
    images: images.map(img => ({
      alt: img.alt, loaded: img.complete && img.naturalWidth > 0,
      width: img.getBoundingClientRect().width, container: img.parentElement.getBoundingClientRect().width,
    })),
    sections: Array.from(document.querySelectorAll('section')).map(s => s.id),
    wraps: Array.from(document.querySelectorAll('.table-wrap')).map(w => w.getBoundingClientRect().right),
    notice: !!document.getElementById('synthetic-notice'),
  };
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
});
</script>
"""


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install chromium)")
def test_report_page_in_chromium_at_1280_px(made, tmp_path):
    page = tmp_path / "report.html"
    page.write_text(made["html"].replace("</body>", PROBE + "</body>"), encoding="utf-8")
    command = [
        BROWSER,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=10000",
        "--dump-dom",
        page.as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=180)
    match = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout, re.S)
    assert match, f"probe did not run; chromium rc={result.returncode} stderr={result.stderr[-2000:]}"
    seen = json.loads(html_lib.unescape(match.group(1)))
    assert seen["innerWidth"] == 1280
    assert seen["scrollWidth"] <= 1280  # nothing pushes the page sideways; wide tables scroll in their box
    assert seen["notice"] is True
    assert {"agreement-beyond-icc-3-1", "the-model-as-one-more-rater"} <= set(seen["sections"])
    assert len(seen["images"]) == len(made["files"].figures)
    for image in seen["images"]:
        assert image["loaded"] and image["alt"].strip()
        assert image["width"] <= image["container"] + 0.5
    assert all(right <= 1280 for right in seen["wraps"])


def test_report_cli_raters(made, tmp_path):
    import contextlib
    import csv
    import io

    from eval_scripts.cli import main

    runs = tmp_path / "runs"
    for i, results in enumerate(made["results"]):
        (runs / f"r{i}").mkdir(parents=True)
        (runs / f"r{i}" / "results.json").write_text(json.dumps(results))
    gold = tmp_path / "gold.csv"
    with gold.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["video_id", "dimension", "score"])
        writer.writerows([v, d, s] for (v, d), s in sorted(made["references"].items()))
    ratings = made["root"] / "ratings.csv"
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        assert main(["report", str(runs), "--raters", str(ratings), "--out", str(tmp_path / "no")]) == 2
    assert err.getvalue().count("\n") == 1 and "--raters needs --references" in err.getvalue()
    out = tmp_path / "report"
    with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
        code = main(
            [
                "report",
                str(runs),
                "--references",
                str(gold),
                "--raters",
                str(ratings),
                "--bootstrap",
                "100",
                "--comparison-bootstrap",
                "0",
                "--out",
                str(out),
            ]
        )
    assert code == 0
    data = json.loads((out / "report.json").read_text())
    assert [entry["model"] for entry in data["model_as_rater"]] == ["org/calibrated", "org/squashed"]
    assert data["model_as_rater"][0]["dimensions"] == made["json"]["model_as_rater"][0]["dimensions"]

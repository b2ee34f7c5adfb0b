"""`mis-bench stats`: Table 6, Figure 5, Figure 6 and the Table 2 ceiling of a build, against an
independent computation from the per-rater labels (decimal arithmetic, scipy, pingouin)."""

from __future__ import annotations

import csv
import json
import math
from collections import Counter, defaultdict
from decimal import ROUND_HALF_UP, Decimal, localcontext

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sp_stats

from mis_bench_dataset import (
    DIMENSION_KEYS,
    DIMENSIONS,
    build_dataset,
    compute_stats,
    generate_synthetic_release,
    read_labels,
    write_stats,
)
from mis_bench_dataset.builder.stats import HISTOGRAM_BINS, GoldTable, dataset_stats, histogram, summarize
from mis_bench_dataset.release.labels import write_gold_wide
from mis_bench_dataset.toolkit.errors import DataError, UsageError

# (video index, dimension) pairs whose ratings are all removed: those videos lack that gold score.
UNRATED = ((0, "empathy"), (3, "verbal_fluency"), (3, "arrr"), (7, "wau"))


@pytest.fixture(scope="module")
def labelled(tmp_path_factory):
    """A SYNTHETIC build whose per-rater labels leave some (video, dimension) pairs unrated."""
    root = tmp_path_factory.mktemp("stats")
    release = generate_synthetic_release(root / "release", n_videos=60, seed=3)
    with release.ratings_csv.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    ids = sorted({r["video_id"] for r in rows})
    dropped = {(ids[i], dim) for i, dim in UNRATED}
    ratings = root / "ratings.csv"
    with ratings.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=["video_id", "rater", "dimension", "score"])
        writer.writeheader()
        writer.writerows(r for r in rows if (r["video_id"], r["dimension"]) not in dropped)
    build_dataset(release.release_dir, root / "build", labels=ratings, progress=False)
    return root / "build", ratings


def _hand_gold(ratings_csv) -> dict[str, dict[str, Decimal]]:
    """The paper's aggregation by hand: mean of the available ratings, one decimal, half up."""
    by_pair: dict[tuple[str, str], list[Decimal]] = defaultdict(list)
    with open(ratings_csv, newline="") as handle:
        for row in csv.DictReader(handle):
            by_pair[(row["video_id"], row["dimension"])].append(Decimal(row["score"]))
    gold: dict[str, dict[str, Decimal]] = defaultdict(dict)
    for (video, dim), scores in by_pair.items():
        gold[video][dim] = (sum(scores) / len(scores)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    return gold


def _hand_summary(values: list[Decimal]) -> dict:
    with localcontext() as ctx:
        ctx.prec = 60
        n = len(values)
        mean = sum(values) / n
        sd = (sum((v - mean) ** 2 for v in values) / (n - 1)).sqrt()
        return {"mean": float(mean), "sd": float(sd), "min": float(min(values)), "max": float(max(values)), "n": n}


def _split_ids(build, split) -> list[str]:
    return (
        pq.read_table(sorted((build / "features").glob(f"{split}-*.parquet")), columns=["video_id"])
        .column("video_id")
        .to_pylist()
    )


def _check_against_hand(stats: dict, gold: dict, video_ids: list[str]) -> None:
    for key in DIMENSION_KEYS:
        values = [gold[v][key] for v in video_ids if key in gold.get(v, {})]
        assert stats["dimensions"][key] == _hand_summary(values)  # exact: both are the correctly rounded floats
        counts = Counter(float(v) for v in values)
        assert stats["histograms"]["counts"][key] == [counts.get(b, 0) for b in HISTOGRAM_BINS]
        assert sum(stats["histograms"]["counts"][key]) == stats["dimensions"][key]["n"]
    complete = [v for v in video_ids if len(gold.get(v, {})) == len(DIMENSION_KEYS)]
    assert stats["n_complete_videos"] == len(complete)
    matrix = np.array([[float(gold[v][k]) for k in DIMENSION_KEYS] for v in complete])
    for i, a in enumerate(DIMENSION_KEYS):
        for j, b in enumerate(DIMENSION_KEYS):
            reference = sp_stats.pearsonr(matrix[:, i], matrix[:, j]).statistic
            assert stats["correlation"][a][b] == pytest.approx(reference, abs=1e-12)


def test_stats_json_equals_an_independent_computation_from_the_ratings(labelled):
    build, ratings = labelled
    stats = compute_stats(build, "all", ratings)
    gold = _hand_gold(ratings)
    ids = [v for split in ("train", "validation", "test") for v in _split_ids(build, split)]
    assert stats["n_videos"] == len(ids) == 60
    _check_against_hand(stats, gold, ids)
    assert stats["n_complete_videos"] == 60 - 3  # videos 0, 3 and 7 miss a dimension
    assert stats["dimensions"]["arrr"]["n"] == 59 and stats["dimensions"]["empathy"]["n"] == 59
    # Written beside the figures, strict JSON, and what the CLI reads back.
    written = json.loads((build / "stats" / "stats.json").read_text(), parse_constant=_no_constants)
    assert written == json.loads(json.dumps(stats))


def _no_constants(name):
    raise AssertionError(f"non-strict JSON constant {name}")


def test_one_split_and_the_groups_agree_with_all(labelled):
    build, ratings = labelled
    gold = _hand_gold(ratings)
    everything = compute_stats(build, "all")
    for split in ("train", "validation", "test"):
        one = compute_stats(build, split)
        ids = _split_ids(build, split)
        assert one["split"] == split and one["n_videos"] == len(ids)
        _check_against_hand(one, gold, ids)
        assert everything["groups"]["split"][split]["dimensions"] == one["dimensions"]
        assert everything["groups"]["split"][split]["n_videos"] == len(ids)
    for grouping in ("split", "time_point", "stimulus"):
        assert sum(g["n_videos"] for g in everything["groups"][grouping].values()) == 60
    t2 = [v for v in ids_of(build) if "_T2_" in v]
    assert everything["groups"]["time_point"]["T2"]["dimensions"] == {
        key: _hand_summary([gold[v][key] for v in t2 if key in gold[v]]) for key in DIMENSION_KEYS
    }


def ids_of(build) -> list[str]:
    return [v for split in ("train", "validation", "test") for v in _split_ids(build, split)]


def _pingouin_icc3(frame: pd.DataFrame) -> tuple[float, list[float]]:
    import pingouin as pg

    table = pg.intraclass_corr(frame, targets="video_id", raters="rater", ratings="score").set_index("Type")
    name = "ICC(C,1)" if "ICC(C,1)" in table.index else "ICC3"
    return float(table.loc[name, "ICC"]), list(table.loc[name, "CI95"])


@pytest.mark.parametrize("split", ["all", "train"])
def test_ceiling_equals_pingouin_on_the_fully_rated_videos(labelled, split):
    build, ratings = labelled
    stats = compute_stats(build, split, ratings)
    frame = pd.read_csv(ratings)
    frame = frame[frame.video_id.isin(ids_of(build) if split == "all" else _split_ids(build, split))]
    per_video = frame.groupby("video_id").size()
    fully = per_video[per_video == 3 * len(DIMENSION_KEYS)].index
    assert stats["n_fully_rated_videos"] == len(fully) > 1
    for key in DIMENSION_KEYS:
        icc, (low, high) = _pingouin_icc3(frame[(frame.dimension == key) & frame.video_id.isin(fully)])
        ceiling = stats["human_ceiling"][key]
        assert ceiling["icc"] == pytest.approx(icc, abs=1e-9) and ceiling["n_videos"] == len(fully)
        assert ceiling["ci_low"] == pytest.approx(low, abs=0.006)  # pingouin rounds its CI to 2 decimals
        assert ceiling["ci_high"] == pytest.approx(high, abs=0.006)


def test_card_shows_the_tables_and_figures_and_still_loads(labelled):
    from datasets import load_dataset

    build, _ = labelled
    text = (build / "README.md").read_text()
    meta = yaml.safe_load(text.split("---\n", 2)[1])
    body = text.split("---\n", 2)[2]
    stats = json.loads((build / "stats" / "stats.json").read_text())
    section = body.split("## Gold-score statistics", 1)[1].split("\n## ", 1)[0]
    for dim in DIMENSIONS:
        s = stats["dimensions"][dim.key]
        row = f"| {dim.name} | {dim.abbreviation} | {s['mean']:.3f} | {s['sd']:.3f} | {s['min']:.1f} | {s['max']:.1f} |"
        assert f"{row} {s['n']} |" in section
    header = "|  | " + " | ".join(d.abbreviation for d in DIMENSIONS) + " |"
    assert header in section
    row = "| VF | " + " | ".join(f"{stats['correlation']['verbal_fluency'][k]:.2f}" for k in DIMENSION_KEYS) + " |"
    assert row in section
    for name in ("correlation.png", "histograms.png"):
        assert f"](stats/{name})" in section
        assert (build / "stats" / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| test |" in section and "| T1 |" in section and "fully rated videos" in section
    # The YAML lists the data files, so the PNGs and stats.json are not taken for data.
    assert all(f["path"].endswith(".parquet") for c in meta["configs"] for f in c["data_files"])
    import tempfile

    with tempfile.TemporaryDirectory() as cache:
        scoring = load_dataset(str(build), split="test", cache_dir=cache)
        features = load_dataset(str(build), "features", split="test", cache_dir=cache)
    assert scoring.column_names[-1] == "score" and len(scoring) == 8 * len(features)


def test_build_without_labels_has_no_gold_and_says_so(tmp_path, capsys):
    release = generate_synthetic_release(tmp_path / "rel", n_videos=6, seed=1)
    build_dataset(release.release_dir, tmp_path / "out", progress=False)
    assert not (tmp_path / "out" / "stats").exists()
    assert "Gold-score statistics" not in (tmp_path / "out" / "README.md").read_text()
    assert _cli(["stats", str(tmp_path / "out"), "--out", str(tmp_path / "s")]) == 1
    err = capsys.readouterr().err
    assert "no gold scores" in err and "--labels" in err and str(tmp_path / "out") in err
    assert not (tmp_path / "s" / "stats.json").exists()


def test_wide_labels_give_stats_without_ceiling(tmp_path):
    release = generate_synthetic_release(tmp_path / "rel", n_videos=8, seed=4)
    wide = write_gold_wide(tmp_path / "gold.csv", read_labels(release.ratings_csv).gold)
    build_dataset(release.release_dir, tmp_path / "out", labels=wide, progress=False)
    stats = json.loads((tmp_path / "out" / "stats" / "stats.json").read_text())
    assert stats["human_ceiling"] is None and stats["dimensions"]["wau"]["n"] == 8
    with pytest.raises(UsageError, match="per-rater"):
        compute_stats(tmp_path / "out", "all", wide)


def test_labels_of_another_build_are_refused(labelled, tmp_path):
    build, _ = labelled
    other = generate_synthetic_release(tmp_path / "rel", n_videos=8, seed=9)
    with pytest.raises(DataError, match="other gold scores"):
        compute_stats(build, "all", other.ratings_csv)


def _cli(argv):
    from eval_scripts.cli import main

    return main(argv)


def test_cli_json_is_strict_and_files_are_written(labelled, tmp_path, capsys):
    build, ratings = labelled
    assert (
        _cli(
            [
                "stats",
                str(build),
                "--split",
                "validation",
                "--labels",
                str(ratings),
                "--out",
                str(tmp_path / "s"),
                "--json",
            ]
        )
        == 0
    )
    printed = json.loads(capsys.readouterr().out, parse_constant=_no_constants)
    assert printed == json.loads((tmp_path / "s" / "stats.json").read_text(), parse_constant=_no_constants)
    assert printed["split"] == "validation" and set(printed["dimensions"]) == set(DIMENSION_KEYS)
    written = {p.name for p in (tmp_path / "s").iterdir() if not p.name.startswith(".")}
    assert written == {"stats.json", "correlation.png", "histograms.png"}
    assert _cli(["stats", str(build), "--out", str(tmp_path / "s")]) == 0  # replaces its own files
    out = capsys.readouterr().out
    assert "VF" in out and "videos per split" in out and "stats.json" in out
    # not a split name: argparse refuses it (exit 2, one line)
    assert _cli(["stats", str(build), "--split", "dev", "--out", str(tmp_path / "t")]) == 2
    assert "invalid choice: 'dev'" in capsys.readouterr().err
    assert _cli(["stats", str(build), "--out", str(build / "mine")]) == 2
    assert "overlaps the input" in capsys.readouterr().err


def test_undefined_values_are_null_and_json_strict():
    gold = np.full((3, len(DIMENSION_KEYS)), 3.0)
    gold[:, 0] = [2.0, 3.5, 4.1]
    gold[1:, 1] = np.nan  # one score: no sd
    table = GoldTable(
        ("AB0001_T1_Luke", "AB0001_T2_Luke", "AB0002_T1_Sean"),
        {"split": ("train", "train", "test"), "time_point": ("T1", "T2", "T1"), "stimulus": ("Luke", "Luke", "Sean")},
        gold,
    )
    stats = dataset_stats(table)
    text = json.dumps(stats, allow_nan=False)
    assert stats["dimensions"]["hope_and_pe"] == {"mean": 3.0, "sd": None, "min": 3.0, "max": 3.0, "n": 1}
    assert stats["n_complete_videos"] == 1 and stats["correlation"]["wau"]["wau"] is None
    assert json.loads(text)["groups"]["split"]["test"]["dimensions"]["verbal_fluency"]["sd"] is None


def test_write_stats_never_replaces_files_it_did_not_write(tmp_path):
    (tmp_path / "histograms.png").write_bytes(b"mine")
    table = GoldTable(
        ("AB0001_T1_Luke", "AB0002_T1_Luke"),
        {"split": ("train",) * 2, "time_point": ("T1",) * 2, "stimulus": ("Luke",) * 2},
        np.array([[3.0] * 8, [4.0] * 8]),
    )
    with pytest.raises(DataError, match="was not written by"):
        write_stats(dataset_stats(table), tmp_path)
    assert (tmp_path / "histograms.png").read_bytes() == b"mine"


_scores = st.lists(st.integers(10, 50).map(lambda k: k / 10), min_size=1, max_size=60)


@settings(max_examples=60, deadline=None)
@given(_scores)
def test_summary_and_histogram_are_exact(values):
    decimals = [Decimal(repr(v)) for v in values]
    expected = (
        _hand_summary(decimals)
        if len(values) > 1
        else {"mean": values[0], "sd": None, "min": values[0], "max": values[0], "n": 1}
    )
    assert summarize(values + [math.nan]) == expected
    counts = histogram(values)
    assert sum(counts) == len(values)
    assert {b: c for b, c in zip(HISTOGRAM_BINS, counts, strict=True) if c} == dict(Counter(values))


def _drawn_text_boxes(fig) -> list[tuple[str, object]]:
    """(text, extent in pixels) of every text the Agg renderer draws, as it draws it."""
    renderer = fig.canvas.get_renderer()
    drawn: dict[int, object] = {}
    draw_text = renderer.draw_text

    def recording(gc, x, y, s, prop, angle, ismath=False, mtext=None):
        drawn[id(mtext)] = mtext
        return draw_text(gc, x, y, s, prop, angle, ismath=ismath, mtext=mtext)

    renderer.draw_text = recording
    fig.draw(renderer)
    return [(t.get_text(), t.get_window_extent(renderer)) for t in drawn.values()]


def _stress_doc(synthetic: bool) -> dict:
    """A statistics document with the widest labels a build gives: five-digit counts, every mean and sd."""
    rng = np.random.default_rng(0)
    n = 240
    gold = np.round(np.clip(rng.normal(3.2, 0.8, (n, len(DIMENSION_KEYS))), 1, 5), 1)
    ids = tuple(f"AB{i // 24:04d}_T{i % 3 + 1}_Sean" for i in range(n))
    table = GoldTable(ids, {"split": ("train",) * n, "time_point": ("T1",) * n, "stimulus": ("Sean",) * n}, gold)
    doc = {"synthetic": synthetic, **dataset_stats(table)}
    doc["n_complete_videos"] = 99_999
    for key in DIMENSION_KEYS:
        doc["dimensions"][key]["n"] = 99_999
        doc["histograms"]["counts"][key] = [c * 100 for c in doc["histograms"]["counts"][key]]
    return doc


@pytest.mark.parametrize("synthetic", [True, False])
def test_figure_text_stays_on_the_canvas_and_never_overlaps(synthetic):
    from matplotlib.transforms import Bbox

    from mis_bench_dataset.builder.stats_plots import heatmap_figure, histograms_figure

    doc = _stress_doc(synthetic)
    for make in (heatmap_figure, histograms_figure):
        fig, title = make(doc)
        boxes = _drawn_text_boxes(fig)
        texts = [text for text, _ in boxes]
        assert ("SYNTHETIC data: " in title) == synthetic
        if synthetic or make is heatmap_figure:  # the histograms of real data carry their title in the PNG only
            assert title in texts
        canvas = fig.bbox
        for text, box in boxes:
            assert canvas.x0 <= box.x0 and box.x1 <= canvas.x1 and canvas.y0 <= box.y0 and box.y1 <= canvas.y1, text
        for i, (text_a, a) in enumerate(boxes):
            for text_b, b in boxes[i + 1 :]:
                both = Bbox.intersection(a, b)
                assert both is None or both.width <= 0 or both.height <= 0, (make.__name__, text_a, text_b)

"""Leaderboard: bad submissions rejected with reasons (never stopping the rest), scores
recomputed from predictions with the metric, CSV / JSON / page agree, Space serves the same page."""

from __future__ import annotations

import csv
import json
import math
import threading
import urllib.error
import urllib.request

import numpy as np
import pytest

from eval_scripts import build_leaderboard, write_leaderboard
from eval_scripts.leaderboard import render_page
from eval_scripts.leaderboard.disclosure import significant
from eval_scripts.leaderboard.space_app import make_server, site_files
from mis_bench_dataset import DIMENSION_KEYS, HUMAN_CEILING
from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_icc_metric import ResamplingOptions, paired_comparison, score_predictions

from _leaderboard_helpers import VIDEO_IDS, make_references, make_results, noisy_predictions

N_BOOT = 200


def _write(path, obj):
    path.write_text(json.dumps(obj), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def references():
    return make_references()


@pytest.fixture(scope="module")
def systems(references):
    return {
        "strong": noisy_predictions(references, 0.25, seed=11),
        "weak": noisy_predictions(references, 0.9, seed=12),
        "gappy": noisy_predictions(references, 0.4, seed=13, none_rate=0.1),
    }


@pytest.fixture(scope="module")
def board_dir(tmp_path_factory, references, systems):
    folder = tmp_path_factory.mktemp("submissions")
    _write(folder / "a_strong.json", make_results(systems["strong"], model="org/strong <b>bold</b>"))
    weak = make_results(systems["weak"], model="org/weak", modality="audio+text", prompt_style="cot")
    # A submitter's own (inflated) scores are ignored: the board recomputes from predictions.
    weak["scores"] = {"dimensions": {}, "overall": {"icc": 0.99}, "mean_icc": 0.99}
    _write(folder / "b_weak.json", weak)
    _write(folder / "c_gappy.json", make_results(systems["gappy"], model="org/gappy", modality="video+text"))
    (folder / "d_malformed.json").write_text('{"schema_version": "1.1", "system": ', encoding="utf-8")
    wrong_version = make_results(systems["strong"], model="org/old")
    wrong_version["schema_version"] = "2.0"
    _write(folder / "e_version.json", wrong_version)
    missing = make_results({k: v for k, v in systems["strong"].items() if k[0] != VIDEO_IDS[0]}, model="org/missing")
    _write(folder / "f_missing.json", missing)
    (folder / "g_nan.json").write_text(
        json.dumps(make_results(systems["weak"], model="org/nan")).replace(
            '"prediction": 3.', '"prediction": NaN, "n": 3.', 1
        )
    )
    stringy = make_results(systems["weak"], model="org/stringy")
    stringy["predictions"][0]["prediction"] = "4.0"
    _write(folder / "h_string.json", stringy)
    extra = make_results(systems["weak"], model="org/extra")
    extra["predictions"].append({"video_id": "XX0001_T1_Luke", "dimension": "abc", "prediction": 2.0})
    _write(folder / "i_extra.json", extra)
    (folder / "notes.txt").write_text("not a submission")
    return folder


@pytest.fixture(scope="module")
def board(board_dir, references):
    return build_leaderboard(board_dir, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=3))


def test_every_bad_submission_is_rejected_with_its_reason(board):
    reasons = {r["file"]: "\n".join(r["reasons"]) for r in board["rejected"]}
    assert set(reasons) == {
        "d_malformed.json",
        "e_version.json",
        "f_missing.json",
        "g_nan.json",
        "h_string.json",
        "i_extra.json",
    }
    assert "malformed JSON at line 1" in reasons["d_malformed.json"]
    assert "unsupported schema version '2.0'" in reasons["e_version.json"]
    assert "coverage: 8 of 240 (video, dimension) pairs" in reasons["f_missing.json"]
    assert "NaN is not valid JSON" in reasons["g_nan.json"]
    assert "'4.0' is not a number in [1.0, 5.0] or null" in reasons["h_string.json"]
    assert "video 'XX0001_T1_Luke' is not in the evaluated split" in reasons["i_extra.json"]


def test_ranked_by_overall_icc_with_recomputed_scores(board, references, systems):
    """Only entries answering every pair are ranked; the gappy one is listed with its coverage, no figure."""
    assert [e["model"] for e in board["entries"]] == ["org/strong <b>bold</b>", "org/weak"]
    assert [e["rank"] for e in board["entries"]] == [1, 2]
    assert board["n_common_videos"] == len(VIDEO_IDS)
    for entry, name in zip(board["entries"], ["strong", "weak"], strict=True):
        expected = json_safe(
            score_predictions(systems[name], references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=3))
        )
        assert entry["scores"] == significant(expected)  # published at three significant digits
    weak = board["entries"][1]
    assert weak["scores"]["overall"]["icc"] < 0.9  # not the submitted 0.99
    (gappy,) = board["unranked"]
    n_answered = sum(value is not None for value in systems["gappy"].values())
    assert (gappy["file"], gappy["n_answered"], gappy["n_pairs"]) == ("c_gappy.json", n_answered, len(references))
    assert "does not answer the whole split" in gappy["reason"] and "scores" not in gappy


def test_paired_comparison_against_the_leader(board, references, systems):
    assert board["entries"][0]["vs_leader"] is None
    direct = paired_comparison(
        systems["strong"], systems["weak"], references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=3)
    )
    weak = board["entries"][1]["vs_leader"]
    assert weak["p_value"] == significant(direct["overall"]["p_value"])
    assert weak["delta"] == significant(direct["overall"]["delta"])
    assert weak["delta"] > 0 and weak["p_value"] < 0.05
    assert weak["dimension_p_values"] == {k: significant(v["p_value"]) for k, v in direct["dimensions"].items()}


def test_human_ceiling_is_table_2(board):
    assert board["human_ceiling"]["empathy"] == {"icc": HUMAN_CEILING["empathy"].icc, "icc_ci": [0.38, 0.48]}


def test_a_crash_while_scoring_rejects_only_that_submission(board_dir, references, systems, monkeypatch):
    import mis_icc_metric

    real = mis_icc_metric.score_predictions

    def flaky(predictions, *args, **kwargs):
        if predictions == systems["weak"]:
            raise RuntimeError("boom")
        return real(predictions, *args, **kwargs)

    monkeypatch.setattr(mis_icc_metric, "score_predictions", flaky, raising=False)
    result = build_leaderboard(board_dir, references, resampling=ResamplingOptions(n_bootstrap=20))
    assert [e["model"] for e in result["entries"]] == ["org/strong <b>bold</b>"]
    crashed = next(r for r in result["rejected"] if r["file"] == "b_weak.json")
    assert crashed["reasons"] == ["could not be scored: RuntimeError: boom"]


def test_empty_and_missing_folders(tmp_path, references):
    empty = build_leaderboard(tmp_path, references, resampling=ResamplingOptions(n_bootstrap=10))
    assert empty["entries"] == [] and empty["rejected"] == []
    assert '<tbody class="entries"></tbody>' in render_page(empty)
    with pytest.raises(DataError, match="does not exist"):
        build_leaderboard(tmp_path / "nope", references)


def test_csv_and_json_and_page_agree(tmp_path, board):
    files = write_leaderboard(board, tmp_path)
    assert json.loads(files.json.read_text()) == board
    with files.csv.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [r["status"] for r in rows] == ["ranked", "ranked", "unranked: " + board["unranked"][0]["reason"]]
    assert [int(r["rank"]) for r in rows[:2]] == [1, 2] and rows[2]["rank"] == "" and rows[2]["overall_icc"] == ""
    for row, entry in zip(rows, board["entries"], strict=False):
        assert float(row["overall_icc"]) == entry["scores"]["overall"]["icc"]
        assert float(row["empathy_icc"]) == entry["scores"]["dimensions"]["empathy"]["icc"]
        assert row["model"] == entry["model"]
    page = files.html.read_text()
    assert "<b>bold</b>" not in page and "org/strong &lt;b&gt;bold&lt;/b&gt;" in page
    assert "Human single rater (paper Table 2)" in page and "e_version.json" in page
    p_emp = board["entries"][1]["vs_leader"]["dimension_p_values"]["empathy"]
    assert f"Emp. {p_emp:.4f}" in page


def test_script_breakout_in_a_model_name_is_neutralised(board):
    hostile = json.loads(json.dumps(board))
    hostile["entries"][0]["model"] = "</script><script>alert(1)</script>"
    page = render_page(hostile)
    assert "<script>alert(1)" not in page
    embedded = page.split('id="leaderboard-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded)["entries"][0]["model"] == hostile["entries"][0]["model"]


def test_space_app_serves_the_same_page(board):
    files = site_files(board)
    server = make_server(files, host="127.0.0.1", port=0)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        base = f"http://127.0.0.1:{server.server_address[1]}"
        with urllib.request.urlopen(base + "/") as response:
            assert response.read().decode("utf-8") == render_page(board)
        with urllib.request.urlopen(base + "/leaderboard.json") as response:
            assert json.loads(response.read()) == board
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(base + "/secret-labels.csv")
        assert info.value.code == 404
    finally:
        server.shutdown()
        server.server_close()


def test_nan_scores_become_null_in_json(tmp_path, references):
    """An ICC the formula leaves undefined (constant gold and constant predictions on one dimension: 0 / 0) is
    NaN in the scores; the board writes it as null in strict JSON, and the other dimensions keep their numbers."""
    flat_gold = {key: (3.0 if key[1] == "empathy" else gold) for key, gold in references.items()}
    predictions = {key: (3.0 if key[1] == "empathy" else max(1.0, gold - 0.3)) for key, gold in references.items()}
    assert math.isnan(
        score_predictions(predictions, flat_gold, resampling=ResamplingOptions(n_bootstrap=0))["dimensions"]["empathy"][
            "icc"
        ]
    )
    folder = tmp_path / "subs"
    folder.mkdir()
    _write(folder / "flat.json", make_results(predictions, model="flat"))
    result = build_leaderboard(folder, flat_gold, resampling=ResamplingOptions(n_bootstrap=20))
    text = write_leaderboard(result, tmp_path / "out").json.read_text()
    dimensions = json.loads(text)["entries"][0]["scores"]["dimensions"]
    assert dimensions["empathy"]["icc"] is None
    assert all(math.isfinite(dimensions[key]["icc"]) for key in DIMENSION_KEYS if key != "empathy")


def test_csv_neutralises_spreadsheet_formulas(board):
    from eval_scripts.leaderboard.outputs import csv_rows

    hostile = json.loads(json.dumps(board))
    hostile["entries"][0]["model"] = '=HYPERLINK("http://x","click")'
    hostile["entries"][0]["backend"] = "@SUM(A1)"
    row = csv_rows(hostile)[0]
    assert row["model"] == "'" + hostile["entries"][0]["model"] and row["backend"] == "'@SUM(A1)"
    assert csv_rows(board)[1]["model"] == board["entries"][1]["model"]


MUTATIONS = [
    lambda obj: obj,
    lambda obj: obj.update(schema_version="9"),
    lambda obj: obj["predictions"].pop(),
    lambda obj: obj["predictions"].append(dict(obj["predictions"][0])),
    lambda obj: obj["predictions"][0].update(prediction="x"),
    lambda obj: obj["predictions"][0].update(prediction=None),
    lambda obj: obj["predictions"][1].update(video_id="nope"),
    lambda obj: obj.update(system=None),
    lambda obj: obj.update(scores={"bogus": True}),
    lambda obj: obj["dataset"].update(split="train"),
]


def test_every_file_is_either_ranked_or_rejected_never_lost(tmp_path, references):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    base = make_results(noisy_predictions(references, 0.5, seed=0))

    @settings(max_examples=20, deadline=None, database=None)
    @given(choices=st.lists(st.integers(0, len(MUTATIONS)), min_size=1, max_size=4), garbage=st.binary(max_size=30))
    def check(choices, garbage):
        folder = tmp_path / f"case{len(list(tmp_path.iterdir()))}"
        folder.mkdir()
        for index, choice in enumerate(choices):
            path = folder / f"s{index}.json"
            if choice == len(MUTATIONS):
                path.write_bytes(garbage)
            else:
                obj = json.loads(json.dumps(base))
                MUTATIONS[choice](obj)
                path.write_text(json.dumps(obj))
        result = build_leaderboard(folder, references, resampling=ResamplingOptions(n_bootstrap=10))
        ranked = [e["file"] for e in result["entries"]]
        unranked = [e["file"] for e in result["unranked"]]
        rejected = [r["file"] for r in result["rejected"]]
        assert sorted(ranked + unranked + rejected) == sorted(p.name for p in folder.iterdir())
        assert len(ranked) <= 1  # one name in one setting is one entry; copies are duplicates or taken
        assert all(r["reasons"] for r in result["rejected"])

    check()


def test_every_row_of_the_page_has_a_cell_under_each_column(tmp_path, references, systems):
    """Ranked rows, the floor row and the ceiling row carry one cell per column, in the columns' order (a
    column added to the entries but not to the floor row would shift every floor number one column left)."""
    from html.parser import HTMLParser

    from eval_scripts.formats.results import BASELINE_BACKEND, BASELINE_MODEL_IDS
    from eval_scripts.leaderboard.page import columns

    _write(tmp_path / "a.json", make_results(systems["strong"], model="org/strong"))
    floor = make_results({key: 3.5 for key in references}, model=BASELINE_MODEL_IDS["mean"])
    floor["system"]["backend"] = BASELINE_BACKEND
    _write(tmp_path / "b.json", floor)
    board = build_leaderboard(tmp_path, references, resampling=ResamplingOptions(n_bootstrap=20, seed=0))
    assert len(board["entries"]) == 1 and len(board["floors"]) == 1

    class Rows(HTMLParser):
        def __init__(self):
            super().__init__()
            self.rows: list[tuple[str, list]] = []

        def handle_starttag(self, tag, attrs):
            attrs = dict(attrs)
            if tag == "tr" and attrs.get("class") in ("entry", "floor", "ceiling"):
                self.rows.append((attrs["class"], []))
            elif tag == "td" and self.rows and "colspan" not in attrs:  # not the detail row's one cell
                self.rows[-1][1].append(attrs.get("data-key"))

    parser = Rows()
    parser.feed(render_page(board))
    keys = [key for key, _, _ in columns(board)]
    kinds = [kind for kind, _ in parser.rows]
    assert kinds == ["entry", "floor", "ceiling"]
    for kind, cells in parser.rows:
        assert len(cells) == len(keys), (kind, cells)
        if kind != "ceiling":  # the ceiling row leaves the columns without a Table 2 value blank
            assert cells == keys, kind


def test_equal_overall_icc_is_decided_by_the_mean_icc_not_by_arrival(tmp_path, references):
    """The documented tie-break (RANKING_RULE: overall ICC, then mean ICC, then the earlier received): two systems
    with the same per-video means (so the same overall ICC) but different dimensions. The one with the lower mean
    ICC arrives first and sorts first by file name; the higher mean ICC must still rank first."""
    import os

    from eval_scripts.leaderboard.scoring import RANKING_RULE

    assert "then mean ICC" in RANKING_RULE
    steady = noisy_predictions(references, 0.4, seed=21)
    # Move score between two dimensions of every video: each video's mean (the overall score) is unchanged.
    rng = np.random.default_rng(5)
    shuffled = dict(steady)
    for video in VIDEO_IDS:
        up, down = rng.choice(DIMENSION_KEYS, size=2, replace=False)
        shift = min(0.8, 5.0 - steady[(video, up)], steady[(video, down)] - 1.0)
        shuffled[(video, up)] = steady[(video, up)] + shift
        shuffled[(video, down)] = steady[(video, down)] - shift
    earlier = _write(tmp_path / "a_shuffled.json", make_results(shuffled, model="org/shuffled"))
    later = _write(tmp_path / "b_steady.json", make_results(steady, model="org/steady"))
    os.utime(earlier, (1_700_000_000, 1_700_000_000))
    os.utime(later, (1_700_000_000 + 86_400, 1_700_000_000 + 86_400))

    board = build_leaderboard(tmp_path, references, resampling=ResamplingOptions(n_bootstrap=N_BOOT, seed=3))
    by_model = {e["model"]: e for e in board["entries"]}
    assert set(by_model) == {"org/steady", "org/shuffled"}
    scores = {model: entry["scores"] for model, entry in by_model.items()}
    assert scores["org/steady"]["overall"]["icc"] == scores["org/shuffled"]["overall"]["icc"]  # a tie as published
    assert scores["org/steady"]["mean_icc"] > scores["org/shuffled"]["mean_icc"]
    assert [e["model"] for e in board["entries"]] == ["org/steady", "org/shuffled"]
    assert [e["rank"] for e in board["entries"]] == [1, 2]

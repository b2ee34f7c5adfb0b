"""The leaderboard against a submitter who sends files to learn the labels, win by abstaining, take
another's identity or break the page (issue 30). Every hostile file is generated here."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts import BoardRules, build_leaderboard
from eval_scripts.formats.results import BASELINE_BACKEND, BASELINE_MODEL_IDS
from eval_scripts.leaderboard import render_page
from eval_scripts.leaderboard.disclosure import MIN_PUBLISHED_VIDEOS
from eval_scripts.leaderboard.identity import NEAR_COPY_CORRELATION, copy_correlation
from eval_scripts.leaderboard.outputs import csv_text, json_text
from eval_scripts.leaderboard.received import Request
from eval_scripts.leaderboard.space_app import site_files
from mis_bench_dataset import DIMENSION_KEYS
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_icc_metric import ResamplingOptions, score_predictions

from _leaderboard_helpers import VIDEO_IDS, make_references, make_results, noisy_predictions

N_BOOT = 20
T0 = dt.datetime(2026, 6, 1, 12, 0, tzinfo=dt.timezone.utc)


@pytest.fixture(scope="module")
def references():
    return make_references(VIDEO_IDS, seed=7)


def _write(folder, name, obj):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(json.dumps(obj), encoding="utf-8")
    return name


def _board(folder, references, requests=None, **rules):
    resampling = ResamplingOptions(n_bootstrap=N_BOOT, seed=1)
    return build_leaderboard(folder, references, resampling=resampling, rules=BoardRules(**rules), requests=requests)


# ----------------------------------------------------------------------------- label recovery


def _probe_one(video, references):
    """Every prediction null but one video's, set to 1.0: each gold is 1 + sqrt(MSE) of its dimension."""
    return {key: (1.0 if key[0] == video else None) for key in references}


def _recover_one(scores) -> dict:
    """The attacker's step: gold = 1 + sqrt(MSE) wherever an MSE is published."""
    recovered = {}
    for key, block in ((scores or {}).get("dimensions") or {}).items():
        if isinstance(block, dict) and block.get("mse") is not None:
            recovered[key] = 1 + math.sqrt(block["mse"])
    return recovered


def _recover_two(scores_low, scores_high, n: int) -> dict:
    """Two submissions equal but on one video (1.0 in one, 5.0 in the other): per dimension the MSE difference
    is ((1 - g)^2 - (5 - g)^2) / n = (8 g - 24) / n, so g = (n * difference + 24) / 8."""
    recovered = {}
    for key in DIMENSION_KEYS:
        low = (((scores_low or {}).get("dimensions") or {}).get(key) or {}).get("mse")
        high = (((scores_high or {}).get("dimensions") or {}).get(key) or {}).get("mse")
        if low is not None and high is not None:
            recovered[key] = (n * (low - high) + 24) / 8
    return recovered


def _published(board, file):
    for entry in [*board["entries"], *board["unranked"]]:
        if entry["file"] == file:
            return entry.get("scores")
    return None


def test_the_probes_recover_every_label_from_full_precision_figures(references):
    """The control: against what the board used to publish (the metric's figures), both probes work."""
    video = VIDEO_IDS[4]
    raw = json_safe(
        score_predictions(_probe_one(video, references), references, resampling=ResamplingOptions(n_bootstrap=0))
    )
    assert _recover_one(raw) == pytest.approx({d: references[(video, d)] for d in DIMENSION_KEYS}, abs=1e-9)
    base = noisy_predictions(references, 0.5, seed=3)
    low = {**base, **{(video, d): 1.0 for d in DIMENSION_KEYS}}
    high = {**base, **{(video, d): 5.0 for d in DIMENSION_KEYS}}
    raw_low, raw_high = (
        json_safe(score_predictions(p, references, resampling=ResamplingOptions(n_bootstrap=0))) for p in (low, high)
    )
    recovered = _recover_two(raw_low, raw_high, len(VIDEO_IDS))
    assert recovered == pytest.approx({d: references[(video, d)] for d in DIMENSION_KEYS}, abs=1e-9)


def test_no_label_is_recovered_from_a_hidden_label_board(tmp_path, references):
    video = VIDEO_IDS[4]
    base = noisy_predictions(references, 0.5, seed=3)
    _write(tmp_path, "probe1.json", make_results(_probe_one(video, references), model="eve/probe-one"))
    low = {**base, **{(video, d): 1.0 for d in DIMENSION_KEYS}}
    high = {**base, **{(video, d): 5.0 for d in DIMENSION_KEYS}}
    _write(tmp_path, "low.json", make_results(low, model="eve/low"))
    _write(tmp_path, "high.json", make_results(high, model="eve/high"))
    board = _board(tmp_path, references, labels_public=False)
    assert [u["file"] for u in board["unranked"]] == ["probe1.json"]  # not the whole split: no figure at all
    assert _published(board, "probe1.json") is None and _recover_one(_published(board, "probe1.json")) == {}
    assert {e["file"] for e in board["entries"]} == {"low.json", "high.json"}
    assert _recover_two(_published(board, "low.json"), _published(board, "high.json"), len(VIDEO_IDS)) == {}
    text = json_text(board) + csv_text(board) + render_page(board)
    for word in ("mse", "bias", "loa_", "mae", "sd_ratio"):
        assert word not in json.dumps([board["entries"], board["floors"]]).lower(), word
    assert "labels are public" not in text and "Hidden labels" in render_page(board)
    # Figures carry three significant digits, never a full float.
    icc = board["entries"][0]["scores"]["overall"]["icc"]
    assert icc == float(f"{icc:.3g}") and len(repr(abs(icc)).replace("0.", "").lstrip("0")) <= 3


def test_figures_of_a_split_under_the_minimum_are_withheld(tmp_path):
    few = VIDEO_IDS[: MIN_PUBLISHED_VIDEOS - 1]
    references = make_references(few, seed=2)
    _write(tmp_path, "a.json", make_results(noisy_predictions(references, 0.3, seed=1), model="org/a"))
    board = _board(tmp_path, references)
    (entry,) = board["entries"]
    assert entry["scores"]["overall"] == {} and entry["scores"]["dimensions"] == {}
    assert "fewer than the 10" in entry["scores"]["withheld"]


def test_a_public_label_board_says_so(tmp_path, references):
    _write(tmp_path, "a.json", make_results(noisy_predictions(references, 0.3, seed=1), model="org/a"))
    page = render_page(_board(tmp_path, references))
    assert "labels are public" in page and "not a held-out evaluation" in page
    assert "answer every video and dimension" in page  # the ranking rule is on the page


# ----------------------------------------------------------------------------- abstaining


def test_abstaining_never_wins(tmp_path, references):
    honest = noisy_predictions(references, 0.35, seed=5)
    weakest = noisy_predictions(references, 1.0, seed=6)
    _write(tmp_path, "honest.json", make_results(honest, model="org/honest"))
    _write(tmp_path, "weak.json", make_results(weakest, model="org/weak"))
    for attempt in range(4):  # the weakest system with all but 3 random videos nulled, 4 draws
        keep = set(VIDEO_IDS[attempt * 3 : attempt * 3 + 3])
        abstains = {key: (value if key[0] in keep else None) for key, value in weakest.items()}
        _write(tmp_path, f"abstain{attempt}.json", make_results(abstains, model=f"eve/abstain{attempt}"))
    for labels_public in (True, False):
        board = _board(tmp_path, references, labels_public=labels_public)
        assert [e["file"] for e in board["entries"]] == ["honest.json", "weak.json"]
        assert sorted(u["file"] for u in board["unranked"]) == [f"abstain{i}.json" for i in range(4)]
        assert all(u["n_answered"] == 3 * len(DIMENSION_KEYS) for u in board["unranked"])


@settings(max_examples=8, deadline=None, database=None)
@given(nulls=st.sets(st.integers(0, len(VIDEO_IDS) * len(DIMENSION_KEYS) - 1), min_size=1, max_size=40))
def test_an_entry_with_any_unanswered_pair_is_never_ranked(tmp_path_factory, nulls):
    references = make_references(VIDEO_IDS, seed=7)
    keys = sorted(references)
    predictions = {key: (None if i in nulls else references[key]) for i, key in enumerate(keys)}
    folder = tmp_path_factory.mktemp("nulls")
    _write(folder, "a.json", make_results(predictions, model="eve/a"))
    board = build_leaderboard(folder, references, resampling=ResamplingOptions(n_bootstrap=0))
    assert board["entries"] == [] and board["unranked"][0]["n_answered"] == len(keys) - len(nulls)


# ----------------------------------------------------------------------------- identity


def _requests(**files) -> dict:
    """file -> Request: (account, minutes after T0)."""
    return {name: Request(account, T0 + dt.timedelta(minutes=minutes)) for name, (account, minutes) in files.items()}


def test_confusable_and_invisible_names_cannot_take_an_entry(tmp_path, references):
    def results(model, seed):
        return make_results(noisy_predictions(references, 0.5, seed=seed), model=model)

    hostile = {
        "capital-i.json": "org/IIama-7b",  # capital I for l
        "cyrillic.json": "org/llаmа-7b",  # Cyrillic a
        "greek.json": "org/llαmα-7b",  # Greek alpha
        "fullwidth.json": "ｏｒｇ/llama-7b",
        "case.json": "ORG/Llama-7B",
        "zwsp.json": "org/lla\u200bma-7b",
        "wj.json": "org/lla\u2060ma-7b",
        "bidi.json": "org/llama-7b\u202e",
    }
    _write(tmp_path, "original.json", results("org/llama-7b", 1))
    for index, (name, model) in enumerate(hostile.items()):
        _write(tmp_path, name, results(model, 10 + index))
    requests = _requests(**{"original.json": ("alice", 0)}, **{n: ("mallory", 5 + i) for i, n in enumerate(hostile)})
    board = _board(tmp_path, references, requests=requests)
    assert [e["file"] for e in board["entries"]] == ["original.json"]
    reasons = {r["file"]: r["reasons"][0] for r in board["rejected"]}
    assert set(reasons) == set(hostile)
    for name in ("capital-i.json", "cyrillic.json", "greek.json", "fullwidth.json", "case.json"):
        assert "already on the board (original.json" in reasons[name], name
    for name, code in (("zwsp.json", "U+200B"), ("wj.json", "U+2060"), ("bidi.json", "U+202E")):
        assert "invisible or format characters" in reasons[name] and code in reasons[name], name


def test_the_same_submitter_may_update_its_entry(tmp_path, references):
    _write(tmp_path, "v1.json", make_results(noisy_predictions(references, 0.6, seed=1), model="org/m"))
    _write(tmp_path, "v2.json", make_results(noisy_predictions(references, 0.3, seed=2), model="ＯＲＧ/m"))
    board = _board(tmp_path, references, requests=_requests(**{"v1.json": ("alice", 0), "v2.json": ("alice", 60)}))
    assert [e["file"] for e in board["entries"]] == ["v2.json"] and board["entries"][0]["model"] == "ORG/m"  # NFKC
    assert board["unranked"][0]["file"] == "v1.json" and "superseded by v2.json" in board["unranked"][0]["reason"]


def test_baseline_names_and_the_floor_are_reserved(tmp_path, references):
    def baseline(model, value=3.5, backend=BASELINE_BACKEND):
        obj = make_results({key: value for key in references}, model=model)
        obj["system"]["backend"] = backend
        return obj

    _write(tmp_path, "floor.json", baseline(BASELINE_MODEL_IDS["mean"]))  # the operator's own
    _write(tmp_path, "floor-copy.json", baseline(BASELINE_MODEL_IDS["mean"], 3.4))  # a second floor row
    _write(tmp_path, "fake-ridge.json", baseline(BASELINE_MODEL_IDS["features"], 3.6))  # from an account
    _write(tmp_path, "fake-ridge-2.json", baseline("BaseIine/features-ridge", 3.7, backend="transformers"))
    requests = _requests(**{"fake-ridge.json": ("mallory", 1), "fake-ridge-2.json": ("mallory", 2)})
    board = _board(tmp_path, references, requests=requests)
    assert [f["file"] for f in board["floors"]] == ["floor.json"] and board["entries"] == []
    reasons = {r["file"]: r["reasons"][0] for r in board["rejected"]}
    assert "already on the board (floor.json" in reasons["floor-copy.json"]
    assert "is reserved" in reasons["fake-ridge.json"] and "is reserved" in reasons["fake-ridge-2.json"]
    trusted = _board(tmp_path, references, requests=requests, trusted_accounts=["mallory"])
    assert [e["file"] for e in trusted["entries"]] == ["fake-ridge.json"]  # a trusted account's baseline


def test_a_copy_of_the_leader_is_a_duplicate_and_a_shifted_copy_a_near_copy(tmp_path, references):
    leader = noisy_predictions(references, 0.3, seed=1)
    _write(tmp_path, "z-leader.json", make_results(leader, model="org/leader"))
    _write(tmp_path, "0-copycat.json", make_results(leader, model="eve/copycat"))
    # ICC(3,1) ignores a constant offset: shifted predictions would tie the leader on every figure.
    shifted = {key: round(min(5.0, value + 0.1), 1) for key, value in leader.items()}
    assert all(value < 4.95 for value in leader.values()), "the shift must stay in range for an exact tie"
    _write(tmp_path, "1-shifted.json", make_results(shifted, model="eve/shifted"))
    requests = _requests(**{"z-leader.json": ("alice", 0), "0-copycat.json": ("eve", 30)})
    requests.update(_requests(**{"1-shifted.json": ("eve2", 60)}))
    board = _board(tmp_path, references, requests=requests)
    assert [e["file"] for e in board["entries"]] == ["z-leader.json"]
    unranked = {u["file"]: u for u in board["unranked"]}
    copy, shifted_entry = unranked["0-copycat.json"], unranked["1-shifted.json"]
    assert copy["duplicate_of"] == "z-leader.json" and copy["near_copy_of"] is None
    assert "duplicate" in copy["reason"] and "earlier submission keeps the rank" in copy["reason"]
    assert shifted_entry["near_copy_of"] == "z-leader.json" and "near-copy" in shifted_entry["reason"]


def _affine(predictions, scale, shift, noise=0.0, seed=0):
    rng = np.random.default_rng(seed)
    return {
        key: round(float(np.clip(scale * value + shift + noise * rng.standard_normal(), 1.0, 5.0)), 1)
        for key, value in predictions.items()
    }


@pytest.mark.parametrize(
    ("scale", "shift", "noise"),
    [(1.0, -0.2, 0.0), (0.8, 0.7, 0.0), (1.0, 0.0, 0.03), (1.1, -0.35, 0.02)],
    ids=["shifted", "rescaled", "noised", "rescaled-and-noised"],
)
def test_an_affine_or_slightly_noised_copy_is_a_near_copy_and_unranked(tmp_path, references, scale, shift, noise):
    leader = noisy_predictions(references, 0.3, seed=4)
    copy = _affine(leader, scale, shift, noise, seed=5)
    assert copy != leader
    _write(tmp_path, "leader.json", make_results(leader, model="org/leader"))
    _write(tmp_path, "copy.json", make_results(copy, model="eve/copy"))
    requests = _requests(**{"leader.json": ("alice", 0), "copy.json": ("eve", 30)})
    board = _board(tmp_path, references, requests=requests)
    assert [e["file"] for e in board["entries"]] == ["leader.json"]
    (entry,) = board["unranked"]
    assert entry["near_copy_of"] == "leader.json" and str(NEAR_COPY_CORRELATION) in entry["reason"]


def test_independent_systems_and_a_submitters_own_update_are_not_near_copies(tmp_path, references):
    # Two systems that each track the gold with their own errors agree far below the threshold.
    _write(tmp_path, "a.json", make_results(noisy_predictions(references, 0.3, seed=1), model="org/a"))
    _write(tmp_path, "b.json", make_results(noisy_predictions(references, 0.3, seed=2), model="org/b"))
    # The same entry resubmitted by its own account with a small change is an update, not a copy.
    update = _affine(noisy_predictions(references, 0.3, seed=1), 1.0, 0.0, 0.03, seed=9)
    _write(tmp_path, "a2.json", make_results(update, model="org/a"))
    requests = _requests(**{"a.json": ("alice", 0), "b.json": ("bob", 30), "a2.json": ("alice", 60)})
    board = _board(tmp_path, references, requests=requests)
    assert sorted(e["file"] for e in board["entries"]) == ["a2.json", "b.json"]
    assert [u["file"] for u in board["unranked"]] == ["a.json"] and "superseded" in board["unranked"][0]["reason"]


def test_copy_correlation_is_the_lowest_dimension_and_invariant_to_affine_maps():
    rng = np.random.default_rng(0)
    first = {dim: rng.normal(3, 0.5, 40) for dim in ("a", "b")}
    assert copy_correlation(first, {dim: 2.0 * v - 1.0 for dim, v in first.items()}) == pytest.approx(1.0)
    second = {"a": first["a"], "b": rng.normal(3, 0.5, 40)}
    assert copy_correlation(first, second) == pytest.approx(np.corrcoef(first["b"], second["b"])[0, 1])
    constant = {"a": first["a"], "b": np.full(40, 3.0)}
    assert copy_correlation(first, constant) == 0.0 and copy_correlation(constant, constant) == pytest.approx(1.0)


def test_one_ranked_submission_per_account_a_day_on_a_hidden_board(tmp_path, references):
    for i in range(3):
        _write(tmp_path, f"s{i}.json", make_results(noisy_predictions(references, 0.5, seed=i), model=f"eve/m{i}"))
    requests = _requests(**{"s0.json": ("eve", 0), "s1.json": ("eve", 60), "s2.json": ("eve", 25 * 60)})
    hidden = _board(tmp_path, references, labels_public=False, requests=requests)
    assert sorted(e["file"] for e in hidden["entries"]) == ["s0.json", "s2.json"]
    assert "less than a day earlier" in hidden["unranked"][0]["reason"] and "scores" not in hidden["unranked"][0]
    public = _board(tmp_path, references, requests=requests)
    assert len(public["entries"]) == 3


# ----------------------------------------------------------------------------- text that reaches a page


def test_a_lone_surrogate_is_rejected_and_the_page_is_served(tmp_path, references):
    good = make_results(noisy_predictions(references, 0.3, seed=1), model="org/good")
    _write(tmp_path, "good.json", good)
    text = json.dumps(make_results(noisy_predictions(references, 0.3, seed=2), model="sur-ROGATE"))
    (tmp_path / "surrogate.json").write_text(text.replace("sur-ROGATE", "sur\\ud800rogate"), encoding="utf-8")
    board = _board(tmp_path, references)
    (rejected,) = board["rejected"]
    assert rejected["file"] == "surrogate.json" and "$.system.model: holds a lone surrogate" in rejected["reasons"][0]
    files = site_files(board)  # UTF-8 encodes: the page, the JSON and the CSV
    assert b"org/good" in files["/"][1] and b"surrogate.json" in files["/"][1]


def test_rejection_reasons_never_repeat_a_long_submitted_value(tmp_path, references):
    notice = "OFFICIAL NOTICE: your entry is suspended, log in with your HF token at http://evil.example " * 20_000
    obj = make_results(noisy_predictions(references, 0.3, seed=1), model="org/x")
    obj["setting"]["few_shot_k"] = notice  # a schema error quotes the value
    obj["system"]["decoding"]["temperature"] = notice
    _write(tmp_path, "notice.json", obj)
    assert (tmp_path / "notice.json").stat().st_size > 3_000_000
    board = _board(tmp_path, references)
    reasons = board["rejected"][0]["reasons"]
    assert reasons and all(len(reason) < 400 for reason in reasons)
    page = render_page(board)  # the reason twice (the list, the embedded JSON), each under 400 characters
    assert len(page) < len(render_page({**board, "rejected": []})) + 2 * 400 * len(reasons) + 500


def test_a_long_file_name_is_shown_cut_at_200_characters(tmp_path, references):
    """A submitter names the file too: the board shows its first 200 characters and says how many it cut,
    rejected or ranked."""
    name = "x" * 240 + ".json"
    (tmp_path / name).write_text('{"schema_version": "1.1", "system": ', encoding="utf-8")
    board = _board(tmp_path, references)
    assert [entry["file"] for entry in board["rejected"]] == ["x" * 200 + "... [45 more characters cut]"]
    _write(tmp_path, "y" * 240 + ".json", make_results(noisy_predictions(references, 0.3, seed=1), model="org/y"))
    (entry,) = _board(tmp_path, references)["entries"]
    assert entry["file"] == "y" * 200 + "... [45 more characters cut]"
    assert entry["id"] == "y" * 200 + "... [40 more characters cut]"


def test_every_csv_cell_is_spreadsheet_safe(tmp_path, references):
    _write(tmp_path, "=HYPERLINK(1).json", make_results(noisy_predictions(references, 0.3, seed=1), model="@SUM(A1)"))
    gappy = noisy_predictions(references, 0.3, seed=2, none_rate=0.1)
    _write(tmp_path, "+cmd.json", make_results(gappy, model="-2+3"))
    rows = list(csv.DictReader(io.StringIO(csv_text(_board(tmp_path, references)))))
    assert [(r["file"], r["model"]) for r in rows] == [("'=HYPERLINK(1).json", "'@SUM(A1)"), ("'+cmd.json", "'-2+3")]
    text_cells = [cell for row in rows for cell in row.values() if cell and not _is_number(cell)]
    assert text_cells and all(not cell.startswith(("=", "+", "-", "@")) for cell in text_cells)


def _is_number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


# ----------------------------------------------------------------------------- the references decide


def test_the_synthetic_mark_and_the_fingerprint_come_from_the_references(tmp_path, synthetic_build, unmarked_build):
    from eval_scripts import read_board_references

    for build, expected in ((synthetic_build, True), (unmarked_build, False)):
        refs = read_board_references(build, "test")
        folder = tmp_path / build.name
        for claim, name in ((False, "claims-real.json"), (True, "claims-synthetic.json")):
            obj = make_results(noisy_predictions(refs.labels, 0.3, seed=int(claim)), model=f"org/{name}")
            obj["dataset"].update(synthetic=claim, fingerprint=sorted(refs.fingerprints)[0])
            _write(folder, name, obj)
        other = make_results(noisy_predictions(refs.labels, 0.3, seed=3), model="org/other-build")
        _write(folder, "other-build.json", other)  # the helper's fingerprint: another build
        board = build_leaderboard(folder, refs, resampling=ResamplingOptions(n_bootstrap=0))
        assert [e["synthetic"] for e in board["entries"]] == [expected, expected] and board["synthetic"] is expected
        assert [r["file"] for r in board["rejected"]] == ["other-build.json"]
        assert ("SYNTHETIC DATA" in render_page(board)) is expected


def test_entries_equal_on_the_published_figures_share_a_rank():
    from eval_scripts.leaderboard.page import rank_text
    from eval_scripts.leaderboard.scoring import _shared_ranks

    def entry(overall, mean):
        return {"scores": {"overall": {"icc": overall}, "mean_icc": mean}}

    # 0.41234 and 0.41229 publish as 0.412: equal figures, so equal ranks, whatever the order received.
    entries = [
        (entry(0.5, 0.4), None),
        (entry(0.41234, 0.3), None),
        (entry(0.41229, 0.3), None),
        (entry(0.2, 0.1), None),
    ]
    _shared_ranks(entries)
    assert [e["rank"] for e, _ in entries] == [1, 2, 2, 4]
    assert [rank_text(e) for e, _ in entries] == ["1", "2=", "2=", "4"]
    assert [e["leader"] for e, _ in entries] == [True, False, False, False]


def test_a_p_value_below_the_floor_is_withheld_on_the_page_with_its_reason(tmp_path):
    """Two entries on a split of 12 videos from 2 clinicians: the p-value against the leader is withheld (the one
    rule), and the page says so where the number would stand, never a p-value from 2 clinicians."""
    videos = [f"{c}_T{t}_{s}" for c in ("AB0001", "CD0002") for t in (1, 2, 3) for s in ("Luke", "Jessica")]
    rng = np.random.default_rng(0)
    references = {(v, d): round(float(rng.uniform(1.5, 4.5)), 1) for v in videos for d in DIMENSION_KEYS}
    for seed, name in enumerate(("a", "b")):
        _write(tmp_path, f"{name}.json", make_results(noisy_predictions(references, 0.3, seed=seed), model=f"o/{name}"))
    board = _board(tmp_path, references)
    comparison = board["entries"][1]["vs_leader"]
    assert comparison["p_value"] is None and "2 clinician(s)" in comparison["withheld"]["p_value"]
    page = render_page(board)
    assert ">withheld</td>" in page and "p withheld: 2 clinician(s)" in page

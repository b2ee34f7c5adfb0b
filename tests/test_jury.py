"""`mis-bench jury`: mean and median equal the hand computation; stacked weights equal the exact least-squares fit on
the simplex (an active-set enumeration, independent of the SLSQP the library runs) on the fit split, matched to the
members by identity, and never move when the scored split's gold changes (cross-fitted: a fold's weights never move
when its own gold changes); the jury is scored, submittable, on the scale and named as a combination; predictions
files are members too; CIs and p-values follow the reporting floor; bad juries are one line before any work."""

from __future__ import annotations

import itertools
import json
import statistics
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import nnls

from eval_scripts import run_baseline
from eval_scripts.baselines.baseline_run import load_feature_rows
from eval_scripts.baselines.stacking import simplex_weights
from eval_scripts.cli import main
from eval_scripts.leaderboard.juries import combine_members, read_member
from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS
from mis_bench_dataset.dataset.loading import gold_references
from mis_icc_metric import ResamplingOptions, predictions_to_mapping, read_predictions, read_references


@pytest.fixture(scope="module")
def member_runs(synthetic_build, tmp_path_factory) -> dict[str, dict[str, Path]]:
    """Three baselines on the test and validation splits of the synthetic build: split -> name -> run folder."""
    out = tmp_path_factory.mktemp("members")
    runs: dict[str, dict[str, Path]] = {}
    for split in ("test", "validation"):
        for baseline, modality in (("features", "text"), ("features", "audio+text"), ("mean", "text")):
            run = run_baseline(
                synthetic_build,
                out / split,
                baseline=baseline,
                modality=modality,
                split=split,
                resampling=ResamplingOptions(n_bootstrap=0),
            )
            runs.setdefault(split, {})[f"{baseline}-{modality}"] = run.results_path.parent
    return runs


def _jury(args: list[str], capsys) -> dict:
    assert main(["jury", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("method", ["mean", "median"])
def test_mean_and_median_equal_the_hand_computation(member_runs, synthetic_build, tmp_path, capsys, method) -> None:
    members = list(member_runs["test"].values())
    record = _jury([*map(str, members), "--method", method, "--references", str(synthetic_build), "--bootstrap",
                    "100", "--out", str(tmp_path)], capsys)  # fmt: skip
    results = json.loads(Path(record["results"]).read_text())
    got = {(p["video_id"], p["dimension"]): p["prediction"] for p in results["predictions"]}
    each = [json.loads((m / "results.json").read_text())["predictions"] for m in members]
    by_pair = [{(p["video_id"], p["dimension"]): p["prediction"] for p in preds} for preds in each]
    combine = statistics.mean if method == "mean" else statistics.median
    assert got.keys() == by_pair[0].keys()
    for key, value in got.items():
        assert value == pytest.approx(combine([m[key] for m in by_pair]), abs=1e-12)
    assert results["system"]["model"].startswith(f"jury({method}): ") and results["system"]["backend"] == "jury"
    assert "a combination of its members" in results["system"]["description"]
    assert results["scores"]["meta"]["resampling"]["unit"] == "clinician"
    versus = record["versus_best_member"]
    assert versus["best_member"] in results["system"]["model"]
    assert versus["meta"]["resampling"]["unit"] == "clinician"


def simplex_reference(a: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Exact min ||a w - y||^2 over w >= 0, sum w = 1: every support's equality-constrained least squares (its KKT
    system), the best that is non-negative."""
    best, best_loss = None, np.inf
    m = a.shape[1]
    for support in itertools.chain.from_iterable(itertools.combinations(range(m), k) for k in range(1, m + 1)):
        sub = a[:, support]
        k = len(support)
        kkt = np.block([[2 * sub.T @ sub, np.ones((k, 1))], [np.ones((1, k)), np.zeros((1, 1))]])
        solution = np.linalg.lstsq(kkt, np.concatenate([2 * sub.T @ y, [1.0]]), rcond=None)[0][:k]
        if (solution < -1e-12).any():
            continue
        w = np.zeros(m)
        w[list(support)] = solution
        loss = float(np.sum((a @ w - y) ** 2))
        if loss < best_loss - 1e-12:
            best, best_loss = w, loss
    return best


def test_stacked_weights_are_least_squares_on_the_simplex(member_runs, synthetic_build, tmp_path, capsys) -> None:
    names = list(member_runs["test"])
    record = _jury([*(str(member_runs["test"][n]) for n in names), "--method", "stacked", "--references",
                    str(synthetic_build), "--fit", *(str(member_runs["validation"][n]) for n in names),
                    "--bootstrap", "100", "--out", str(tmp_path)], capsys)  # fmt: skip
    gold = gold_references(load_feature_rows(synthetic_build, "validation"))
    fit = [json.loads((member_runs["validation"][n] / "results.json").read_text())["predictions"] for n in names]
    fit = [{(p["video_id"], p["dimension"]): p["prediction"] for p in preds} for preds in fit]
    unconstrained_sums = []
    for dim in DIMENSION_KEYS:
        keys = sorted(k for k in gold if k[1] == dim)
        a = np.array([[m[k] for m in fit] for k in keys])
        y = np.array([gold[k] for k in keys])
        assert record["fit"]["weights"][dim] == pytest.approx(simplex_reference(a, y).tolist(), abs=1e-6)
        assert sum(record["fit"]["weights"][dim]) == pytest.approx(1.0, abs=1e-12)
        unconstrained_sums.append(nnls(a, y)[0].sum())
    assert any(abs(total - 1) > 0.01 for total in unconstrained_sums)  # the constraint binds: NNLS differs
    results = json.loads(Path(record["results"]).read_text())
    test = [json.loads((member_runs["test"][n] / "results.json").read_text())["predictions"] for n in names]
    test = [{(p["video_id"], p["dimension"]): p["prediction"] for p in preds} for preds in test]
    for p in results["predictions"]:
        key = (p["video_id"], p["dimension"])
        w = record["fit"]["weights"][p["dimension"]]
        assert p["prediction"] == pytest.approx(sum(wi * m[key] for wi, m in zip(w, test, strict=True)))
        assert min(m[key] for m in test) - 1e-9 <= p["prediction"] <= max(m[key] for m in test) + 1e-9


@settings(max_examples=40, deadline=None)
@given(
    st.integers(2, 4).flatmap(
        lambda m: st.tuples(
            arrays(np.float64, (12, m), elements=st.floats(1, 5)), arrays(np.float64, 12, elements=st.floats(1, 5))
        )
    )
)
def test_simplex_weights_are_the_constrained_optimum(data) -> None:
    a, y = data
    w = simplex_weights(a, y)
    assert (w >= 0).all() and w.sum() == pytest.approx(1.0, abs=1e-12)
    reference = simplex_reference(a, y)
    loss = lambda v: float(np.sum((a @ v - y) ** 2))  # noqa: E731
    assert loss(w) <= loss(reference) + 1e-7 * max(1.0, loss(reference))
    assert ((a @ w >= a.min(axis=1) - 1e-9) & (a @ w <= a.max(axis=1) + 1e-9)).all()  # between its members


def test_fit_runs_are_matched_by_identity_not_by_order(member_runs, synthetic_build, tmp_path, capsys) -> None:
    names = list(member_runs["test"])
    members = [str(member_runs["test"][n]) for n in names]
    common = ["--method", "stacked", "--references", str(synthetic_build), "--bootstrap", "100"]
    in_order = _jury([*members, *common, "--fit", *(str(member_runs["validation"][n]) for n in names), "--out",
                      str(tmp_path / "a")], capsys)  # fmt: skip
    reversed_ = _jury([*members, *common, "--fit", *(str(member_runs["validation"][n]) for n in names[::-1]),
                       "--out", str(tmp_path / "b")], capsys)  # fmt: skip
    assert reversed_["fit"]["weights"] == in_order["fit"]["weights"]
    first = json.loads(Path(in_order["results"]).read_text())["predictions"]
    assert json.loads(Path(reversed_["results"]).read_text())["predictions"] == first
    # a fit list naming another system than a member is refused, whatever its length
    copy = tmp_path / "copy.json"  # the same system under another path
    copy.write_bytes((member_runs["validation"][names[1]] / "results.json").read_bytes())
    wrong = [str(member_runs["validation"][names[0]]), str(member_runs["validation"][names[1]]), str(copy)]
    assert main(["jury", *members, *common, "--fit", *wrong, "--out", str(tmp_path / "c")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 1 and "two of --fit are the same system" in lines[0]
    other = [str(member_runs["validation"][n]) for n in names[:2]]
    assert main(["jury", members[0], members[2], *common, "--fit", *other, "--out", str(tmp_path / "c")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line]
    assert len(lines) == 1 and "--fit does not match the members: no fit run for baseline/train-mean" in lines[0]
    assert not (tmp_path / "c").exists()


def test_the_scored_gold_never_moves_the_weights(member_runs, synthetic_build) -> None:
    names = list(member_runs["test"])
    members = [read_member(member_runs["test"][n]) for n in names]
    fit = [read_member(member_runs["validation"][n]) for n in names]
    fit_gold = gold_references(load_feature_rows(synthetic_build, "validation"))
    gold = gold_references(load_feature_rows(synthetic_build, "test"))
    changed = {k: 6.0 - v for k, v in gold.items()}  # every scored gold value changed
    one = combine_members(members, "stacked", gold, fit=fit, fit_references=fit_gold)
    two = combine_members(members, "stacked", changed, fit=fit, fit_references=fit_gold)
    assert one.record["fit"]["weights"] == two.record["fit"]["weights"]
    assert one.predictions == two.predictions


def test_cross_fitted_weights_never_see_their_folds_gold(member_runs, synthetic_build) -> None:
    members = [read_member(member_runs["test"][name]) for name in ("features-text", "mean-text")]  # 4 test videos
    gold = gold_references(load_feature_rows(synthetic_build, "test"))
    one = combine_members(members, "stacked", gold, folds=2)
    fold_of = {}
    from eval_scripts.baselines.stacking import clinician_folds

    keys = sorted(gold)
    for key, fold in zip(keys, clinician_folds(keys, 2), strict=True):
        fold_of[key] = int(fold)
    changed = {k: (6.0 - v if fold_of[k] == 0 else v) for k, v in gold.items()}  # fold 0's gold changed
    two = combine_members(members, "stacked", changed, folds=2)
    assert one.record["fit"]["folds"][0]["weights"] == two.record["fit"]["folds"][0]["weights"]
    assert {k: v for k, v in one.predictions.items() if fold_of[k] == 0} == {
        k: v for k, v in two.predictions.items() if fold_of[k] == 0
    }
    assert one.record["fit"]["folds"][1]["weights"] != two.record["fit"]["folds"][1]["weights"]


def test_a_pair_a_member_lacks_is_left_unanswered_never_dropped(member_runs, tmp_path) -> None:
    first, second = (read_member(p) for p in list(member_runs["test"].values())[:2])
    lacking = next(iter(second.predictions))
    second.predictions[lacking] = None
    jury = combine_members([first, second], "mean", {})
    assert lacking in jury.predictions and jury.predictions[lacking] is None
    available = combine_members([first, second], "mean", {}, missing="available")
    assert available.predictions[lacking] == first.predictions[lacking]


def test_a_jury_is_submittable(member_runs, synthetic_build, tmp_path, capsys) -> None:
    members = [str(p) for p in member_runs["test"].values()]
    record = _jury([*members, "--method", "median", "--references", str(synthetic_build), "--bootstrap", "100",
                    "--out", str(tmp_path / "j")], capsys)  # fmt: skip
    assert main(["submit", record["results"], "--out", str(tmp_path / "sub")]) == 0
    capsys.readouterr()
    names = list(member_runs["test"])  # a stacked jury, fitted elsewhere, is on the scale and accepted too
    record = _jury([*members, "--method", "stacked", "--references", str(synthetic_build), "--fit",
                    *(str(member_runs["validation"][n]) for n in names), "--bootstrap", "100", "--out",
                    str(tmp_path / "s")], capsys)  # fmt: skip
    assert main(["submit", record["results"], "--out", str(tmp_path / "sub2")]) == 0


def test_bad_juries_are_one_line(member_runs, tmp_path, capsys) -> None:
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    test, validation = member_runs["test"], member_runs["validation"]
    release = generate_synthetic_release(tmp_path / "release", n_videos=20, seed=1)
    build_dataset(release.release_dir, tmp_path / "other-build", labels=release.ratings_csv, progress=False)
    other = run_baseline(
        tmp_path / "other-build",
        tmp_path / "other",
        baseline="mean",
        modality="text",
        resampling=ResamplingOptions(n_bootstrap=0),
    )
    cases = {
        "a jury needs at least two members, got 1": [str(test["mean-text"])],
        "runs on different splits in one jury (test and validation)": [
            str(test["mean-text"]),
            str(validation["features-text"]),
        ],
        "runs on different builds in one jury": [str(test["mean-text"]), str(other.results_path)],
    }
    for message, runs in cases.items():
        assert main(["jury", *runs, "--method", "mean", "--out", str(tmp_path / "j")]) == 2
        lines = [line for line in capsys.readouterr().err.splitlines() if line]
        assert len(lines) == 1 and lines[0].startswith(f"mis-bench jury: error: {message}")


# ------------------------------------------------------------------ predictions files, floors, refusals, coverage

STIMULI = ("Sean", "Maria", "Lee", "Kim")


def _write_long(path: Path, values: dict, column: str = "prediction") -> Path:
    lines = [f"video_id,dimension,{column}"]
    lines += [f"{v},{d},{'' if x is None else round(x, 3)}" for (v, d), x in sorted(values.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


def _pairs(path: Path) -> dict:
    return predictions_to_mapping(read_predictions(path))


@pytest.fixture()
def two_clinicians(tmp_path) -> dict:
    """Gold and three judges' files on 24 videos of 2 clinicians (enough videos, too few clinicians): judges that
    track the gold at a scale NNLS would stretch past 1 (so the unconstrained fit leaves [1, 5])."""
    rng = np.random.default_rng(3)
    videos = [f"{c}_T{t}_{s}" for c in ("AB0101", "CD0202") for t in (1, 2, 3) for s in STIMULI]
    gold = {(v, d): float(np.round(rng.uniform(1.5, 5.0), 1)) for v in videos for d in DIMENSION_KEYS}
    judges = {}
    for j, shrink in enumerate((0.6, 0.7, 0.8)):
        noise = rng.normal(0, 0.3, len(gold))
        judges[f"judge{j}"] = {
            k: float(np.clip(1 + shrink * (g - 1) + e, 1, 5)) for (k, g), e in zip(gold.items(), noise, strict=True)
        }
    (tmp_path / "fit").mkdir()
    (tmp_path / "scored").mkdir()
    fit_videos, scored_videos = set(videos[::2]), set(videos[1::2])
    files = {"fit": {}, "scored": {}}
    for name, values in judges.items():
        for part, keep in (("fit", fit_videos), ("scored", scored_videos)):
            chosen = {k: x for k, x in values.items() if k[0] in keep}
            files[part][name] = _write_long(tmp_path / part / f"{name}.csv", chosen)
    return {"gold": _write_long(tmp_path / "gold.csv", gold, "score"), "values": judges, "files": files}


def test_predictions_files_are_members_and_fit_by_file_name(two_clinicians, tmp_path, capsys) -> None:
    files, gold = two_clinicians["files"], str(two_clinicians["gold"])
    scored = [str(files["scored"][n]) for n in ("judge0", "judge1", "judge2")]
    mean = _jury([*scored, "--method", "mean", "--references", gold, "--bootstrap", "100", "--out",
                  str(tmp_path / "mean")], capsys)  # fmt: skip
    assert mean["results"] is None  # files record no build or setting: predictions and jury.json only
    written = Path(mean["jury"]).parent / "predictions.jsonl"
    got = {
        (r["video_id"], r["dimension"]): r["prediction"] for r in map(json.loads, written.read_text().split("\n")[:-1])
    }
    values = two_clinicians["values"]
    for key, value in got.items():
        assert value == pytest.approx(statistics.mean(round(values[n][key], 3) for n in values), abs=1e-9)
    fit = [str(files["fit"][n]) for n in ("judge2", "judge0", "judge1")]  # another order: matched by file name
    stacked = _jury([*scored, "--method", "stacked", "--references", gold, "--fit", *fit, "--bootstrap", "100",
                     "--out", str(tmp_path / "stacked")], capsys)  # fmt: skip
    fit_gold = {k: v for k, v in read_references(gold).items() if k[0] in {k2[0] for k2 in values["judge0"]}}
    fit_keys = sorted(k for k in _pairs(files["fit"]["judge0"]) if k in fit_gold)
    for dim in DIMENSION_KEYS:
        keys = [k for k in fit_keys if k[1] == dim]
        a = np.array([[round(values[n][k], 3) for n in ("judge0", "judge1", "judge2")] for k in keys])
        y = np.array([fit_gold[k] for k in keys])
        assert stacked["fit"]["weights"][dim] == pytest.approx(simplex_reference(a, y).tolist(), abs=1e-6)
        assert nnls(a, y)[0].sum() > 1.05  # what NNLS without the constraint would do: stretch past the scale
    rows = map(json.loads, (Path(stacked["jury"]).parent / "predictions.jsonl").read_text().split("\n")[:-1])
    assert all(1.0 <= r["prediction"] <= 5.0 for r in rows)


def test_a_two_clinician_split_withholds_the_p_value_with_its_counts(two_clinicians, tmp_path, capsys) -> None:
    files, gold = two_clinicians["files"], str(two_clinicians["gold"])
    members = [str(files["scored"][n]) for n in ("judge0", "judge1")]
    args = [*members, "--method", "mean", "--references", gold, "--bootstrap", "200", "--out", str(tmp_path / "j")]
    record = _jury(args, capsys)
    versus = record["versus_best_member"]
    for entry in [versus["mean_icc"], versus["overall"], *versus["dimensions"].values()]:
        assert entry["p_value"] is None and entry["delta_ci"] is None
        assert "2 clinician(s); a CI and p-value needs at least 5" in entry["withheld"]
    assert record["scores"]["ci"] is None and "2 clinician(s)" in record["scores"]["withheld"]
    assert main(["jury", *args[:-1], str(tmp_path / "k")]) == 0
    out = capsys.readouterr().out
    assert "withheld: 2 clinician(s)" in out and ", p 0." not in out


def test_a_member_missing_dimensions_is_scored_on_what_is_defined(two_clinicians, tmp_path, capsys) -> None:
    files, gold = two_clinicians["files"], str(two_clinicians["gold"])
    half = {k: v for k, v in two_clinicians["values"]["judge1"].items() if k[1] in DIMENSION_KEYS[:4]}
    half = {k: v for k, v in half.items() if k[0] in {v2 for v2, _ in _pairs(files["scored"]["judge0"])}}
    partial = _write_long(tmp_path / "partial.csv", half)
    args = [str(files["scored"]["judge0"]), str(partial), "--references", gold, "--bootstrap", "100"]
    assert main(["jury", *args, "--method", "mean", "--out", str(tmp_path / "a")]) == 0
    out, err = capsys.readouterr()
    assert "internal error" not in err
    for key in DIMENSION_KEYS[4:]:
        assert f"no jury answer on {DIMENSION_BY_KEY[key].abbreviation}: partial answered none of its pairs" in out
    assert "mean ICC undefined: no ICC on" in out and "scored on the dimensions it answers" in out
    record = _jury([*args, "--method", "stacked", "--folds", "2", "--out", str(tmp_path / "b")], capsys)
    assert set(record["scores"]["dimensions"]) == set(DIMENSION_KEYS[:4])
    assert set(record["dimensions_unanswered"]) == set(DIMENSION_KEYS[4:])


def test_available_counts_the_pairs_from_fewer_members(two_clinicians, tmp_path, capsys) -> None:
    files = two_clinicians["files"]["scored"]
    first = _pairs(files["judge0"])
    lacking = dict(sorted(first.items())[: len(first) // 3])  # judge1 answers a third of the pairs
    partial = _write_long(tmp_path / "judge1.csv", {k: two_clinicians["values"]["judge1"][k] for k in lacking})
    args = [str(files["judge0"]), str(partial), "--method", "mean", "--missing", "available"]
    record = _jury([*args, "--out", str(tmp_path / "a")], capsys)
    n_fewer = len(first) - len(lacking)
    assert record["n_pairs_answered"] == len(first) and record["n_pairs_from_fewer_members"] == n_fewer
    assert record["answered_by"] == {"2 of 2": len(lacking), "1 of 2": n_fewer}
    assert main(["jury", *args, "--out", str(tmp_path / "b")]) == 0
    assert f"{n_fewer} from fewer than all 2" in capsys.readouterr().out


def test_options_that_do_not_apply_are_refused_before_any_work(two_clinicians, tmp_path, capsys) -> None:
    files, gold = two_clinicians["files"], str(two_clinicians["gold"])
    members = [str(files["scored"][n]) for n in ("judge0", "judge1")]
    fit = [str(files["fit"][n]) for n in ("judge0", "judge1")]
    out = tmp_path / "never"
    cases = {
        "--fit applies to a stacked jury only": ["--method", "mean", "--fit", *fit],
        "--folds applies to a stacked jury only": ["--method", "median", "--folds", "3"],
        "cross-fitting needs at least 2 folds, got 1": ["--method", "stacked", "--folds", "1"],
        "--folds cross-fits on the scored split": ["--method", "stacked", "--folds", "3", "--fit", *fit],
        "stacked weights need every member's score": ["--method", "stacked", "--missing", "available"],
    }
    for message, options in cases.items():
        assert main(["jury", *members, *options, "--references", gold, "--out", str(out)]) == 2, message
        lines = [line for line in capsys.readouterr().err.splitlines() if line]
        assert len(lines) == 1 and lines[0].startswith(f"mis-bench jury: error: {message}"), lines
    assert not out.exists()
    off_scale = _write_long(tmp_path / "hundred.csv", {("AB0101_T1_Sean", "empathy"): 73.0})
    assert main(["jury", members[0], str(off_scale), "--method", "mean", "--out", str(out)]) == 1
    assert "off the score scale" in capsys.readouterr().err and not out.exists()

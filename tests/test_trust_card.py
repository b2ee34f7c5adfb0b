"""`mis-bench trust`: the page that answers "can I use this judge?" (issue 44.7).

On synthetic data (marked SYNTHETIC) and on the real data (skipped without ../shared) the page has a verdict, the
one number to cite, the no-judge yardstick and the flags; below the floors a figure is withheld with its reason; the
numbers are those of the commands (`score`, `estimate`), and the pieces computed on the page (the no-judge interval,
the labelled-set check) agree with hand computations."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_KEYS
from mis_icc_metric import ResamplingOptions


def _noisy_judge(gold: dict, path, *, seed: int = 0, noise: float = 0.4, shift: float = 0.0) -> dict:
    """A judge on every video: the gold plus noise (and an offset), as a predictions CSV."""
    from mis_icc_metric import write_predictions

    rng = np.random.default_rng(seed)
    judged = {key: float(np.clip(value + shift + rng.normal(0, noise), 1, 5)) for key, value in sorted(gold.items())}
    write_predictions(path, [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in judged.items()])
    return judged


def _page_parts(html_text: str) -> dict:
    return {
        "verdict": re.search(r'class="verdict [^"]*" data-answer="([^"]+)"', html_text),
        "cite": re.search(r'data-cite="([^"]+)"', html_text),
        "yardstick": "no-judge width" in html_text and "experts-only CI width" in html_text,
        "flags": '<ul class="flags">' in html_text,
    }


EXTRA_VIDEOS = [f"ZZ{c:02d}01_T{t}_Luke" for c in range(1, 11) for t in (1, 3)]  # judged, never rated


@pytest.fixture(scope="module")
def synthetic_card(synthetic_build, tmp_path_factory):
    """The judge on the 40 videos of the synthetic build and 20 more, the experts on the build's 40."""
    from mis_icc_metric import read_references

    folder = tmp_path_factory.mktemp("card")
    gold = read_references(synthetic_build, split="all")
    rng = np.random.default_rng(1)
    extra = {(v, k): float(np.clip(rng.normal(3.5, 0.5), 1, 5)) for v in EXTRA_VIDEOS for k in DIMENSION_KEYS}
    _noisy_judge({**gold, **extra}, folder / "judge.csv")
    args = ["trust", "--predictions", str(folder / "judge.csv"), "--references", str(synthetic_build)]
    # 80% intervals: a third of 40 videos is enough to set their conformal quantile (90% needs 9 per dimension).
    assert main([*args, "--coverage", "0.8", "--bootstrap", "200", "--out", str(folder / "trust")]) == 0
    return folder


def test_the_synthetic_page_has_a_verdict_a_number_to_cite_a_yardstick_and_flags(synthetic_card, synthetic_build):
    from mis_icc_metric import predictions_to_mapping, read_predictions, read_references, score_predictions

    page = (synthetic_card / "trust" / "trust.html").read_text()
    card = json.loads((synthetic_card / "trust" / "trust.json").read_text())
    parts = _page_parts(page)
    assert all(parts.values()), parts
    assert card["synthetic"] is True and "SYNTHETIC" in page and page.count("SYNTHETIC") >= 2
    assert any(flag.startswith("SYNTHETIC") for flag in card["flags"])
    assert card["verdict"]["answer"] in ("yes", "no", "with care", "cannot tell yet")
    assert {r["name"] for r in card["rules"]} == {"agreement", "calibration", "width", "ppi"}
    for rule in card["rules"]:  # every rule is stated, and either decided or withheld with its reason
        assert html.escape(rule["rule"]) in page and (rule["passed"] is not None or rule["withheld"])
    # The number to cite is `score`'s mean ICC on the expert-rated pairs, clinicians resampled, same draw.
    gold = read_references(synthetic_build, split="all")
    judge = predictions_to_mapping(read_predictions(synthetic_card / "judge.csv"))
    scored = score_predictions(
        {k: v for k, v in judge.items() if k in gold}, gold, resampling=ResamplingOptions(n_bootstrap=200, seed=0)
    )
    cite = card["agreement"]["cite"]
    assert cite["value"] == pytest.approx(scored["mean_icc"]) and cite["n_clinicians"] is not None
    assert cite["withheld"] or cite["ci"] == pytest.approx(scored["mean_icc_ci"])
    assert "clinicians" in cite["resampling"]


def test_the_page_matches_estimate_and_its_counts(synthetic_card, synthetic_build, capsys):
    card = json.loads((synthetic_card / "trust" / "trust.json").read_text())
    args = ["estimate", "--predictions", str(synthetic_card / "judge.csv"), "--references", str(synthetic_build)]
    assert main([*args, "--bootstrap", "0", "--json"]) == 0
    estimate = json.loads(capsys.readouterr().out)
    for key in DIMENSION_KEYS:
        mine, theirs = card["estimates"]["result"]["dimensions"][key], estimate["dimensions"][key]
        assert mine["ppi"]["width"] == pytest.approx(theirs["ppi"]["width"])
        assert card["estimates"]["width_ratios"][key] == pytest.approx(
            theirs["ppi"]["width"] / theirs["classical"]["width"]
        )
    counts = card["counts"]
    assert counts["n_judged_videos"] == 40 + len(EXTRA_VIDEOS) and counts["n_expert_videos"] == 40


def test_below_the_floor_the_page_withholds_with_reasons_and_cannot_tell(synthetic_build, tmp_path, capsys):
    """Five expert-rated videos: no CI, no calibration, no plan; the reasons stand where the numbers would."""
    from mis_icc_metric import read_references

    gold = read_references(synthetic_build, split="all")
    _noisy_judge(gold, tmp_path / "judge.csv")
    five = sorted({v for v, _ in gold})[:5]
    labels = tmp_path / "experts.csv"
    labels.write_text(
        "video_id,dimension,score\n" + "".join(f"{v},{k},{gold[(v, k)]}\n" for v in five for k in DIMENSION_KEYS)
    )
    args = ["trust", "--predictions", str(tmp_path / "judge.csv"), "--references", str(labels), "--bootstrap", "100"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    card = json.loads((tmp_path / "out" / "trust.json").read_text())
    assert card["verdict"]["answer"] == "cannot tell yet"
    cite = card["agreement"]["cite"]
    assert cite["ci"] is None and "5 video(s)" in cite["withheld"]
    for section in ("calibration", "going_further"):
        assert "5 " in card[section]["withheld"]
    page = (tmp_path / "out" / "trust.html").read_text()
    assert page.count('data-withheld="1"') >= 3 and "[" not in re.search(r'data-cite="[^"]*">[^<]*', page).group(0)
    printed = capsys.readouterr().out
    assert "Verdict: Cannot tell yet" in printed and "CI withheld" in printed


def test_the_pages_labelled_set_check_is_estimates_and_a_top_scored_set_is_flagged():
    """One rule for the command and the page: the page carries `estimate_means`' `labelled_check`, and a
    top-scored tenth is flagged there (its wording in the page's flags)."""
    from eval_scripts.jobs.judge_card import CardInputs, _estimates
    from mis_icc_metric import estimate_means

    rng = np.random.default_rng(0)
    videos = [f"AB{c:02d}01_T{t}_Luke" for c in range(100) for t in (1, 2, 3)]
    judge = {(v, k): float(rng.normal(3, 0.5)) for v in videos for k in DIMENSION_KEYS}
    means = {v: np.mean([judge[(v, k)] for k in DIMENSION_KEYS]) for v in videos}
    top = sorted(videos, key=means.get)[-30:]
    gold = {
        (v, k): float(np.clip(round(judge[(v, k)] + rng.normal(0, 0.3), 1), 1, 5)) for v in top for k in DIMENSION_KEYS
    }
    inputs = CardInputs(judge, gold, None, False, "j", "e")
    page = _estimates(inputs)["labelled_set"]
    assert page == estimate_means(judge, gold)["labelled_check"]
    assert page["looks_random"] is False and page["warning"]


def test_the_output_folder_is_checked_before_any_work(synthetic_card, tmp_path, capsys):
    """A trust.html the command did not write is never replaced."""
    out = tmp_path / "taken"
    out.mkdir()
    (out / "trust.html").write_text("mine")
    judge = synthetic_card / "judge.csv"
    assert main(["trust", "--predictions", str(judge), "--references", str(judge), "--out", str(out)]) == 1
    assert (out / "trust.html").read_text() == "mine"
    assert "was not written by mis-bench trust" in capsys.readouterr().err


@pytest.mark.slow
def test_the_real_page_for_the_text_ridge(real_text_oof, real_text_build, tmp_path):
    """The clinician's case on the real data: the ridge on all 996 videos, experts on the build's test split (a
    random 10%)."""
    args = ["trust", "--predictions", str(real_text_oof), "--references", str(real_text_build), "--split", "test"]
    assert main([*args, "--bootstrap", "1000", "--out", str(tmp_path / "trust")]) == 0
    card = json.loads((tmp_path / "trust" / "trust.json").read_text())
    page = (tmp_path / "trust" / "trust.html").read_text()
    assert all(_page_parts(page).values()) and card["synthetic"] is False and "SYNTHETIC" not in page
    assert card["counts"] == {
        "n_judged_videos": 996,
        "n_expert_videos": 100,
        "n_expert_clinicians": card["counts"]["n_expert_clinicians"],
        "n_expert_videos_not_judged": 0,
    }
    assert all(r["withheld"] is None for r in card["rules"])  # 100 videos: every rule decided
    calibration = card["calibration"]
    assert calibration["n_pairs"] == 800 and len(calibration["dimensions"]) == 8
    assert all(e["no_judge_width"] > 0 for e in calibration["dimensions"].values())
    assert card["biases"]["transcript_length"]["p_value"] is not None  # the build holds the transcripts
    further = card["going_further"]
    for key, entry in further["labels"]["dimensions"].items():  # how many more than the 100 rated
        assert further["more_labels_ppi"][key] == max(0, entry["ppi_labels"] - 100)
    low, high = card["agreement"]["cite"]["ci"]
    assert low < card["agreement"]["cite"]["value"] < high


BROWSER = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)


@pytest.mark.slow
@pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install chromium)")
def test_the_page_renders_in_headless_chromium(synthetic_card, tmp_path):
    """The page as a browser builds it: the verdict, the cited number, the rules and the flags are in its DOM."""
    page = synthetic_card / "trust" / "trust.html"
    command = [BROWSER, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]
    command += [f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    card = json.loads((synthetic_card / "trust" / "trust.json").read_text())
    dom = done.stdout
    assert 'id="verdict"' in dom and f'data-answer="{card["verdict"]["answer"]}"' in dom, done.stderr[-2000:]
    assert dom.count("<tr>") >= 1 + len(card["rules"]) and '<ul class="flags">' in dom and "SYNTHETIC" in dom


def test_the_rules_and_the_headline_numbers_are_stated_in_the_docs_as_on_the_page():
    """docs/workflow.md states each verdict rule and names each headline number in the words the page prints."""
    from eval_scripts.jobs.judge_card import RULES, VERDICT_RULE
    from mis_bench_dataset.wording import HEADLINE_NUMBERS

    page = " ".join((Path(__file__).resolve().parents[1] / "docs" / "workflow.md").read_text().split())
    for name, text in [*RULES.items(), *HEADLINE_NUMBERS.items()]:
        assert f"- {name}: {text}" in page, name
    assert VERDICT_RULE in page


def test_the_verdict_follows_its_stated_rule():
    from eval_scripts.jobs.judge_card import verdict

    def rules(**passed):
        return [{"name": n, "passed": p, "withheld": "3 video(s)" if p is None else None} for n, p in passed.items()]

    assert verdict(rules(agreement=True, calibration=True, width=True, ppi=True))["answer"] == "yes"
    assert verdict(rules(agreement=False, calibration=True, width=True, ppi=False))["answer"] == "no"
    assert verdict(rules(agreement=None, calibration=None, width=None, ppi=True))["answer"] == "cannot tell yet"
    care = verdict(rules(agreement=False, calibration=True, width=True, ppi=True))
    assert care["answer"] == "with care"
    assert "per-video intervals" in care["sentence"] and "cohort means" in care["sentence"]
    assert "not for its single scores in place of an expert's" in care["sentence"]
    partial = verdict(rules(agreement=True, calibration=None, width=None, ppi=False))["sentence"]
    assert "not for saving expert labels" in partial and "calibration and width yet" in partial


def test_one_clinicians_ratings_withhold_every_rule_the_ppi_gain_included(synthetic_build, tmp_path):
    """Experts on one clinician's videos (enough videos, one clinician, not a random draw): no rule passes on
    them, the PPI++ gain included, whose widths take the videos as independent."""
    from mis_icc_metric import read_references

    gold = read_references(synthetic_build, split="all")
    _noisy_judge(gold, tmp_path / "judge.csv")
    clinician = sorted({v.split("_")[0] for v, _ in gold})[0]
    rated = [(v, k) for v, k in sorted(gold) if v.startswith(f"{clinician}_")]
    labels = tmp_path / "experts.csv"
    labels.write_text("video_id,dimension,score\n" + "".join(f"{v},{k},{gold[(v, k)]}\n" for v, k in rated))
    args = ["trust", "--predictions", str(tmp_path / "judge.csv"), "--references", str(labels), "--bootstrap", "100"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 0
    card = json.loads((tmp_path / "out" / "trust.json").read_text())
    rules = {rule["name"]: rule for rule in card["rules"]}
    assert set(rules) == {"agreement", "calibration", "width", "ppi"}
    assert all(rule["passed"] is None and rule["withheld"] for rule in rules.values()), rules
    assert card["verdict"]["answer"] == "cannot tell yet"

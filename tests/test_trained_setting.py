"""A run on a trained model folder asks it the way it was trained (`setting.json`), unless the user says otherwise."""

from __future__ import annotations

import json

import pytest

from eval_scripts.cli import build_parser, main
from eval_scripts.harness.trained_setting import adopt_trained_setting, read_trained_setting
from mis_bench_dataset.toolkit.given import given_flags


def _model(tmp_path, **record):
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "setting.json").write_text(json.dumps({"modality": "text", "input_source": "auto", **record}))
    return folder


def test_given_flags_are_recorded_at_parse_time_whatever_their_value():
    parser = build_parser()
    typed = parser.parse_args(["run", "--backend", "openai", "--model", "m", "--prompt", "direct"])
    bare = parser.parse_args(["run", "--backend", "openai", "--model", "m"])
    assert typed.prompt_style == bare.prompt_style == "direct"  # equal values, only one of them chosen
    assert "prompt_style" in given_flags(typed) and "prompt_style" not in given_flags(bare)
    assert {"backend", "model"} <= given_flags(bare)
    # a generated backend flag too: `--concurrency 8` (its default) is given, and fills the option
    at_default = parser.parse_args(["run", "--backend", "openai", "--model", "m", "--concurrency", "8"])
    assert "concurrency" in given_flags(at_default) and "concurrency" not in given_flags(bare)


def test_a_parser_made_recording_records_the_options_it_had_and_those_added_after():
    """The trainer's parser adds its options in its constructor (HfArgumentParser), `mis-bench`'s after: one
    mechanism records both; a switch, an appended value, and a recipe's keys (`mark_given`)."""
    import argparse

    from mis_bench_dataset.toolkit.given import mark_given, recording

    parser = argparse.ArgumentParser()
    parser.add_argument("--before", type=int, default=1)
    recording(parser)
    parser.add_argument("--after", action="append")
    parser.add_argument("--switch", action="store_true")
    parser.add_argument("name", nargs="?")
    assert given_flags(parser.parse_args([])) == frozenset()
    parsed = parser.parse_args(["--before", "1", "--after", "x", "--switch", "n"])
    assert given_flags(parsed) == {"before", "after", "switch"}  # the positional is not an option given
    mark_given(parsed, ["max_length"])
    assert "max_length" in given_flags(parsed) and given_flags(argparse.Namespace()) == frozenset()


@pytest.mark.parametrize(
    ("method", "readout"), [("raft", "expected"), ("regression", "regression"), ("ce", "expected")]
)
def test_the_trained_setting_fills_what_was_not_given_and_warns_on_a_contradiction(tmp_path, method, readout):
    trained = read_trained_setting(_model(tmp_path, prompt_style="paper", method=method))
    current = {"modality": "text", "prompt_style": "direct", "input_source": "auto", "score_from": "text"}
    adopted, notes, warnings = adopt_trained_setting(trained, current, given=())
    assert adopted == {"modality": "text", "prompt_style": "paper", "input_source": "auto", "score_from": readout}
    assert "--prompt paper" in notes and warnings == []
    adopted, _, warnings = adopt_trained_setting(trained, current, given={"prompt_style"})
    assert "prompt_style" not in adopted and len(warnings) == 1 and "--prompt direct differs" in warnings[0]


def test_a_model_without_setting_json_is_asked_as_the_flags_say(tmp_path):
    assert read_trained_setting(tmp_path) is None
    assert read_trained_setting("org/hub-model") is None


@pytest.mark.parametrize(
    ("record", "field"),
    [({"prompt_style": "shouting"}, "prompt_style"), ({"prompt_style": "paper", "modality": "smell+text"}, "modality")],
)
def test_a_setting_json_that_is_not_the_trainers_is_one_data_error(tmp_path, capsys, record, field):
    model = _model(tmp_path, **record)
    code = main(["run", "--backend", "openai", "--model", str(model), "--dry-run"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and field in err[0] and "setting.json" in err[0]


def test_run_says_which_setting_it_took_from_the_model(tmp_path, synthetic_build, capsys):
    model = _model(tmp_path, prompt_style="paper", method="raft")
    args = ["run", "--backend", "openai", "--model", str(model), "--dataset", str(synthetic_build), "--dry-run"]
    assert main([*args, "--limit", "2", "--json"]) == 0
    err = capsys.readouterr().err
    assert "--prompt paper" in err and "--score-from expected" in err and "warning" not in err
    assert main([*args, "--limit", "2", "--json", "--prompt", "direct"]) == 0
    err = capsys.readouterr().err
    assert "warning: --prompt direct differs from the 'paper'" in err


def test_a_cot_raft_model_is_asked_for_its_analysis_and_read_at_its_final_score(tmp_path):
    trained = read_trained_setting(_model(tmp_path, prompt_style="direct", completion_style="cot", method="cot-raft"))
    assert trained.values["prompt_style"] == "cot" and trained.values["score_from"] == "expected"


def test_run_objects_print_in_one_short_line_and_share_scores(tmp_path):
    from eval_scripts.baselines.baseline_run import BaselineRun

    scores = {"overall": {"icc": 0.4123}, "mean_icc": 0.31, "dimensions": {f"d{i}": {"icc": 0.1} for i in range(8)}}
    results = {"scores": scores, "predictions": [{"video_id": f"v{i}", "prediction": 3.0} for i in range(5000)]}
    run = BaselineRun("features-ridge", "text", results, tmp_path / "p.jsonl", tmp_path / "r.json", 1.0)
    assert run.scores is scores
    text = repr(run)
    assert len(text) < 200 and "overall_icc=0.412" in text and "mean_icc=0.310" in text and "r.json" in text


@pytest.mark.slow
def test_a_cot_raft_model_folder_gets_scores_through_the_harness(tmp_path, synthetic_build, capsys):
    """The tiny model never writes "Final score" itself: read at its own declared score it gets none; read as the
    trainer reads CoT-RAFT (analysis, then the score line prefilled), which `run` takes from setting.json, every
    row gets one."""
    pytest.importorskip("torch")
    from raft_trainer import save_tiny_model

    folder = save_tiny_model(tmp_path / "cot-raft")
    record = {"prompt_style": "direct", "completion_style": "cot", "method": "cot-raft", "rationale_max_new_tokens": 6}
    (folder / "setting.json").write_text(json.dumps({"modality": "text", "input_source": "auto", **record}))
    args = ["run", "--backend", "transformers", "--model", str(folder), "--dataset", str(synthetic_build)]
    args += ["--limit", "1", "--device", "cpu", "--no-progress", "--json", "--bootstrap", "0"]
    assert main([*args, "--out", str(tmp_path / "runs")]) == 0
    captured = capsys.readouterr()
    summary = json.loads(captured.out)
    assert "--prompt cot" in captured.err and "-M final_score=prefilled" in captured.err
    assert summary["parsed"] == summary["rows"] == 8 and summary["truncated"] == 0
    with open(summary["results"], encoding="utf-8") as handle:
        results = json.load(handle)
    assert results["system"]["backend_options"] == {"final_score": "prefilled"}
    assert results["system"]["decoding"]["max_new_tokens"] == 6
    declared = main([*args, "--out", str(tmp_path / "declared"), "-M", "final_score=declared"])
    summary = json.loads(capsys.readouterr().out)
    assert declared == 1 and summary["parsed"] == 0  # the answer's own final score: none written

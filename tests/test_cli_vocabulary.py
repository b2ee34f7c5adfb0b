"""The CLI's one vocabulary (issue 48 item 3), walked over every `mis-bench` parser: predictions are
`--predictions` and gold `--references` wherever a command reads them, each old spelling still works and
warns once, `--out` says whether it is a folder or a file (and which commands write which), `--split`'s
default follows the one rule, and every `--bootstrap` follows the one bounds rule."""

from __future__ import annotations

import argparse
import json

import numpy as np
import pytest
from test_cli_options import _parsers

from eval_scripts.cli import build_parser, main
from mis_bench_dataset.toolkit.defaults import MAX_BOOTSTRAP, MIN_BOOTSTRAP, MIN_PLAN_RESAMPLES

PARSERS = {name.removeprefix("mis-bench "): parser for name, parser in _parsers(build_parser())}


def _option(command: str, flag: str) -> argparse.Action | None:
    return next((a for a in PARSERS[command]._actions if flag in a.option_strings), None)


def _options(flag_part: str):
    return [
        (command, action)
        for command, parser in PARSERS.items()
        for action in parser._actions
        if any(flag_part in flag for flag in action.option_strings)
    ]


# What each command reads, written out here (not derived from the parsers): P predictions, G gold.
READS = {
    "score": "PG",
    "compare": "PG",
    "calibrate": "PG",
    "estimate": "PG",
    "plan": "PG",
    "trust": "PG",
    "stats": "G",
    "report": "G",
    "jury": "PG",
    "leaderboard": "G",
    "submit": "G",
}
# The spellings predictions and gold had before one vocabulary: now deprecated aliases only.
OLD_NAMES = {"estimate": {"--judge", "--experts"}, "trust": {"--judge", "--experts"}, "submit": {"--dataset"}}
# `--out` by what the command writes: several files (a folder) or one (a file).
OUT_FOLDER_COMMANDS = {
    "fetch",
    "build",
    "stats",
    "calibrate",
    "trust",
    "run",
    "batch export",
    "batch import",
    "report",
    "jury",
    "submit",
    "leaderboard",
}
OUT_FILE_COMMANDS = {"score", "compare", "estimate", "plan", "parse", "cache merge", "reproduce"}
# `--split`: commands that judge a system default to the held-out test split, those whose sample is the labels
# themselves to every split (jury: its members' split, else test).
JUDGING = {"score", "compare", "run", "batch export", "batch import", "report", "jury", "submit", "leaderboard"}
SAMPLING = {"stats", "estimate", "plan", "trust"}


@pytest.mark.parametrize("command", sorted(READS))
def test_predictions_and_gold_have_one_name(command):
    reads = READS[command]
    references, predictions = _option(command, "--references"), _option(command, "--predictions")
    assert ("G" in reads) == (references is not None), f"{command}: gold is not --references"
    assert ("P" in reads) == (predictions is not None), f"{command}: predictions are not --predictions"
    for action in PARSERS[command]._actions:  # no other flag names them
        live = set(action.option_strings) - set(getattr(action, "deprecated", ()))
        assert not live & {"--judge", "--experts", "--gold-dir", "--labels-dir"}, (command, action.option_strings)
        if command != "run" and action not in (references, predictions):
            assert "--dataset" not in live, f"{command}: --dataset is gold here; use --references"
    for old in OLD_NAMES.get(command, ()):
        assert old in references.option_strings + (predictions.option_strings if predictions else []), old


def test_run_reads_the_benchmark_with_dataset_and_says_why():
    for command in ("run", "batch export", "batch import"):
        text = _option(command, "--dataset").help
        assert "--references" in text and "videos" in text, text
        assert _option(command, "--references") is None


def test_positional_forms_take_the_flag_too(tmp_path):
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    for path in (a, b):
        path.write_text("video_id,dimension,prediction\n")
    parser = build_parser()
    flagged = parser.parse_args(["compare", "--predictions", str(a), str(b), "--references", str(tmp_path)])
    assert flagged.predictions == [a, b] and flagged.a is None
    stats = parser.parse_args(["stats", "--references", str(tmp_path)])
    assert stats.references == str(tmp_path) and stats.dataset_dir is None
    jury = parser.parse_args(["jury", "--predictions", str(a), str(b), "--method", "mean"])
    assert jury.predictions == [a, b] and jury.runs == []


def _aliased():
    return [
        (command, action, old)
        for command, parser in PARSERS.items()
        for action in parser._actions
        for old in getattr(action, "deprecated", ())
    ]


def test_every_old_name_is_found():
    found = {(command, old) for command, _, old in _aliased()}
    assert found == {(command, old) for command, olds in OLD_NAMES.items() for old in olds}


@pytest.mark.parametrize("item", _aliased(), ids=lambda item: f"{item[0]} {item[2]}")
def test_each_old_name_stores_the_same_value_and_warns_once(item, tmp_path, capsys):
    command, action, old = item
    parser, value = PARSERS[command], str(tmp_path)
    new_ns, old_ns = argparse.Namespace(), argparse.Namespace()
    action(parser, new_ns, value, action.option_strings[0])
    assert capsys.readouterr().err == ""
    action(parser, old_ns, value, old)
    action(parser, old_ns, value, old)  # given twice: still one line
    err = capsys.readouterr().err
    new = action.option_strings[0]
    assert err == f"mis-bench {command}: warning: {old} is deprecated; use {new}\n"
    assert getattr(old_ns, action.dest) == getattr(new_ns, action.dest) == value


@pytest.fixture(scope="module")
def judge_file(synthetic_build, tmp_path_factory):
    """A noisy judge on every video of the synthetic build."""
    from mis_icc_metric import read_references, write_predictions

    gold = read_references(synthetic_build, split="all")
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("vocab") / "judge.csv"
    records = [
        {"video_id": v, "dimension": d, "prediction": float(np.clip(g + rng.normal(0, 0.5), 1, 5))}
        for (v, d), g in gold.items()
    ]
    write_predictions(path, records)
    return path


def test_old_names_behave_identically_end_to_end(judge_file, synthetic_build, capsys):
    common = ["--split", "all", "--bootstrap", "0", "--json"]
    assert main(["estimate", "--predictions", str(judge_file), "--references", str(synthetic_build), *common]) == 0
    new = capsys.readouterr()
    assert main(["estimate", "--judge", str(judge_file), "--experts", str(synthetic_build), *common]) == 0
    old = capsys.readouterr()
    assert json.loads(old.out) == json.loads(new.out) and new.err == ""
    assert old.err.splitlines() == [
        "mis-bench estimate: warning: --judge is deprecated; use --predictions",
        "mis-bench estimate: warning: --experts is deprecated; use --references",
    ]


@pytest.mark.parametrize("item", _options("--out"), ids=lambda item: item[0])
def test_out_says_folder_or_file(item):
    command, action = item
    text = action.help or ""
    if command in OUT_FOLDER_COMMANDS:
        assert text.startswith("output folder"), f"{command} --out: {text!r}"
    else:
        assert command in OUT_FILE_COMMANDS, f"{command} has --out but is in neither list"
        assert text.startswith("output file"), f"{command} --out: {text!r}"


def test_every_out_command_is_walked():
    assert {command for command, _ in _options("--out")} == OUT_FOLDER_COMMANDS | OUT_FILE_COMMANDS


@pytest.mark.parametrize("item", _options("--split"), ids=lambda item: item[0])
def test_split_default_follows_the_rule(item):
    command, action = item
    if action.option_strings != ["--split"]:
        return  # --split-by: how a build splits, not which split a command reads
    assert command in JUDGING | SAMPLING, f"{command}: which side of the rule is it on?"
    text = " ".join((action.help or "").split())
    if command in SAMPLING:
        assert action.default == "all" and "all" in action.choices, command
    elif command == "jury":
        assert action.default is None and "else test" in text
    else:
        assert action.default == "test", command
    assert "default" in text


def test_the_rule_is_stated_once_in_the_top_help(capsys):
    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--split's default:" in text and "--bootstrap N: 0 (no resampling" in text
    assert f"or {MIN_BOOTSTRAP} to {MAX_BOOTSTRAP:,}" in text


@pytest.mark.parametrize("item", _options("bootstrap"), ids=lambda item: f"{item[0]} {item[1].option_strings[0]}")
def test_bootstrap_bounds_follow_the_rule(item):
    command, action = item
    parse = action.type
    assert parse("0") == 0
    assert parse("100") == 100 and parse(str(MAX_BOOTSTRAP)) == MAX_BOOTSTRAP
    for bad in ("1", "99", str(MAX_BOOTSTRAP + 1), "-1"):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)
    assert "0 (no resampling" in action.help and "100 to 200,000" in action.help, (command, action.help)


def test_the_floor_is_one_constant():
    assert MIN_BOOTSTRAP == MIN_PLAN_RESAMPLES == 100


@pytest.mark.parametrize(
    "argv", [["compare", "A", "B"], ["plan", "icc", "--half-width", "0.1"], ["leaderboard", "BUILD"]]
)
def test_zero_is_refused_where_the_result_is_resampled(argv, judge_file, synthetic_build, capsys):
    files = {"A": str(judge_file), "B": str(judge_file), "BUILD": str(synthetic_build)}
    args = [files.get(arg, arg) for arg in argv] + ["--references", str(synthetic_build), "--bootstrap", "0"]
    if argv[0] == "plan":
        args += ["--predictions", str(judge_file)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--bootstrap 0 (no resampling) leaves nothing to report" in err


def test_calibrate_apply_writes_into_the_out_folder_and_an_old_file_out_warns(tmp_path, capsys):
    from eval_scripts.cli.calibrate import _applied_file

    predictions = tmp_path / "new.jsonl"
    args = argparse.Namespace(predictions=predictions, out=None, command_prog="mis-bench calibrate")
    assert _applied_file(args) == tmp_path / "new-calibrated.csv"
    args.out = tmp_path / "folder"
    assert _applied_file(args) == tmp_path / "folder" / "new-calibrated.csv"
    assert capsys.readouterr().err == ""
    args.out = tmp_path / "mine.jsonl"
    assert _applied_file(args) == tmp_path / "mine.jsonl"
    assert (
        capsys.readouterr().err
        == "mis-bench calibrate: warning: --out FILE with --apply is deprecated; use --out FOLDER\n"
    )

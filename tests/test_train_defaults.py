"""`mis-bench train` with its defaults: a `max_length` that fits the build's prompts (the paper's 512 raised when a
rubric needs more, a chosen value below a prompt a one-line usage error), `--model / --dataset / --out` as the
other commands spell them, `train --help` from the stored text in under a second, and `mis-bench help [COMMAND]`.

(The end-to-end training with only a model, a build and an output folder: tests/test_progress_redirected.py.)"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory) -> Path:
    from raft_trainer import save_tiny_model

    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen2")


@pytest.fixture(scope="module")
def splits(synthetic_build):
    from mis_bench_dataset import load_build

    with load_build(synthetic_build, "scoring") as loaded:
        yield {name: split for name, split in loaded.items()}


def _encoder(tiny_model_dir, max_length):
    from transformers import AutoTokenizer

    from raft_trainer import ScoringEncoder
    from raft_trainer.digits import DigitTokens

    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    return ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), max_length)


def test_the_prompt_floor_is_exactly_the_least_max_length_that_encodes_every_row(tiny_model_dir, splits):
    """One token below the floor the widest row cannot be encoded (the trainer's own refusal); at the floor every
    row of its dimension, in every split, is (its transcript shortened as far as it must)."""
    from raft_trainer.data import prompt_floor

    rows = [row for split in splits.values() for row in split]
    floor, widest = prompt_floor(_encoder(tiny_model_dir, None), rows)
    assert floor > 512  # the synthetic build's longest rubric does not fit the paper's 512 with this tokenizer
    with pytest.raises(ValueError, match="even with the transcript removed"):
        _encoder(tiny_model_dir, floor - 1).encode(widest, "3.0")
    at_floor = _encoder(tiny_model_dir, floor)
    same = [row for row in rows if row["dimension"] == widest["dimension"]]
    assert same and all(len(at_floor.encode(row, "3.0")["input_ids"]) <= floor for row in same)


def _args(max_length, input_source="text", completion_style="score"):
    from mis_bench_dataset import Setting

    setting = Setting(modality="text", input_source=input_source, prompt_style="toolkit")  # the alias of direct
    return SimpleNamespace(
        max_length=max_length,
        input_source=input_source,
        modality="text",
        prompt_style=setting.prompt_style,
        setting=setting,
        completion_style=completion_style,
        trust_remote_code=False,
    )


def test_the_default_max_length_is_raised_to_fit_and_a_chosen_one_is_refused(tiny_model_dir, splits, caplog):
    from mis_bench_dataset.toolkit.errors import UsageError
    from raft_trainer.data import prompt_floor
    from raft_trainer.train import TRANSCRIPT_ROOM, fit_max_length

    model = SimpleNamespace(model_name_or_path=str(tiny_model_dir), model_revision="main")
    floor, _ = prompt_floor(_encoder(tiny_model_dir, None), [r for s in splits.values() for r in s])
    default = _args(512)
    fit_max_length(splits, default, model, chosen=False)
    assert floor + TRANSCRIPT_ROOM <= default.max_length < floor + TRANSCRIPT_ROOM + 64
    assert default.max_length % 64 == 0 and "max_length raised from 512" in caplog.text

    with pytest.raises(UsageError) as info:
        fit_max_length(splits, _args(512), model, chosen=True)
    line = info.value.line()
    assert "\n" not in line and f"needs {floor} tokens" in line and "--max_length" in line
    assert f"--max_length {default.max_length} or more" in line

    roomy = _args(floor + 1)
    fit_max_length(splits, roomy, model, chosen=True)  # big enough: kept as chosen
    assert roomy.max_length == floor + 1
    # CoT-RAFT's prompt carries its analysis instruction: its floor is higher, so that length is refused for it
    with pytest.raises(UsageError, match="too small"):
        fit_max_length(splits, _args(floor + 1, completion_style="cot"), model, chosen=True)


def test_a_flag_counts_as_given_on_the_command_line_or_in_the_recipe_whatever_its_value(tmp_path):
    """The trainer's given flags are recorded while parsing (`toolkit.given`, the harness's mechanism): a flag
    typed (either spelling, even at its default) or a key of the `--config` recipe; never a flag that only starts
    like one."""
    from raft_trainer.train import parse_with_given

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("max_length: 2048\nlearning_rate: 1.0e-4\n")
    base = ["--model", "m", "--dataset", "d", "--out", str(tmp_path / "o")]

    def given(*flags: str) -> frozenset[str]:
        return parse_with_given([*base, *flags])[1]

    assert "max_length" in given("--max_length", "700")
    assert "max_length" in given("--max-length=700")
    assert "max_length" in given("--max_length", "512")  # the paper's default, typed: a choice
    assert {"max_length", "learning_rate"} <= given("--config", str(recipe))
    assert "max_steps" not in given("--config", str(recipe))
    assert "max_length" not in given() and {"model_name_or_path", "dataset_dir", "output_dir"} <= given()


def test_model_dataset_and_out_are_the_trl_flags(tmp_path):
    from raft_trainer.train import parse_arguments

    short = parse_arguments(["--model", "m", "--dataset", "d", "--out", str(tmp_path / "o")])
    long = parse_arguments(["--model_name_or_path", "m", "--dataset_dir", "d", "--output_dir", str(tmp_path / "o")])
    script, training, model = short
    assert (model.model_name_or_path, script.dataset_dir, training.output_dir) == ("m", "d", str(tmp_path / "o"))
    assert (long[1].output_dir, long[0].dataset_dir, long[2].model_name_or_path) == (training.output_dir, "d", "m")


def test_the_stored_train_help_is_what_the_parser_prints():
    from eval_scripts.cli.train import HELP_ALL_FILE, HELP_FILE, render_help

    stale = "is stale: python3 -c 'from eval_scripts.cli.train import write_help; write_help()'"
    assert HELP_FILE.read_text(encoding="utf-8") == render_help(), f"train_help.txt {stale}"
    assert HELP_ALL_FILE.read_text(encoding="utf-8") == render_help(full=True), f"train_help_all.txt {stale}"


def _cli(*args: str) -> tuple[subprocess.CompletedProcess, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "eval_scripts.cli", *args], env=env, capture_output=True, text=True, timeout=120
    )
    return done, time.perf_counter() - started


@pytest.mark.slow
def test_train_help_is_fast_and_help_command_prints_the_same():
    from eval_scripts.cli.train import HELP_FILE

    _cli("--version")  # warm the file cache: the second start is what a user's shell sees
    done, took = _cli("train", "--help")
    assert done.returncode == 0 and done.stdout == HELP_FILE.read_text(encoding="utf-8")
    assert took < 1.5  # was 7.5 s: nothing heavy imported (one second plus the interpreter's start)
    every, took = _cli("train", "--help-all")
    assert every.returncode == 0 and "--adam_beta1" in every.stdout and took < 2.0  # was 14.6 s (issue 47)
    via_help, _ = _cli("help", "train")
    assert via_help.returncode == 0 and via_help.stdout == done.stdout
    run_help, _ = _cli("run", "--help")
    assert _cli("help", "run")[0].stdout == run_help.stdout and run_help.stdout.startswith("usage: mis-bench run")
    assert _cli("help")[0].stdout == _cli("--help")[0].stdout
    unknown, _ = _cli("help", "nope")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1 and "invalid choice: 'nope'" in unknown.stderr

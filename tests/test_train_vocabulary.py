"""The trainer speaks the harness's names for shared settings, finds its recipes by name, and refuses unknown flags
in one line (before any model is loaded)."""

from __future__ import annotations

import pytest

pytest.importorskip("trl")

from raft_trainer.recipes import recipe_names, recipe_path  # noqa: E402
from raft_trainer.train import parse_arguments  # noqa: E402

CPU = ["--load_in_4bit", "false", "--optim", "adamw_torch", "--bf16", "false"]


def _parse(tmp_path, *flags):
    return parse_arguments(["--dataset", str(tmp_path), "--model", "m", "--out", str(tmp_path / "o"), *flags])


def test_prompt_is_the_trainers_prompt_style(tmp_path):
    _, config, _ = _parse(tmp_path, "--prompt", "paper")
    assert config.prompt_style == "paper"


def test_a_shipped_recipe_is_found_by_name_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "cot_raft" in recipe_names() and recipe_path("cot_raft") == recipe_path("cot_raft.yaml")
    by_name = _parse(tmp_path, "--config", "paper_d1", *CPU)
    by_path = _parse(tmp_path, "--config", str(recipe_path("paper_d1")), *CPU)
    assert by_name[1].learning_rate == by_path[1].learning_rate
    assert by_name[1].num_train_epochs == by_path[1].num_train_epochs == 2  # the recipe's, not the default 3
    mine = tmp_path / "paper_d1.yaml"  # a file of the user's wins over the shipped recipe of that name
    mine.write_text("learning_rate: 0.5\n")
    assert _parse(tmp_path, "--config", "paper_d1.yaml")[1].learning_rate == 0.5


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--config", "no_such_recipe"], "neither a recipe file nor a shipped recipe"),
        (["--no_such_flag", "1"], "unrecognized arguments: ['--no_such_flag', '1']"),
    ],
)
def test_a_bad_recipe_or_flag_is_one_usage_line(tmp_path, flags, says):
    from mis_bench_dataset.toolkit.errors import UsageError

    with pytest.raises(UsageError) as caught:
        _parse(tmp_path, *flags)
    assert says in caught.value.line() and "\n" not in caught.value.line()


@pytest.mark.parametrize(("rank", "lines"), [("0", 1), ("1", 0)])
def test_only_the_first_process_of_a_group_prints_a_refusal(tmp_path, monkeypatch, capsys, rank, lines):
    """Every launched process checks the same flags: the first says what they found, the others exit quietly
    with the same code (a bare `accelerate launch` printed each refusal once per process)."""
    import logging

    from raft_trainer.train import main

    monkeypatch.setenv("LOCAL_RANK", rank)
    monkeypatch.setenv("RANK", rank)
    root = logging.getLogger()
    monkeypatch.setattr(root, "level", root.level)  # main() quiets the other processes' logging: undone after
    assert main(["--dataset", str(tmp_path), "--config", "no_such_recipe"]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert len(err) == lines


def test_score_from_is_the_trainers_head(tmp_path):
    from mis_bench_dataset.toolkit.errors import UsageError

    assert _parse(tmp_path, "--score-from", "regression", "--prompt", "paper")[1].head == "regression"
    assert _parse(tmp_path, "--score-from=expected")[1].head == "lm"
    with pytest.raises(UsageError, match="reads its scores from its head"):
        _parse(tmp_path, "--score-from", "text")


def test_score_from_names_the_trainers_heads():
    from raft_trainer.config import HEADS
    from raft_trainer.train import SCORE_FROM_HEADS

    assert sorted(SCORE_FROM_HEADS.values()) == sorted(HEADS)

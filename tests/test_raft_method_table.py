"""Impossible combinations are refused before work: one table says what each training method accepts (heads,
objectives, completion and prompt styles, input sources, readouts), applied when the arguments are parsed, so
`train --method grpo --head regression` is one usage line before any data or model is loaded (it trained a step,
wrote an adapter, then ended in "internal error: ValueError: shape mismatch"). And `run --perturb ''` (an unset
shell variable) is a usage error, not a run without perturbations.
"""

from __future__ import annotations

import itertools

import pytest

from eval_scripts.cli import main
from mis_bench_dataset.toolkit.errors import EXIT_USAGE, UsageError

BASE = ["--dataset", "{build}", "--model_name_or_path", "org/never-loaded", "--output_dir", "{out}"]


def _argv(synthetic_build, tmp_path, *flags: str) -> list[str]:
    return [a.format(build=synthetic_build, out=tmp_path / "trained") for a in BASE] + list(flags)


def test_grpo_with_the_regression_head_is_refused_before_anything_loads(
    synthetic_build, tmp_path, monkeypatch, capsys
) -> None:
    import mis_bench_dataset.dataset.loading as loading

    def never(*args, **kwargs):
        raise AssertionError("the data (or a model) was loaded before the combination was refused")

    monkeypatch.setattr(loading, "load_build", never)
    monkeypatch.setattr("transformers.AutoTokenizer.from_pretrained", never)
    code = main(["train", *_argv(synthetic_build, tmp_path, "--method", "grpo", "--head", "regression")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE and len(err) == 1, err
    assert err[0].startswith("mis-bench train: error: --method grpo") and "--head regression" in err[0], err
    assert "internal error" not in err[0]
    assert not (tmp_path / "trained").exists()


def _table():
    from raft_trainer.methods import METHOD_OPTIONS, method_table

    return method_table(), METHOD_OPTIONS


def test_the_table_covers_every_method_and_option_within_each_options_choices() -> None:
    from raft_trainer import make_parser
    from raft_trainer.methods import TRAINING_METHODS

    table, options = _table()
    assert set(table) == set(TRAINING_METHODS)
    choices = {action.dest: action.choices for action in make_parser()._actions if action.choices}
    for method, accepts in table.items():
        assert set(accepts) == set(options), method
        for option, accepted in accepts.items():
            if option in choices:
                assert set(accepted.values) <= set(choices[option]) | {"text"}, (method, option)
    # RAFT takes every value the flags offer; GRPO a strict subset of the heads, objectives and completion styles.
    for option in ("head", "raft_objective", "completion_style"):
        assert set(table["raft"][option].values) == set(choices[option])
        assert set(table["grpo"][option].values) < set(choices[option])


@pytest.mark.parametrize("method", ["raft", "grpo"])
def test_parsing_refuses_exactly_what_the_table_does_not_accept(synthetic_build, tmp_path, method) -> None:
    """Every single-option departure from the defaults: parsed when the table accepts it, else one usage line
    naming the method and the flag's value (or the combination)."""
    from raft_trainer.train import parse_arguments

    table, options = _table()
    grpo = ["--per_device_train_batch_size", "8"] if method == "grpo" else []
    seen = 0
    for option, accepted in table[method].items():
        every = set(itertools.chain.from_iterable(table[m][option].values for m in table))
        for value in sorted(every - {"text", "auto"}):
            flags = ["--method", method, *grpo, f"--{option}", value]
            if option == "input_source" and value == "raw":
                flags += ["--modality", "audio+text"]  # raw media needs a media setting
            if option == "completion_style" and value == "cot" and method == "raft":
                continue  # CoT-RAFT has its own checks (a rationale folder), tested with its recipe
            if value in accepted.values:
                parse_arguments(_argv(synthetic_build, tmp_path, *flags))
            else:
                with pytest.raises(UsageError) as refused:
                    parse_arguments(_argv(synthetic_build, tmp_path, *flags))
                line = refused.value.line()
                assert "\n" not in line and f"--method {method}" in line and value.lower() in line.lower(), line
                seen += 1
    assert seen >= (4 if method == "grpo" else 0)


@pytest.mark.parametrize("value", ["", " ", ",", " , "])
def test_an_empty_perturb_value_is_a_usage_error(synthetic_build, tmp_path, capsys, value) -> None:
    code = main(["run", "--dataset", str(synthetic_build), "--out", str(tmp_path / "out"), "--perturb", value])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == EXIT_USAGE and len(err) == 1 and "--perturb" in err[0] and "no perturbation named" in err[0], err
    assert not (tmp_path / "out").exists()

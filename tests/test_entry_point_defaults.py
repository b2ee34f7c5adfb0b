"""One default per option: every entry point left without `--bootstrap` / `--seed` (or their keywords) scores
with the same resample count and seed, `DEFAULT_BOOTSTRAP` and `DEFAULT_SEED`: the Python API (`RunConfig`,
`run_setting`), `mis-bench run` (its defaults are the fields', option by option), the default job, the
baselines and the cross-validation. The runs are real; the scorer they share records what it was asked for
(the default job, minutes of fits and figures, by its signature: it hands both to the baselines)."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

import mis_icc_metric.scoring as scoring
from eval_scripts import RunConfig
from eval_scripts.cli import build_parser, main
from eval_scripts.cli.args import config_from_args
from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_SEED
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING

from _run_args import run_args

EXPECTED = (DEFAULT_BOOTSTRAP, DEFAULT_SEED)


@pytest.fixture
def asked(monkeypatch) -> list[tuple[int, int]]:
    """(n_bootstrap, seed) of every scoring call; scored with no resamples, to stay fast."""
    calls: list[tuple[int, int]] = []
    real = scoring.score_predictions

    def recording(predictions, references, *args, resampling=DEFAULT_RESAMPLING, **kwargs):
        calls.append((resampling.n_bootstrap, resampling.seed))
        return real(predictions, references, *args, resampling=dataclasses.replace(resampling, n_bootstrap=0), **kwargs)

    monkeypatch.setattr(scoring, "score_predictions", recording)
    return calls


def test_the_defaults_are_the_papers_resamples_and_seed_zero():
    assert EXPECTED == (10_000, 0)


def test_runconfig_and_the_command_line_have_the_same_defaults():
    args = build_parser().parse_args(["run"])
    config = RunConfig(backend="openai", model="m")
    assert (args.bootstrap, args.seed) == (config.n_bootstrap, config.seed) == EXPECTED
    # every generated option's default is its field's (the output folder's is picked by mode); a repeatable
    # option (`--base-url`) parses to None when not given, and the config then takes the field's own
    from_args = config_from_args(RunConfig, args, backend="openai", model="m")
    for item in dataclasses.fields(RunConfig):
        if "help" in item.metadata and item.metadata["cli_default"] is ...:
            dest = item.metadata["dest"] or item.name
            parsed = None if item.metadata["action"] == "append" else getattr(config, item.name)
            assert getattr(args, dest) == parsed or item.name in ("backend", "model"), item.name
            assert getattr(from_args, item.name) == getattr(config, item.name), item.name


def test_a_model_run_scores_with_the_defaults_from_python_and_the_cli(synthetic_build, tmp_path, asked, chat_server):
    from eval_scripts import run_setting

    with chat_server() as server:
        args = run_args(
            synthetic_build, tmp_path / "cli", server.base_url, model="m", limit=1, bootstrap=None, retries=0
        )
        assert main(args) == 0  # no --bootstrap: the default
        config = RunConfig(
            backend="openai",
            model="m",
            dataset=synthetic_build,
            limit=1,
            out=tmp_path / "api",
            backend_options={"base_url": server.base_url, "api_key_env": "MIS_BENCH_UNSET"},
            progress=False,
        )
        run_setting(config)
    assert asked == [EXPECTED, EXPECTED]


def test_the_default_job_baselines_and_cross_validation_score_with_the_defaults(synthetic_build, tmp_path, asked):
    from eval_scripts import cross_validate, run_baseline, run_default_job

    run_baseline(synthetic_build, tmp_path / "baseline", modality="text")
    assert asked and set(asked) == {EXPECTED}
    job = inspect.signature(run_default_job).parameters
    assert (job["resampling"].default.n_bootstrap, job["resampling"].default.seed) == EXPECTED
    asked.clear()
    cross_validate(synthetic_build, [("features", "text")], n_folds=2, progress=False)
    # seeds from the default on; each fold's own mean ICC is a point estimate (0 resamples), the CIs the default's
    assert asked and asked[0] == EXPECTED and {n for n, _ in asked if n} == {DEFAULT_BOOTSTRAP}

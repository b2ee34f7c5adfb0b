"""A grid opens its dataset once on every path: `mis-bench run --grid` live, `--dry-run`, `--export-batch`,
`--import-batch`, the default job, and the Python entry functions given folders (a `scoring` override too).

`BuiltDataset.open` (the one "is this a build?" rule, which reads the build report) is counted around a real
build of the synthetic generator; the live grid talks to a real local Chat Completions server."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from eval_scripts import RunConfig, dry_run, export_batch, grid_configs, run_grid
from eval_scripts.cli import main
from mis_bench_dataset import BuiltDataset

from _batch_helpers import closed_port_url, simulate_provider
from _harness_helpers import ChatServer

GRID = ["--grid", "--modalities", "text,audio+text", "--prompts", "direct,cot"]  # four settings


@pytest.fixture
def opens(monkeypatch) -> Counter:
    """Each folder `BuiltDataset.open` opened, with how often."""
    counted: Counter = Counter()
    real_open = BuiltDataset.open.__func__

    def counting_open(cls, folder, **kwargs):
        counted[str(Path(folder).resolve())] += 1
        return real_open(cls, folder, **kwargs)

    monkeypatch.setattr(BuiltDataset, "open", classmethod(counting_open))
    return counted


def _run(build: Path, out: Path, base_url: str, *extra: str) -> list[str]:
    return [
        *("run", "--backend", "openai", "--model", "fake-model", "--dataset", str(build), "--limit", "2"),
        *("--out", str(out), "--base-url", base_url, "--api-key-env", "MIS_BENCH_UNSET", "--no-progress"),
        *("--bootstrap", "0", "--max-retries", "0", "--backoff-base", "0", *extra),
    ]


def test_each_grid_command_opens_the_dataset_once(synthetic_build, tmp_path, opens, capsys):
    once = Counter({str(synthetic_build.resolve()): 1})
    with ChatServer() as server:
        assert main(_run(synthetic_build, tmp_path / "live", server.base_url, *GRID)) == 0
    assert opens == once, "live grid"
    opens.clear()
    assert main(_run(synthetic_build, tmp_path / "dry", closed_port_url(), *GRID, "--dry-run")) == 0
    assert opens == once, "dry run"
    opens.clear()
    exported = tmp_path / "batch" / "in.jsonl"
    assert (
        main(_run(synthetic_build, tmp_path / "batch", closed_port_url(), *GRID, "--export-batch", str(exported))) == 0
    )
    assert opens == once, "batch export"
    simulate_provider([exported], tmp_path / "out.jsonl")
    opens.clear()
    imported = _run(synthetic_build, tmp_path / "batch", closed_port_url(), *GRID, "--import-batch")
    assert main([*imported, str(tmp_path / "out.jsonl")]) == 3  # the simulated provider failed some rows
    assert opens == once, "batch import"
    capsys.readouterr()


@pytest.mark.slow
def test_the_default_job_opens_its_dataset_once(synthetic_build, tmp_path, opens, capsys):
    argv = ["run", "--dataset", str(synthetic_build), "--out", str(tmp_path / "job"), "--no-progress"]
    assert main([*argv, "--bootstrap", "0"]) == 0
    assert opens == Counter({str(synthetic_build.resolve()): 1})
    capsys.readouterr()


def test_the_entry_functions_open_a_folder_and_its_scoring_override_once(synthetic_build, tmp_path, opens):
    """A folder given to the Python API is opened at its boundary, once for every setting; a `scoring` override
    naming the same folder shares its handle (before, each setting opened the override again)."""
    config = RunConfig("openai", "fake-model", dataset=str(synthetic_build), limit=2, out=str(tmp_path / "runs"))
    config.backend_options, config.n_bootstrap = {"base_url": closed_port_url(), "max_retries": 0}, 0
    once = Counter({str(synthetic_build.resolve()): 1})
    modalities, styles = ("text", "audio+text"), ("direct", "cot")
    settings = list(grid_configs(config, modalities, styles))
    dry_run(settings, grid=True, scoring=str(synthetic_build))
    assert opens == once, "dry_run"
    opens.clear()
    export_batch(settings, tmp_path / "in.jsonl", grid=True, scoring=str(synthetic_build))
    assert opens == once, "export_batch"
    opens.clear()
    with ChatServer() as server:
        config.backend_options = {**config.backend_options, "base_url": server.base_url}
        entries = run_grid(config, modalities, styles, scoring=str(synthetic_build))
    assert [entry.refused for entry in entries] == [None] * 4
    assert opens == once, "run_grid"

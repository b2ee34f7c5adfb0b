"""Packaging: a plain install (no extras) runs the core commands, and a command that needs an
extra names it. The core runs in a subprocess where torch, transformers, trl, peft and accelerate
cannot be found (as if not installed: imports fail, `importlib.util.find_spec` says None)."""

from __future__ import annotations

import configparser
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mis_bench_dataset.toolkit.errors import EXTRA_MODULES
from mis_icc_metric import ResamplingOptions

REPO_ROOT = Path(__file__).resolve().parents[1]
TESTS_DIR = Path(__file__).resolve().parent
TRAIN_MODULES = EXTRA_MODULES["train"]
# The torch step of every hint: the two commands README.md and docs/installation.md give (written out, not imported).
TORCH_HINT = (
    "pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu (a CPU-only machine; "
    "with a CUDA GPU: pip install torch==2.13.0)"
)

# Runs before the code under test: every import finder is wrapped so that the hidden
# top-level packages (sys.argv[1], comma-separated) are not found, as in a plain install.
HIDE_PACKAGES = """
import sys

HIDDEN = set(sys.argv[1].split(","))


class _WithoutHidden:
    def __init__(self, finder):
        self._finder = finder

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in HIDDEN or not hasattr(self._finder, "find_spec"):
            return None
        return self._finder.find_spec(name, path, target)

    def __getattr__(self, attr):
        return getattr(self._finder, attr)


sys.meta_path[:] = [_WithoutHidden(finder) for finder in sys.meta_path]
"""

# The console script as setup.cfg declares it (wherever the CLI lives).
LOAD_MAIN = """
import configparser, importlib
_setup = configparser.ConfigParser()
_setup.read(sys.argv[2])
_script = [l for l in _setup["options.entry_points"]["console_scripts"].splitlines() if l.strip()][0]
_module, _function = _script.split("=", 1)[1].strip().split(":")
main = getattr(importlib.import_module(_module), _function)
"""


def _setup_cfg() -> configparser.ConfigParser:
    setup = configparser.ConfigParser()
    setup.read(REPO_ROOT / "setup.cfg")
    return setup


def _requirement_names(block: str) -> list[str]:
    return [re.split(r"[<>=!~; ]", line.strip())[0].lower() for line in block.splitlines() if line.strip()]


def _run_without(hidden, body: str, *args: str, cwd: Path, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), str(TESTS_DIR)]),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "MIS_BENCH_CACHE": str(cwd / "cache"),
        "OPENAI_API_KEY": "sk-test",
    }
    return subprocess.run(
        [sys.executable, "-c", HIDE_PACKAGES + LOAD_MAIN + body, ",".join(hidden), str(REPO_ROOT / "setup.cfg"), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_plain_install_requires_no_extra_and_extras_match_what_the_code_checks():
    setup = _setup_cfg()
    core = set(_requirement_names(setup["options"]["install_requires"]))
    assert not core & {*TRAIN_MODULES, "bitsandbytes", "rich"}
    extras = {name: _requirement_names(block) for name, block in setup["options.extras_require"].items()}
    assert set(extras) == {"train", "qlora", "serving", "space", "docs", "test", "all"}
    assert set(EXTRA_MODULES) <= set(extras)
    for extra, modules in EXTRA_MODULES.items():
        assert extras[extra] == list(modules)  # here the distributions are named as their import packages
    assert extras["serving"] == ["transformers[serving]"]
    assert "serving" in importlib.metadata.metadata("transformers").get_all("Provides-Extra")
    name = setup["metadata"]["name"]
    assert f"{name}[train]" in extras["test"] and {"pytest", "hypothesis", "pingouin", "ruff"} <= set(extras["test"])
    assert f"{name}[serving]" in extras["test"]  # the real-server tests run `transformers serve`
    assert f"{name}[space]" in extras["test"]  # the Space tests run uvicorn on loopback
    assert f"{name}[docs]" in extras["test"] and "pytest-xdist" in extras["test"]  # the suite builds the docs, -n 2
    assert {"mkdocs", "mkdocs-material", "mkdocstrings[python]"} == set(extras["docs"])
    assert extras["all"] == [f"{name}[train,qlora,serving,space,docs,test]"]


@pytest.mark.slow
def test_core_commands_run_without_the_train_extra(tmp_path):
    body = """
import importlib.util
import json
from pathlib import Path

work = Path(sys.argv[3])
try:
    import torch  # noqa: F401
    hidden_ok = False
except ImportError:
    hidden_ok = importlib.util.find_spec("torch") is None
codes = {}
build = str(work / "build")
release = work / "release"
codes["synth"] = main(["synth", str(release), "--videos", "30", "--seed", "0"])
codes["build"] = main(["build", str(release), "--labels", str(release / "ratings.csv"), "--out", build])
codes["default job"] = main(["run", "--dataset", build, "--out", str(work / "job"), "--bootstrap", "100"])

from _harness_helpers import ChatServer

with ChatServer() as server:
    codes["openai run"] = main(["run", "--backend", "openai", "--model", "fake", "--dataset", build,
                                "--base-url", server.base_url, "--out", str(work / "openai"), "--bootstrap", "0",
                                "--no-progress"])
predictions = next((work / "openai").rglob("predictions.jsonl"))
codes["score"] = main(["score", "--predictions", str(predictions), "--references", build, "--bootstrap", "0",
                       "--out", str(work / "scores.json")])

import evaluate
import mis_icc_metric

metric = evaluate.load(mis_icc_metric.metric_path())
computed = metric.compute(predictions=[3.1, 4.0, None, 2.2, 3.6], references=[3.0, 4.2, 3.3, 2.0, 3.4],
                          video_ids=["a", "b", "c", "d", "e"], dimensions=["empathy"] * 5, n_bootstrap=0)
loaded = sorted({name.partition(".")[0] for name in sys.modules} & HIDDEN)
print(json.dumps({"hidden_ok": hidden_ok, "codes": codes, "loaded": loaded, "predictions": str(predictions),
                  "icc": computed["dimensions"]["empathy"]["icc"]}))
"""
    done = _run_without(TRAIN_MODULES, body, str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["hidden_ok"] and report["loaded"] == []
    assert report["codes"] == {"synth": 0, "build": 0, "default job": 0, "openai run": 0, "score": 0}
    job = tmp_path / "job"
    assert len(list((job / "runs").glob("*/results.json"))) == 5
    assert (job / "report.html").is_file() and (job / "leaderboard" / "index.html").is_file()
    board = json.loads((job / "leaderboard" / "leaderboard.json").read_text())
    assert len(board["entries"]) == 4 and len(board["floors"]) == 1  # the mean floor is not ranked
    # The same numbers as with every package present.
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_icc_metric import predictions_to_mapping, read_predictions, read_references, score_predictions

    predictions = predictions_to_mapping(read_predictions(report["predictions"]))
    expected = json_safe(
        score_predictions(predictions, read_references(tmp_path / "build"), resampling=ResamplingOptions(n_bootstrap=0))
    )
    scored = json.loads((tmp_path / "scores.json").read_text())
    assert scored["dimensions"] == expected["dimensions"] and scored["overall"] == expected["overall"]
    assert round(report["icc"], 4) == 0.9751  # pingouin's ICC(C,1) on the four parsed pairs


def test_commands_that_need_the_train_extra_name_it(tmp_path, synthetic_build):
    body = """
import json
import runpy

from mis_bench_dataset.toolkit.errors import MissingExtraError

messages = {}
from eval_scripts.backends import get_backend

try:
    get_backend("transformers", "some/model")
except MissingExtraError as err:
    messages["backend"] = [err.line(), err.exit_code]
try:
    import raft_trainer  # noqa: F401
except MissingExtraError as err:
    messages["raft_trainer"] = [err.line(), err.exit_code]
code = main(["run", "--backend", "transformers", "--model", "some/model", "--dataset", sys.argv[3],
             "--out", "runs"])
messages["cli"] = code
messages["cli train"] = main(["train", "--model", "some/model", "--dataset", sys.argv[3]])
train_script = sys.argv[4]
sys.argv = [train_script, "--model", "some/model", "--dataset", sys.argv[3]]
try:
    runpy.run_path(train_script, run_name="__main__")
except SystemExit as exit:
    messages["train.py"] = exit.code
print(json.dumps(messages))
"""
    done = _run_without(
        ("torch",), body, str(synthetic_build), str(REPO_ROOT / "raft_trainer" / "train.py"), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    messages = json.loads(done.stdout.strip().splitlines()[-1])
    # Run from the checkout (an editable install or PYTHONPATH) in another folder: the extra from the checkout's path.
    hint = f'install it with: {TORCH_HINT}, then pip install -e "{REPO_ROOT}[train]"'
    backend_line, backend_code = messages["backend"]
    assert backend_line.startswith("the transformers backend needs the Python package 'torch'") and hint in backend_line
    assert backend_code == 2
    assert messages["raft_trainer"] == [
        f"raft_trainer (MIS-RAFT training and scoring) needs the 'train' extra; not installed: torch; {hint}",
        2,
    ]
    assert messages["cli"] == 2 and messages["train.py"] == 2 and messages["cli train"] == 2
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert errors == [
        f"mis-bench run: error: {backend_line}",
        f"mis-bench train: error: mis-bench train needs the 'train' extra; not installed: torch; {hint}",
        f"train.py: error: MIS-RAFT training (raft_trainer/train.py) needs the 'train' extra; not installed: torch; "
        f"{hint}",
    ]
    assert "Traceback" not in done.stderr


HINT_PROBE = """
from mis_bench_dataset.toolkit.errors import MissingExtraError
try:
    import raft_trainer  # noqa: F401
except MissingExtraError as err:
    print(err.hint)
"""


def test_the_install_hint_from_the_checkout_itself(tmp_path):
    done = _run_without(("torch",), HINT_PROBE, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == (f'install it with: {TORCH_HINT}, then pip install -e ".[train]"')


def test_the_install_hint_from_a_wheel_names_the_extra(tmp_path):
    """Installed from a wheel, the packages sit in site-packages with no setup.cfg beside them: the hint is the
    installed distribution's extra (`pip install` keeps the installed mis-bench and adds the extra's packages)."""
    import shutil

    site = tmp_path / "site-packages"
    for package in _setup_cfg()["options.packages.find"]["include"].split():
        name = package.rstrip("*")
        shutil.copytree(REPO_ROOT / name, site / name, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(site), "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", HIDE_PACKAGES + HINT_PROBE, "torch"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip().splitlines()[-1] == (
        f"install it with: {TORCH_HINT}, then pip install 'mis-bench[train]'"
    )


def test_the_torch_pin_of_the_hints_is_the_one_ci_and_the_readme_install():
    from mis_bench_dataset.toolkit.errors import TORCH_CPU_COMMAND, TORCH_CUDA_COMMAND, TORCH_PIN

    assert TORCH_PIN == "torch==2.13.0"
    for document in (REPO_ROOT / "scripts" / "check", REPO_ROOT / "README.md", REPO_ROOT / "docs" / "installation.md"):
        text = document.read_text(encoding="utf-8")
        pins = set(re.findall(r"torch==[\d.]+", text))
        assert pins == {TORCH_PIN}, document
        if document.suffix == ".md":  # the pages give both commands the hint names, as the hint writes them
            assert TORCH_CPU_COMMAND in text and TORCH_CUDA_COMMAND in text, document

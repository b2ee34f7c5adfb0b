"""Backends from outside: a throw-away distribution (a package and its `*.dist-info` with `entry_points.txt`)
in a temporary folder on PYTHONPATH names a backend class in the group `mis_bench.backends`; `mis-bench run
--backend echo` finds it and runs end to end, `--help` lists it without importing it, and an unknown or broken
name is one usage line naming the built-in and installed backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_scripts.backends import BACKEND_NAMES, backend_names, get_backend
from eval_scripts.cli import main
from eval_scripts.harness.response_cache import iter_records
from mis_bench_dataset.toolkit.errors import EXIT_USAGE, UsageError

from _run_args import run_args

REPO = Path(__file__).resolve().parents[1]
PLUGIN_SOURCE = '''"""The smallest backend there is: every answer is a fixed score."""

from eval_scripts.backends import Backend, Completion


class EchoBackend(Backend):
    name = "echo"

    def __init__(self, model, *, answer="4.0", **options):
        super().__init__(model)
        self.answer = answer
        self.seen = []

    def complete(self, prompts, decoding):
        for index, prompt in enumerate(prompts):
            self.seen.append(prompt.prompt_hash)
            usage = {"prompt_tokens": len(prompt.text.split()), "completion_tokens": 1, "total_tokens": 0}
            usage["total_tokens"] = usage["prompt_tokens"] + 1
            yield Completion(index, self.answer, True, finish_reason="stop", usage=usage)


class NotABackend:
    pass
'''
ENTRY_POINTS = """[mis_bench.backends]
echo = mb_echo_backend:EchoBackend
notabackend = mb_echo_backend:NotABackend
missing = mb_echo_backend_gone:Nothing
openai = mb_echo_backend:EchoBackend
"""


@pytest.fixture
def plugin_dir(tmp_path, monkeypatch) -> Path:
    """A folder holding `mb_echo_backend` and its distribution metadata, on sys.path for this test."""
    folder = tmp_path / "site"
    (folder / "mb_echo_backend").mkdir(parents=True)
    (folder / "mb_echo_backend" / "__init__.py").write_text(PLUGIN_SOURCE)
    info = folder / "mb_echo_backend-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mb-echo-backend\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    monkeypatch.syspath_prepend(str(folder))
    return folder


def _env(plugin_dir: Path) -> dict:
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin_dir), str(REPO)]), "HF_HUB_OFFLINE": "1"}


def test_installed_names_follow_the_built_in_ones_and_a_plugin_never_shadows_one(plugin_dir) -> None:
    assert backend_names() == (*BACKEND_NAMES, "echo", "missing", "notabackend")
    assert type(get_backend("openai", "m")).__name__ == "OpenAIBackend"  # the built-in, not the plugin
    echo = get_backend("echo", "m", answer="2.5", dtype="auto")
    assert type(echo).__name__ == "EchoBackend" and echo.answer == "2.5" and echo.name == "echo"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("tgi", "unknown backend 'tgi'"),
        ("missing", "cannot be loaded: ModuleNotFoundError"),
        ("notabackend", "is not a Backend class"),
    ],
)
def test_an_unknown_or_broken_backend_is_one_usage_line_naming_every_backend(
    plugin_dir, synthetic_build, tmp_path, capsys, name, message
) -> None:
    if name == "tgi":
        code = main(run_args(synthetic_build, None, backend=name, model="m", bootstrap=None, no_progress=False))
    else:
        with pytest.raises(UsageError, match=message):
            get_backend(name, "m")
        code = main(run_args(synthetic_build, tmp_path, backend=name, model="m", bootstrap=None, no_progress=False))
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == EXIT_USAGE and len(err) == 1 and "Traceback" not in err[0]
    assert err[0].startswith("mis-bench run: error:")
    if name == "tgi":  # argparse's refusal lists every name it accepts, built in and installed
        assert all(known in err[0] for known in ("transformers", "openai", "vllm", "echo", "notabackend"))
    else:
        assert message in err[0] and "mb-echo-backend 0.1" in err[0]


def test_help_lists_the_installed_backends_reading_only_metadata(plugin_dir) -> None:
    probe = (
        "import sys\n"
        "import eval_scripts.backends.base as base\n"
        "before = set(sys.modules)\n"
        "names = base.backend_names()\n"
        "heavy = ('numpy', 'pyarrow', 'torch', 'transformers', 'datasets', 'mb_echo_backend')\n"
        "print(names, sorted(m for m in set(sys.modules) - before if m.split('.')[0] in heavy))\n"
        "from eval_scripts.cli import main\n"
        "try:\n    main(['run', '--help'])\n"
        "except SystemExit:\n    pass\n"
        "print('mb_echo_backend' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], env=_env(plugin_dir), capture_output=True, text=True, timeout=120, check=True
    )
    lines = done.stdout.splitlines()
    # the names, and nothing heavy imported to find them (no plugin module either)
    assert lines[0] == "('transformers', 'openai', 'vllm', 'echo', 'missing', 'notabackend') []"
    help_text = " ".join(" ".join(lines[1:-1]).split())
    assert "installed: echo, missing, notabackend" in help_text
    assert lines[-1] == "False"  # --help imported no plugin


def test_mis_bench_run_with_an_installed_backend_end_to_end(plugin_dir, synthetic_build, tmp_path) -> None:
    out = tmp_path / "runs"
    command = run_args(synthetic_build, out, backend="echo", model="my-model", limit=1, as_json=True)
    done = subprocess.run(
        [sys.executable, "-m", "eval_scripts.cli", *command],
        env=_env(plugin_dir),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout)
    assert summary["rows"] == summary["parsed"] == summary["called"] == 8 and summary["failed"] == 0
    results = json.loads(Path(summary["results"]).read_text())
    assert results["system"]["backend"] == "echo" and results["system"]["model"] == "my-model"
    assert {p["prediction"] for p in results["predictions"]} == {4.0}
    records = list(iter_records(out / "responses.cache.jsonl"))
    assert len(records) == 8 and {r["response"] for r in records} == {"4.0"}

"""Backends from outside: a throw-away distribution (a package and its `*.dist-info` with `entry_points.txt`)
in a temporary folder on PYTHONPATH names a backend class in the group `mis_bench.backends`; `mis-bench run
--backend echo` finds it and runs end to end, `--help` lists it without importing it, and an unknown or broken
name is one usage line naming the built-in and installed backends. A plugin that declares options (`tuned`,
its `Options` dataclass) receives them typed through `-M KEY=VALUE`; a wrong key or value is one usage line
listing its keys; an answer-changing option keys the cache, the others share it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_scripts import backend_names, get_backend
from eval_scripts.backends import BACKEND_NAMES
from eval_scripts.cli import main
from eval_scripts.harness.response_cache import iter_records
from mis_bench_dataset.toolkit.errors import EXIT_USAGE, UsageError

from _run_args import run_args

REPO = Path(__file__).resolve().parents[1]
PLUGIN_SOURCE = '''"""The smallest backend there is: every answer is a fixed score."""

from dataclasses import dataclass, field
from typing import Literal

from eval_scripts.backends import Backend, Completion, backend_option


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


@dataclass(frozen=True)
class TunedOptions:
    answer: float = field(default=4.0, metadata=backend_option("the score of every answer", changes_answers=True))
    wording: Literal["plain", "sentence"] = field(
        default="plain", metadata=backend_option("how the score is written", changes_answers=True)
    )
    repeat: int | None = field(default=None, metadata=backend_option("a count that changes nothing"))
    verbose: bool = field(default=False, metadata=backend_option("log more (answers unchanged)"))


@dataclass(frozen=True)
class NoDefault:
    size: int


class BadOptionsBackend(Backend):
    Options = NoDefault

    def complete(self, prompts, decoding):
        yield from ()


class TunedBackend(Backend):
    """Declares options; keeps what it received so the test can look (names itself by its entry point)."""

    Options = TunedOptions
    received = []

    def __init__(self, model, options=None):
        super().__init__(model, options)
        TunedBackend.received.append(self.options)

    def complete(self, prompts, decoding):
        score = f"{self.options.answer:g}"
        text = score if self.options.wording == "plain" else f"The score is {score}."
        for index, _ in enumerate(prompts):
            yield Completion(index, text, True, finish_reason="stop")
'''
ENTRY_POINTS = """[mis_bench.backends]
echo = mb_echo_backend:EchoBackend
notabackend = mb_echo_backend:NotABackend
missing = mb_echo_backend_gone:Nothing
openai = mb_echo_backend:EchoBackend
tuned = mb_echo_backend:TunedBackend
badoptions = mb_echo_backend:BadOptionsBackend
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
    assert backend_names() == (*BACKEND_NAMES, "badoptions", "echo", "missing", "notabackend", "tuned")
    assert type(get_backend("openai", "m")).__name__ == "OpenAIBackend"  # the built-in, not the plugin
    echo = get_backend("echo", "m", answer="2.5", dtype="auto")
    assert type(echo).__name__ == "EchoBackend" and echo.answer == "2.5" and echo.name == "echo"


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("tgi", "unknown backend 'tgi'"),
        ("missing", "cannot be loaded: ModuleNotFoundError"),
        ("notabackend", "is not a Backend class"),
        ("badoptions", "declares options that cannot be read: NoDefault.size has no default"),
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
    assert lines[0] == "('transformers', 'openai', 'vllm', 'badoptions', 'echo', 'missing', 'notabackend', 'tuned') []"
    help_text = " ".join(" ".join(lines[1:-1]).split())
    assert "installed: badoptions, echo, missing, notabackend, tuned" in help_text
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


def _tuned_run(synthetic_build: Path, out: Path, *options: str, long: tuple[str, ...] = ()) -> dict:
    """`mis-bench run --backend tuned` in this process (the plugin on sys.path) with `-M` options (and `long`
    ones as `--backend-option`); its --json."""
    import contextlib
    import io

    command = run_args(
        synthetic_build,
        out,
        None,
        *[arg for option in options for arg in ("-M", option)],
        *[arg for option in long for arg in ("--backend-option", option)],
        backend="tuned",
        model="my-model",
        limit=1,
        as_json=True,
    )
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        assert main(command) == 0
    return json.loads(stdout.getvalue())


def test_a_plugin_receives_its_declared_options_typed_through_dash_m(plugin_dir, synthetic_build, tmp_path) -> None:
    import mb_echo_backend

    mb_echo_backend.TunedBackend.received.clear()
    options = ("answer=2.5", "wording=sentence", "repeat=3", "verbose=yes")
    summary = _tuned_run(synthetic_build, tmp_path / "runs", *options[:2], long=options[2:])
    (received,) = mb_echo_backend.TunedBackend.received
    assert type(received) is mb_echo_backend.TunedOptions
    assert (received.answer, received.wording, received.repeat, received.verbose) == (2.5, "sentence", 3, True)
    assert [type(value) for value in (received.answer, received.repeat, received.verbose)] == [float, int, bool]
    results = json.loads(Path(summary["results"]).read_text())
    # the options that change answers are recorded; `repeat` and `verbose` do not change answers
    assert results["system"]["backend_options"] == {"answer": 2.5, "wording": "sentence"}
    assert results["system"]["backend"] == "tuned" and summary["parsed"] == 8
    assert {p["prediction"] for p in results["predictions"]} == {2.5}
    assert Path(summary["results"]).parent.name == "text__direct__answer-2.5__wording-sentence"
    # `none` reads as None for an optional option
    mb_echo_backend.TunedBackend.received.clear()
    _tuned_run(synthetic_build, tmp_path / "runs", "repeat=none", "verbose=off")
    assert mb_echo_backend.TunedBackend.received[0].repeat is None


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("anwser=2.5", "the tuned backend has no option 'anwser' (-M anwser=2.5)"),
        ("answer=high", "option answer (float): 'high' is not a number (-M answer=high)"),
        ("wording=loud", "option wording (plain|sentence): 'loud' is not one of plain, sentence"),
        ("verbose=maybe", "option verbose (bool): 'maybe' is not true or false"),
        ("repeat=2.5", "option repeat (int or none): '2.5' is not an integer"),
        ("answer", "expected KEY=VALUE, got 'answer'"),
    ],
)
def test_a_wrong_key_or_value_is_one_usage_line_listing_the_valid_keys(
    plugin_dir, synthetic_build, tmp_path, capsys, option, message
) -> None:
    code = main(
        run_args(
            synthetic_build,
            tmp_path / "o",
            None,
            "-M",
            option,
            backend="tuned",
            model="m",
            bootstrap=None,
            no_progress=False,
        )
    )
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == EXIT_USAGE and len(err) == 1, err
    assert err[0].startswith("mis-bench run: error: ") and message in err[0]
    assert err[0].endswith(
        "; valid keys of the tuned backend: answer, wording, repeat, verbose (`mis-bench backends tuned` lists them)"
    )
    assert not (tmp_path / "o").exists()  # refused before anything was written


def test_only_options_that_change_answers_key_the_cache(plugin_dir, synthetic_build, tmp_path) -> None:
    """The same run with and without a non-answer-changing option (or an answer-changing one at its default)
    shares the cache: no request; an answer-changing option set away from its default does not."""
    out = tmp_path / "runs"
    first = _tuned_run(synthetic_build, out)
    assert first["called"] == 8 and first["cached"] == 0
    for options in (("verbose=true", "repeat=7"), ("answer=4",), ("wording=plain", "answer=4.0")):
        again = _tuned_run(synthetic_build, out, *options)
        assert (again["called"], again["cached"], again["results"]) == (0, 8, first["results"]), options
        assert "backend_options" not in json.loads(Path(again["results"]).read_text())["system"]
    changed = _tuned_run(synthetic_build, out, "answer=3")
    assert changed["called"] == 8 and changed["cached"] == 0 and changed["results"] != first["results"]
    records = list(iter_records(out / "responses.cache.jsonl"))
    assert len(records) == 16
    keyed = [r for r in records if "backend_options" in r["setting"]]
    assert len(keyed) == 8 and {r["setting"]["backend_options"]["answer"] for r in keyed} == {3.0}
    assert {r["response"] for r in keyed} == {"3"} and {r["key"] for r in keyed}.isdisjoint(
        r["key"] for r in records if r not in keyed
    )


def test_mis_bench_backends_lists_the_installed_ones_and_a_plugins_options(plugin_dir, capsys) -> None:
    assert main(["backends", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert [item["name"] for item in listed] == [
        *BACKEND_NAMES,
        "badoptions",
        "echo",
        "missing",
        "notabackend",
        "tuned",
    ]
    assert listed[-1]["origin"] == "installed: mb_echo_backend:TunedBackend from mb-echo-backend 0.1"
    assert main(["backends", "tuned", "--json"]) == 0
    options = json.loads(capsys.readouterr().out)["options"]
    assert [(o["name"], o["type"], o["default"], o["changes_answers"]) for o in options] == [
        ("answer", "float", 4.0, True),
        ("wording", "plain|sentence", "plain", True),
        ("repeat", "int or none", None, False),
        ("verbose", "bool", False, False),
    ]
    assert main(["backends", "tuned"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert text[1] == "  answer (float, default 4.0): the score of every answer [changes answers]"
    assert main(["backends", "echo"]) == 0  # a plugin without Options (called as before) has none to list
    assert capsys.readouterr().out.strip() == "the echo backend declares no options"


def test_run_help_after_a_backend_lists_its_options(plugin_dir, capsys) -> None:
    assert main(["run", "--backend", "tuned", "--help"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-5:] == [
        "options of the tuned backend (mis-bench run --backend tuned -M KEY=VALUE):",
        "  answer (float, default 4.0): the score of every answer [changes answers]",
        "  wording (plain|sentence, default plain): how the score is written [changes answers]",
        "  repeat (int or none, default none): a count that changes nothing",
        "  verbose (bool, default false): log more (answers unchanged)",
    ]
    assert main(["run", "--backend", "badoptions", "--help"]) == 0  # the help, then why the options cannot be listed
    assert "the badoptions backend's options cannot be listed: " in capsys.readouterr().out

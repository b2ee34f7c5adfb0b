"""Backend options belong to the backend: each built-in backend's `Options` dataclass is what `-M KEY=VALUE`
is typed against; the flags that existed before `-M` (`--dtype`, `--concurrency`, `--base-url`, ...) fill the
same options; the Python API reads a text as `-M` does; the answer-changing options set name the run folder and
validate in results.json. Values are compared with Python's own readers (`int`, `float`, `json.loads`) over
hypothesis' values."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts import RunConfig, backend_option, get_backend
from eval_scripts.backends.backend_options import answer_options, option_specs, typed_options
from eval_scripts.backends.openai_backend import OpenAIBackend, RetryPolicy
from eval_scripts.cli import build_parser
from eval_scripts.harness.config import backend_options
from mis_bench_dataset.toolkit.errors import UsageError

from _run_args import backend_keywords


@dataclass(frozen=True)
class Sample:
    count: int = field(default=1, metadata=backend_option("a count"))
    ratio: float = field(default=0.5, metadata=backend_option("a number", changes_answers=True))
    flag: bool = field(default=False, metadata=backend_option("a switch"))
    mode: Literal["a", "b"] = field(default="a", metadata=backend_option("a choice", changes_answers=True))
    limit: int | None = field(default=None, metadata=backend_option("a count or none"))
    kinds: tuple[str, ...] = field(default=("text",), metadata=backend_option("a comma list"))
    body: dict | None = field(default=None, metadata=backend_option("a JSON object", changes_answers=True))


def _typed(*pairs: str) -> dict:
    return typed_options(Sample, pairs, backend="sample")


@settings(max_examples=60, deadline=None)
@given(st.integers(-(10**12), 10**12), st.floats(allow_nan=False, allow_infinity=False), st.booleans())
def test_values_are_read_as_pythons_own_readers_read_them(count, ratio, flag) -> None:
    typed = _typed(f"count={count}", f"ratio={ratio!r}", f"flag={str(flag).lower()}", f"limit={count}")
    assert typed == {"count": int(str(count)), "ratio": float(repr(ratio)), "flag": flag, "limit": count}
    assert [type(v) for v in typed.values()] == [int, float, bool, int]


@settings(max_examples=40, deadline=None)
@given(st.dictionaries(st.text(max_size=5), st.integers() | st.text(max_size=5), max_size=4))
def test_a_json_object_is_read_as_json_loads_reads_it(body) -> None:
    text = json.dumps(body)
    assert _typed(f"body={text}") == {"body": json.loads(text)}


def test_choices_none_lists_and_hyphens() -> None:
    assert _typed("mode=b", "limit=none", "kinds=text, image", "body=null") == {
        "mode": "b",
        "limit": None,
        "kinds": ("text", "image"),
        "body": None,
    }
    assert _typed("kinds=a=b") == {"kinds": ("a=b",)}  # the first `=` splits the key from the value
    assert _typed("count=1", "count=2") == {"count": 2}  # the last given wins, as a repeated flag's
    specs = {spec.name: spec.type_text for spec in option_specs(Sample)}
    assert specs == {
        "count": "int",
        "ratio": "float",
        "flag": "bool",
        "mode": "a|b",
        "limit": "int or none",
        "kinds": "comma list of str",
        "body": "JSON object or none",
    }


@pytest.mark.parametrize(
    ("pair", "message"),
    [
        ("mode=c", "'c' is not one of a, b"),
        ("flag=2", "'2' is not true or false"),
        ("count=1.5", "'1.5' is not an integer"),
        ("body=[1]", "'[1]' is not a JSON object"),
        ("cnt=1", "the sample backend has no option 'cnt'"),
        ("=1", "expected KEY=VALUE"),
    ],
)
def test_a_wrong_value_or_key_names_it_and_lists_every_key(pair, message) -> None:
    with pytest.raises(UsageError) as raised:
        _typed(pair)
    assert message in raised.value.what
    assert raised.value.hint.startswith(
        "valid keys of the sample backend: count, ratio, flag, mode, limit, kinds, body"
    )


def test_answer_options_are_the_answer_changing_ones_set_away_from_their_defaults() -> None:
    assert answer_options(Sample()) == {}
    assert answer_options(Sample(count=9, flag=True, limit=3)) == {}  # none of these changes answers
    assert answer_options(Sample(ratio=0.5, mode="b", body={"x": 1})) == {"mode": "b", "body": {"x": 1}}
    assert answer_options(Sample(body={})) == {}  # an empty object sends nothing more: the default's keys


def test_two_runs_that_differ_by_an_object_option_have_two_labels_and_two_folders() -> None:
    """A JSON object is labelled by its hash (as its run folder is named), never dropped: the board and the reports
    tell the two runs apart."""
    from eval_scripts.formats.results import option_text, options_label

    low, high = {"extra_body": {"top_k": 1}}, {"extra_body": {"top_k": 50}}
    labels = [options_label({"backend_options": options}) for options in (low, high)]
    assert labels[0] != labels[1] and all(label[0].startswith("extra_body ") for label in labels)
    assert labels[0] == [f"extra_body {option_text({'top_k': 1})}"] and len(option_text({"top_k": 1})) == 8
    assert options_label({"backend_options": {"dtype": "float16"}}) == ["dtype float16"]


def _keywords(*argv: str) -> dict:
    """The keywords `mis-bench run --model m ARGV` builds its backend with (`_run_args.backend_keywords`)."""
    return backend_keywords(build_parser().parse_args(["run", "--model", "m", *argv]))


def test_the_flags_from_before_dash_m_fill_the_same_options() -> None:
    flags = _keywords("--backend", "transformers", "--dtype", "float16", "--device", "cpu", "--batch-size", "2")
    options = _keywords("--backend", "transformers", "-M", "dtype=float16", "-M", "device=cpu", "-M", "batch_size=2")
    assert flags == options and {k: flags[k] for k in ("dtype", "device", "batch_size")} == {
        "dtype": "float16",
        "device": "cpu",
        "batch_size": 2,
    }
    both = _keywords("--backend", "transformers", "--dtype", "float16", "-M", "dtype=float16")
    assert both == _keywords("--backend", "transformers", "--dtype", "float16")  # the same value twice: once
    with pytest.raises(UsageError, match="option dtype is given twice, 'float16' and 'bfloat16'"):
        _keywords("--backend", "transformers", "--dtype", "float16", "-M", "dtype=bfloat16")
    # the openai backend's flags: several servers, retries, a switch; a flag typed at its default fills it too
    http = _keywords(
        *("--backend", "openai", "--base-url", "http://a:1/v1", "--base-url", "http://b:2/v1,http://c:3/v1"),
        *("--concurrency", "3", "--max-retries", "0", "--strict-model", "--timeout", "120"),
    )
    assert http == {
        "base_url": "http://a:1/v1,http://b:2/v1,http://c:3/v1",
        "concurrency": 3,
        "max_retries": 0,
        "strict_model": True,
        "timeout": 120.0,
    }
    backend = get_backend("openai", "m", **http, **_keywords("--backend", "openai", "-M", "cooldown=0.5"))
    assert [e.base_url for e in backend.endpoints] == ["http://a:1/v1", "http://b:2/v1", "http://c:3/v1"]
    assert (backend.concurrency, backend.retry, backend.strict_model, backend.cooldown_s) == (
        3,
        RetryPolicy(max_retries=0),
        True,
        0.5,
    )
    assert _keywords("--backend", "vllm", "--backend-modalities", "text,image") == {"modalities": ("text", "image")}
    # another backend's flag is refused in one line, not ignored: typed is given, whatever its value (recorded at
    # parse time, `toolkit.given`)
    with pytest.raises(UsageError, match="--dtype is not an option of the openai backend"):
        _keywords("--backend", "openai", "--dtype", "float16")
    with pytest.raises(UsageError, match="--concurrency is not an option of the vllm backend"):
        _keywords("--backend", "vllm", "--concurrency", "3")
    with pytest.raises(UsageError, match="--dtype is not an option of the openai backend"):
        _keywords("--backend", "openai", "--dtype", "auto")
    # a flag typed at its default is a choice: -M giving the option another value is refused, not silently taken
    assert _keywords("--backend", "openai", "--concurrency", "8") == {"concurrency": 8}
    with pytest.raises(UsageError, match="option concurrency is given twice, 8 and 4"):
        _keywords("--backend", "openai", "--concurrency", "8", "-M", "concurrency=4")
    # a shared flag is read by the backend asked for: vllm's dtype is any text, transformers' one of four
    assert _keywords("--backend", "vllm", "--dtype", "fp8") == {"dtype": "fp8"}
    with pytest.raises(UsageError, match="bad value for the transformers backend's option dtype") as raised:
        _keywords("--backend", "transformers", "--dtype", "fp8")
    assert raised.value.where == "--dtype fp8"
    # a backend's flag without --backend is refused as -M is
    with pytest.raises(UsageError, match="--concurrency sets an option of the backend"):
        backend_keywords(build_parser().parse_args(["run", "--concurrency", "3"]))


@pytest.mark.parametrize("backend", ["openai", "transformers", "vllm"])
def test_each_flag_is_generated_from_the_options_that_name_it(backend) -> None:
    """Every `backend_option(flag=...)` of every built-in backend is a `run` flag (and `RunConfig` declares none of
    them: a backend's option is declared once, on its `Options`); its help says the option's default; a command
    line without such flags fills nothing (the backend's own defaults)."""
    from dataclasses import fields

    from eval_scripts.backends.base import backend_class

    run = build_parser()._subparsers._group_actions[0].choices["run"]
    actions = {flag: action for action in run._actions for flag in action.option_strings}
    specs = [spec for spec in option_specs(backend_class(backend).Options) if spec.flag]
    assert specs
    declared = {item.metadata.get("flag") or "--" + item.name.replace("_", "-") for item in fields(RunConfig)}
    options = {spec.name for spec in option_specs(backend_class(backend).Options)}
    assert not options & {item.name for item in fields(RunConfig)}  # no backend option re-declared by the harness
    for spec in specs:
        assert spec.flag in actions and spec.flag not in declared, spec.flag
        assert actions[spec.flag].default is None and spec.help in actions[spec.flag].help, spec.flag
        assert [action.dest for action in run._actions].count(actions[spec.flag].dest) == 1, spec.flag  # its own
        assert f"-M {spec.name}" in actions[spec.flag].help or f"/{spec.name}=" in actions[spec.flag].help, spec.flag
    assert {k: v for k, v in _keywords("--backend", backend).items() if k != "video_sampling"} == {}
    assert OpenAIBackend("m").retry == RetryPolicy()  # the openai options' defaults are the retry policy's


def test_the_python_api_reads_texts_as_dash_m_does_and_refuses_unknown_keywords() -> None:
    backend = get_backend("openai", "m", concurrency="4", extra_body='{"reasoning_effort": "low"}')
    assert backend.concurrency == 4 and backend.options.concurrency == 4
    assert backend.extra_body == {"reasoning_effort": "low"}
    assert answer_options(backend.options) == {"extra_body": {"reasoning_effort": "low"}}
    with pytest.raises(UsageError, match="the openai backend has no option 'dtype'") as raised:
        get_backend("openai", "m", dtype="float16")
    assert "valid keys of the openai backend: base_url, api_key_env, concurrency" in raised.value.hint
    with pytest.raises(UsageError, match="must be between 1 and 1,024"):
        get_backend("openai", "m", concurrency="0")
    assert backend_options(RunConfig(backend="openai", model="m", backend_options={"timeout": 5.0})) == {"timeout": 5.0}


def test_answer_changing_options_name_the_run_folder() -> None:
    from eval_scripts.harness.context import run_dir_name

    config = RunConfig(backend="transformers", model="org/m")
    assert run_dir_name(config, "text") == "org-m/text__direct"
    assert run_dir_name(config, "text", backend_options={"dtype": "float16"}) == "org-m/text__direct__dtype-float16"
    one = run_dir_name(config, "text", backend_options={"extra_body": {"reasoning_effort": "low"}})
    two = run_dir_name(config, "text", backend_options={"extra_body": {"reasoning_effort": "high"}})
    assert one != two and one.startswith("org-m/text__direct__extra_body-") and len(one) == len(two)


def test_results_with_backend_options_validate() -> None:
    from eval_scripts.formats.results import options_label
    from eval_scripts.formats.submission import SubmissionError, validate_results

    results = {
        "schema_version": "1.1",
        "system": {
            "model": "m",
            "backend": "transformers",
            "decoding": {},
            "package_versions": {},
            "backend_options": {"dtype": "float16"},
        },
        "setting": {"modality": "text", "prompt_style": "direct", "few_shot_k": 0, "input_source": "text"},
        "dataset": {"name": "d", "fingerprint": "f", "split": "test"},
        "predictions": [{"video_id": "AB0101_T1_Jessica", "dimension": "wau", "prediction": 3.0}],
        "scores": None,
        "parse_rates": {},
        "created_at": "2026-01-01T00:00:00Z",
    }
    validate_results(results)
    assert options_label(results["system"]) == ["dtype float16"]  # how reports tell the run from a float32 one
    results["system"]["backend_opts"] = {}
    with pytest.raises(SubmissionError, match="backend_opts"):
        validate_results(results)


def test_run_help_lists_the_backends_options_whichever_comes_first():
    """`run --help --backend B` (argparse runs the help before it reads `--backend`) lists B's options too."""
    import subprocess
    import sys

    for argv in (["--backend", "vllm", "--help"], ["--help", "--backend", "vllm"], ["--help", "--backend=vllm"]):
        done = subprocess.run(
            [sys.executable, "-m", "eval_scripts.cli", "run", *argv], capture_output=True, text=True, check=True
        )
        assert "gpu_memory_utilization (float, default 0.9)" in done.stdout, argv

"""The tests' one builder of `mis-bench run` / `mis-bench batch` argument lists (`_run_args`) says what the real
parser reads: each keyword its flag, None leaves the flag out (the parser's default), `extra` wins. And the tests
import their helpers one way, `from _x import` (the tests folder is on sys.path under pytest, `-n` included, from
any working directory; `tests.` is a package only when the checkout's root happens to be on sys.path)."""

from __future__ import annotations

import re
from pathlib import Path

from eval_scripts import RunConfig
from eval_scripts.cli import build_parser
from eval_scripts.cli.args import config_from_args

from _run_args import TEST_KEY_ENV, UNSET_KEY_ENV, backend_keywords, batch_args, run_args


def _config(args: list[str]) -> RunConfig:
    return config_from_args(RunConfig, build_parser().parse_args(args))


def test_each_keyword_is_its_flag_and_extra_comes_last(tmp_path):
    args = run_args(
        tmp_path, "runs", ["http://a/v1", "http://b/v1"], "--limit", "7", limit=2, retries=1, backoff_base=0.5,
        backoff_max=2, concurrency=3, api_key_env=TEST_KEY_ENV, flags=("--prompt", "cot"), as_json=True,
    )  # fmt: skip
    parsed = build_parser().parse_args(args)
    config = _config(args)
    assert (config.backend, config.model, config.dataset, config.out) == ("openai", "fake-model", str(tmp_path), "runs")
    assert (config.limit, config.n_bootstrap, config.prompt_style) == (7, 0, "cot")
    assert backend_keywords(parsed) == {  # the backend's flags fill its options (harness.config holds none)
        "base_url": "http://a/v1,http://b/v1",
        "api_key_env": TEST_KEY_ENV,
        "max_retries": 1,
        "backoff_base": 0.5,
        "backoff_max": 2.0,
        "concurrency": 3,
    }
    assert parsed.no_progress and parsed.json


def test_none_leaves_the_flag_to_the_parsers_default():
    bare = run_args(None, None, backend="transformers", model="m", bootstrap=None, no_progress=False)
    assert bare == ["run", "--backend", "transformers", "--model", "m"]
    default = RunConfig(backend="transformers", model="m")
    assert _config(bare).n_bootstrap == default.n_bootstrap and not build_parser().parse_args(bare).no_progress
    assert "--api-key-env" not in bare and run_args("b", "o")[run_args("b", "o").index("--api-key-env") + 1] == (
        UNSET_KEY_ENV
    )


def test_batch_args_name_the_files_and_take_the_run_flags(tmp_path):
    args = batch_args("import", ["out.jsonl", "errors.jsonl"], tmp_path, "runs", "http://a/v1", "--grid", limit=2)
    parsed = build_parser().parse_args(args)
    assert (parsed.command, parsed.action) == ("batch import", "import")
    assert [str(f) for f in parsed.files] == ["out.jsonl", "errors.jsonl"] and parsed.grid and parsed.limit == 2
    assert run_args(tmp_path, "runs", "http://a/v1", "--grid", limit=2)[1:] == args[4:]


def test_the_tests_import_their_helpers_one_way():
    pattern = re.compile(r"^\s*(from tests[.\s]|import tests\b)", re.M)
    found = [p.name for p in sorted(Path(__file__).parent.glob("*.py")) if pattern.search(p.read_text("utf-8"))]
    assert found == [], f"`from tests.x import` in {found}: write `from x import` (the tests folder is on sys.path)"

"""URLs are checked once, at the boundary: every malformed `--base-url` of `run` and `fetch` is a usage error
(exit 2) naming the URL and what is wrong before anything runs; a query string (Azure OpenAI's `?api-version=`)
reaches a real local server on every request; https spoken to a plain-HTTP server is one line saying so."""

from __future__ import annotations

import pytest

from eval_scripts.backends.openai_backend import OpenAIBackend
from eval_scripts.cli import main
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS, EXIT_USAGE, UsageError
from mis_bench_dataset.toolkit.urls import http_url, http_url_list

from _run_args import run_args

# (URL, what the error must say is wrong with it)
MALFORMED = [
    ("http://[::1:8000/v1", "an IPv6 address without its closing bracket"),
    ("http://::1:8000/v1", "an IPv6 address must be written in brackets"),
    ("http://[::1]x/v1", "'x' after the IPv6 address"),
    ("http://127.0.0.1:99999/v1", "the port 99999 is out of range (1-65535)"),
    ("http://127.0.0.1:0/v1", "the port 0 is out of range"),
    ("http://127.0.0.1:eighty/v1", "the port 'eighty' is not a number"),
    ("http://127.0.0.1:-1/v1", "the port '-1' is not a number"),
    ("127.0.0.1:8000/v1", "no scheme"),
    ("ftp://127.0.0.1/v1", "the scheme 'ftp' is not http or https"),
    ("http:///v1", "no host"),
    ("http://127.0.0.1/v1#part", "a fragment"),
    ("http://127.0.0.1 /v1", "whitespace"),
]


@pytest.mark.parametrize(("url", "problem"), MALFORMED)
def test_every_malformed_form_is_a_usage_error_naming_the_url_and_the_problem(url, problem) -> None:
    with pytest.raises(UsageError) as caught:
        http_url(url, where="--base-url")
    assert caught.value.exit_code == EXIT_USAGE
    assert repr(url.strip()) in caught.value.what and problem in caught.value.what
    with pytest.raises(UsageError, match="is not a usable URL"):  # the Python API checks as the CLI does
        OpenAIBackend("m", base_url=["http://127.0.0.1:8000/v1", url])


@pytest.mark.parametrize(("url", "problem"), MALFORMED[:8])
def test_run_refuses_a_malformed_base_url_before_anything_runs(synthetic_build, tmp_path, capsys, url, problem):
    out = tmp_path / "runs"
    args = run_args(synthetic_build, out, model="m", api_key_env=None, bootstrap=None, no_progress=False)
    code = main([*args, "--base-url", "http://127.0.0.1:8000/v1", "--base-url", f"http://127.0.0.1:8001/v1,{url}"])
    err = capsys.readouterr().err
    (line,) = err.splitlines()
    assert code == EXIT_USAGE and "Traceback" not in err and "internal error" not in err
    assert line.startswith("mis-bench run: error: argument --base-url: ") and repr(url) in line and problem in line
    assert not out.exists()  # nothing ran
    assert main([*args, "--base-url", url, "--dry-run"]) == EXIT_USAGE  # the modes that open no connection too


@pytest.mark.parametrize(("url", "problem"), MALFORMED[:8])
def test_fetch_refuses_a_malformed_base_url(tmp_path, capsys, url, problem) -> None:
    out = tmp_path / "authors"
    code = main(["fetch", "--out", str(out), "--base-url", url])
    (line,) = capsys.readouterr().err.splitlines()
    assert code == EXIT_USAGE and line.startswith("mis-bench fetch: error: ")
    assert repr(url) in line and problem in line and "--base-url" in line
    assert not out.exists()


def test_what_errors_show_of_a_url_hides_the_password_and_the_query_values() -> None:
    url = http_url("https://user:s3cret@[::1]:8443/openai/v1/?api-version=2024-06-01&sig=abc", where="--base-url")
    assert (url.scheme, url.host, url.port, url.path) == ("https", "::1", 8443, "/openai/v1")
    assert url.query == "api-version=2024-06-01&sig=abc"
    assert url.display == "https://[::1]:8443/openai/v1?api-version=...&sig=..."
    with pytest.raises(UsageError) as caught:
        http_url("http://user:s3cret@host:99999/v1", where="--base-url")
    assert "s3cret" not in str(caught.value) and "'http://...@host:99999/v1'" in str(caught.value)
    given = ["http://a/v1,http://b/v1/", "http://a/v1"]
    assert [u.url for u in http_url_list(given, where="--base-url")] == ["http://a/v1", "http://b/v1"]


def test_an_azure_style_query_string_reaches_the_server_on_every_request(
    synthetic_build, tmp_path, capsys, chat_server
):
    with chat_server() as first, chat_server() as second:
        urls = [f"{server.base_url}?api-version=2024-06-01" for server in (first, second)]
        args = run_args(synthetic_build, tmp_path / "runs", ",".join(urls), limit=2)
        assert main(args) == 0
    paths = first.paths + second.paths
    assert len(paths) == 16 and first.paths and second.paths
    assert set(paths) == {"/v1/chat/completions?api-version=2024-06-01"}
    capsys.readouterr()


def test_https_to_a_plain_http_server_is_one_line_saying_so(synthetic_build, tmp_path, capsys, chat_server) -> None:
    with chat_server() as server:
        url = server.base_url.replace("http://", "https://")
        code = main(run_args(synthetic_build, tmp_path / "runs", url, limit=1, api_key_env=None, bootstrap=None))
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == EXIT_REQUESTS and len(lines) == 1 and server.requests == 0
    assert "TLS error" in lines[0] and "a plain-HTTP server? then give the URL with http://" in lines[0]
    assert f"--base-url {url}" in lines[0]

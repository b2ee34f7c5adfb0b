"""The one builder of `mis-bench run` (and `mis-bench batch export|import`) argument lists for the tests.

A harness test names what its run is about (the server, the limit, the retries) and leaves the rest to
`run_args`; a file whose runs share more flags keeps them in one `functools.partial(run_args, ...)`, its own
flags in `flags=`. A keyword set to None (or False) leaves its flag out, so a test of a default passes nothing
for it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

UNSET_KEY_ENV = "MIS_BENCH_UNSET"  # an environment variable no test sets: requests go without a key
TEST_KEY_ENV = "MIS_BENCH_TEST_KEY"  # the one a test sets (monkeypatch.setenv) to see its key sent


def run_args(
    dataset: str | Path | None,
    out: str | Path | None,
    base_url: str | Sequence[str] | None = None,
    *extra: str,
    command: Sequence[str] = ("run",),
    backend: str = "openai",
    model: str = "fake-model",
    api_key_env: str | None = UNSET_KEY_ENV,
    limit: int | None = None,
    bootstrap: int | None = 0,
    no_progress: bool = True,
    as_json: bool = False,
    concurrency: int | None = None,
    retries: int | None = None,
    backoff_base: float | None = None,
    backoff_max: float | None = None,
    flags: Sequence[str] = (),
) -> list[str]:
    """`mis-bench COMMAND --backend B --model M [--base-url URL]... --dataset D --out O ...`, then `flags` (a
    file's own, e.g. `("--prompt", "paper")`), then `extra` (last, so a flag there wins over the same flag
    before it). `base_url`: one server or several (one flag each)."""
    urls = [base_url] if isinstance(base_url, str) else list(base_url or [])
    valued: dict[str, object] = {
        "--api-key-env": api_key_env if backend == "openai" else None,  # the HTTP backend's flag
        "--dataset": dataset,
        "--out": out,
        "--limit": limit,
        "--bootstrap": bootstrap,
        "--concurrency": concurrency,
        "--max-retries": retries,
        "--backoff-base": backoff_base,
        "--backoff-max": backoff_max,
    }
    args = [*command, "--backend", backend, "--model", model]
    args += [arg for url in urls for arg in ("--base-url", url)]
    args += [arg for flag, value in valued.items() if value is not None for arg in (flag, str(value))]
    args += ["--no-progress"] * no_progress + ["--json"] * as_json
    return [*args, *flags, *extra]


def batch_args(action: str, files: str | Path | Sequence[str | Path], *args, **flags) -> list[str]:
    """`mis-bench batch export FILE` / `batch import FILE...` with the run's flags (`run_args`' arguments)."""
    files = [files] if isinstance(files, (str, Path)) else list(files)
    return run_args(*args, command=("batch", action, *map(str, files)), **flags)


def backend_keywords(args) -> dict:
    """The keywords parsed `run` flags build the backend with: the flags and `-M`, typed, checked and merged as the
    command does (`run_flags.given_backend_options`, then `harness.config.backend_options`)."""
    from eval_scripts import RunConfig
    from eval_scripts.cli.args import config_from_args
    from eval_scripts.cli.run_flags import given_backend_options
    from eval_scripts.harness.config import backend_options

    return backend_options(config_from_args(RunConfig, args, backend_options=given_backend_options(args)))


def frame_rule(args) -> object:
    """The raw-video frame rule parsed `run` flags ask for (`harness.config.video_sampling`)."""
    from eval_scripts import RunConfig
    from eval_scripts.cli.args import config_from_args
    from eval_scripts.harness.config import video_sampling

    return video_sampling(config_from_args(RunConfig, args))

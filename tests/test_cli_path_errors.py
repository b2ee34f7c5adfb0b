"""Every operating-system error at an input or output path of `run`, `build` and `stats` is one line on stderr
naming the path and what to do, never a traceback: no permission (as a real unprivileged user), a file where a
folder is expected, a folder where a file is expected, a name too long, a symbolic-link loop, an I/O error (the
one case simulated: no real way to make a disk fail). `eval_scripts.cli.main` is the one place that prints it
(`mis_bench_dataset.toolkit.errors.os_error_line`); argument checks put it under the flag (exit 2)."""

from __future__ import annotations

import errno
import io
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

from eval_scripts.cli import main

NOBODY = 65534
LONG = "n" * 300  # over NAME_MAX (255 bytes)
TODO = {  # what the line tells the user to do, per error
    "permission": "give your user access to it",
    "not a folder": "is a file, not a folder",
    "not a file": "is a folder, not a file",
    "too long": "use a shorter path",
    "loop": "fix or remove the link",
    "io": "check the device, then rerun",
}


@pytest.fixture(scope="module")
def area(synthetic_build) -> Path:
    """A folder every user can reach (pytest's own tmp folders are private to root), holding a readable copy of
    the synthetic build and its release, a file, a symlink loop, and folders no one but root may read or write."""
    root = Path(tempfile.mkdtemp(prefix="mis-bench-paths-"))
    root.chmod(0o755)
    shutil.copytree(synthetic_build, root / "build")
    shutil.copytree(synthetic_build.parent / "release", root / "release")
    (root / "a_file").write_text("not a folder\n", encoding="utf-8")
    (root / "loop_a").symlink_to(root / "loop_b")
    (root / "loop_b").symlink_to(root / "loop_a")
    (root / "locked").mkdir()
    shutil.copytree(synthetic_build, root / "locked" / "build")
    (root / "read_only").mkdir()
    for path in [root, *root.rglob("*")]:
        if not path.is_symlink():
            path.chmod(0o755 if path.is_dir() else 0o644)
    (root / "locked").chmod(0o000)
    (root / "read_only").chmod(0o555)
    yield root
    (root / "locked").chmod(0o755)
    shutil.rmtree(root, ignore_errors=True)


def _run(argv: list[str], capsys) -> tuple[int, str]:
    code = main(argv)
    return code, capsys.readouterr().err


def _as_nobody(argv: list[str]) -> tuple[int, str]:
    """`mis-bench ARGV` in a forked child that has become user nobody (setgid/setuid): the kernel, not a fake,
    refuses the access. The interpreter and the modules the command needs are loaded first, by root."""
    import eval_scripts.backends.openai_backend  # noqa: F401 - loaded while the interpreter's files are readable
    import eval_scripts.harness.runner  # noqa: F401
    import eval_scripts.jobs.default_job  # noqa: F401
    import mis_bench_dataset.builder.builder  # noqa: F401
    import mis_bench_dataset.builder.stats  # noqa: F401
    import mis_bench_dataset.release.fetch  # noqa: F401 - (urllib: imported by the default job's sample check)

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 99
        try:
            os.close(read)
            os.dup2(write, 2)
            os.dup2(write, 1)
            sys.stdout, sys.stderr = (io.TextIOWrapper(io.FileIO(fd, "w", closefd=False)) for fd in (1, 2))
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            code = main(argv)
        except BaseException as err:  # noqa: BLE001 - reported to the parent, which fails the test
            print(f"UNCAUGHT {type(err).__name__}: {err}", file=sys.stderr)
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 65536):
        chunks.append(chunk)
    os.close(read)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), b"".join(chunks).decode()


def _one_line(code: int, err: str, exit_code: int, command: str, path: str, todo: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("mis-bench")]
    assert code == exit_code, err
    assert "Traceback" not in err and "UNCAUGHT" not in err, err
    assert len(lines) == 1 and lines[0].startswith(f"mis-bench {command}: error: "), err
    assert path in lines[0] and todo in lines[0], lines[0]


needs_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to become nobody")

# (command, argv with {a} = the area, exit code, the path the line names, what to do)
UNREADABLE = [
    ("run", "run --dataset {a}/locked/build --out {a}/read_only/x", 2, "{a}/locked/build", "permission"),
    ("stats", "stats {a}/locked/build --out {a}/read_only/x", 2, "{a}/locked/build", "permission"),
    ("build", "build {a}/locked/build --out {a}/read_only/x", 2, "{a}/locked/build", "permission"),
    (
        "run",
        "run --backend openai --model m --dataset {a}/build --limit 1 --out {a}/read_only/run --no-progress "
        "--base-url http://127.0.0.1:9/v1 --max-retries 0",
        1,
        "{a}/read_only",
        "permission",
    ),
    ("stats", "stats {a}/build --out {a}/read_only/stats", 1, "{a}/read_only/stats", "permission"),
    ("build", "build {a}/release --out {a}/read_only/build", 1, "{a}/read_only", "permission"),
]


@needs_root
@pytest.mark.parametrize(("command", "argv", "exit_code", "path", "todo"), UNREADABLE, ids=[c[1] for c in UNREADABLE])
def test_no_permission_as_an_unprivileged_user(area, command, argv, exit_code, path, todo):
    code, err = _as_nobody(argv.format(a=area).split())
    _one_line(code, err, exit_code, command, path.format(a=area), TODO[todo])


CASES = [
    # a file where a folder is expected (the input; the output)
    ("run", "run --dataset {a}/a_file --out {a}/o", 2, "{a}/a_file", "not a folder"),
    ("stats", "stats {a}/a_file --out {a}/o", 2, "{a}/a_file", "not a folder"),
    ("build", "build {a}/a_file --out {a}/o", 2, "{a}/a_file", "not a folder"),
    ("stats", "stats {a}/build --out {a}/a_file", 2, "{a}/a_file", "not a folder"),
    ("build", "build {a}/release --out {a}/a_file", 2, "{a}/a_file", "not a folder"),
    ("run", "run --dataset {a}/build --out {a}/a_file", 2, "{a}/a_file", "not a folder"),
    # a folder where a file is expected
    (
        "run",
        "run --backend openai --model m --dataset {a}/build --cache {a}/build --out {a}/o",
        2,
        "{a}/build",
        "not a file",
    ),
    ("stats", "stats {a}/build --labels {a}/build --out {a}/o", 2, "{a}/build", "not a file"),
    ("build", "build {a}/release --labels {a}/release --out {a}/o", 2, "{a}/release", "not a file"),
    # a name too long (the input; the output)
    ("run", "run --dataset {a}/" + LONG + " --out {a}/o", 2, LONG, "too long"),
    ("stats", "stats {a}/" + LONG + " --out {a}/o", 2, LONG, "too long"),
    ("build", "build {a}/" + LONG + " --out {a}/o", 2, LONG, "too long"),
    ("stats", "stats {a}/build --out {a}/" + LONG, 1, LONG, "too long"),
    ("build", "build {a}/release --out {a}/" + LONG, 1, LONG, "too long"),
    ("run", "run --dataset {a}/build --out {a}/" + LONG, 1, LONG, "too long"),
    # a symbolic-link loop (the input; the output)
    ("run", "run --dataset {a}/loop_a --out {a}/o", 2, "{a}/loop_a", "loop"),
    ("stats", "stats {a}/loop_a --out {a}/o", 2, "{a}/loop_a", "loop"),
    ("build", "build {a}/loop_a --out {a}/o", 2, "{a}/loop_a", "loop"),
    ("stats", "stats {a}/build --out {a}/loop_a/x", 1, "{a}/loop_a/x", "loop"),
    ("build", "build {a}/release --out {a}/loop_a/x", 1, "{a}/loop_a/x", "loop"),
    ("run", "run --dataset {a}/build --out {a}/loop_a/x", 1, "{a}/loop_a/x", "loop"),
]


@pytest.mark.parametrize(("command", "argv", "exit_code", "path", "todo"), CASES, ids=[c[1][:60] for c in CASES])
def test_each_path_error_is_one_line_naming_the_path(area, tmp_path, capsys, command, argv, exit_code, path, todo):
    code, err = _run(argv.format(a=area).replace("{a}/o", str(tmp_path / "o")).split(), capsys)
    _one_line(code, err, exit_code, command, path.format(a=area), TODO[todo])


@pytest.fixture
def failing_disk(monkeypatch, area):
    """Reading any file under the area's `build` or `release` fails with EIO, as a dying disk would: the one
    fake here (Python's open() and pyarrow's file reader raise the OSError the kernel would)."""
    import pyarrow.parquet as pq

    real_open = io.open
    bad = (str(area / "build"), str(area / "release"))

    def open_failing(file, *args, **kwargs):
        if isinstance(file, (str, os.PathLike)) and str(file).startswith(bad):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(file))
        return real_open(file, *args, **kwargs)

    real_parquet = pq.ParquetFile.__init__

    def parquet_failing(self, source, *args, **kwargs):
        if isinstance(source, (str, os.PathLike)) and str(source).startswith(bad):
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(source))
        real_parquet(self, source, *args, **kwargs)

    monkeypatch.setattr(pq.ParquetFile, "__init__", parquet_failing)
    monkeypatch.setattr(io, "open", open_failing)
    monkeypatch.setattr("builtins.open", open_failing)


@pytest.mark.parametrize(
    ("command", "argv"),
    [
        ("run", "run --dataset {a}/build --out {o}"),
        ("stats", "stats {a}/build --out {o}"),
        ("build", "build {a}/release --labels {a}/release/ratings.csv --out {o}"),
    ],
)
def test_an_io_error_is_one_line_naming_the_file(area, tmp_path, capsys, failing_disk, command, argv):
    code, err = _run(argv.format(a=area, o=tmp_path / "out").split(), capsys)
    _one_line(code, err, 1, command, str(area), TODO["io"])

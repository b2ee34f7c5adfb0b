"""The one writer (`mis_bench_dataset.toolkit.atomic`): whole files or none, groups together, full disks named,
no temporary left behind on a failure, Ctrl-C or SIGTERM, UTF-8 whatever the locale, and no library
module that writes a file any other way."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from mis_bench_dataset.toolkit.atomic import (
    AtomicFiles,
    NoSpaceError,
    create_new,
    file_lock,
    remove_stale_staging,
    staging_folder,
    temporary_name,
    write_atomic,
)
from mis_bench_dataset.toolkit.errors import Terminated

from _fault_helpers import fake_full_disk, fill_disk, snapshot
from _run_args import TEST_KEY_ENV, run_args

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("mis_bench_dataset", "eval_scripts", "mis_icc_metric", "raft_trainer")


def _temporaries(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.name.endswith(".tmp") or ".tmp" in p.name]


# ----------------------------------------------------------------------------- whole files, groups


def test_a_group_appears_together_or_not_at_all(tmp_path, monkeypatch) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text("old a")
    second.write_text("old b")
    fake_full_disk(monkeypatch, budget_bytes=len("new a"))  # the first file fits, the second does not
    with pytest.raises(NoSpaceError) as info, AtomicFiles() as files:
        files.write(first, "new a")
        files.write(second, "new b, longer")
    monkeypatch.undo()
    assert first.read_text() == "old a" and second.read_text() == "old b"
    assert _temporaries(tmp_path) == []
    message = info.value.line()
    assert str(second) in message and "needs 13 bytes" in message and "bytes are free" in message


@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated, RuntimeError])
def test_an_interruption_inside_a_group_removes_every_temporary(stop, tmp_path) -> None:
    target = tmp_path / "results.json"
    target.write_text("earlier")
    with pytest.raises(stop), AtomicFiles() as files:
        files.write(target, "half of the new run")
        files.write(tmp_path / "other.json", "x")
        raise stop()
    assert target.read_text() == "earlier" and not (tmp_path / "other.json").exists()
    assert _temporaries(tmp_path) == []


def test_temporaries_are_unique_and_concurrent_writers_never_share_one(tmp_path) -> None:
    target = tmp_path / "results.json"
    assert temporary_name(target) != temporary_name(target)
    assert temporary_name(target).parent == tmp_path  # same folder: the rename stays on one file system
    errors = []

    def writer(n: int) -> None:
        try:
            for i in range(50):
                write_atomic(target, json.dumps({"writer": n, "i": i, "pad": "x" * 5000}))
        except Exception as err:  # noqa: BLE001 - collected for the assertion
            errors.append(err)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert json.loads(target.read_text())["i"] == 49  # whole: always one writer's complete text
    assert _temporaries(tmp_path) == []


def test_text_is_utf8_and_surrogate_escapes_become_their_text(tmp_path) -> None:
    path = tmp_path / "x.md"
    write_atomic(path, "r\udcc3\udca9p and a lone \ud800 and é")
    assert path.read_bytes().decode("utf-8") == "rép and a lone \\ud800 and é"


def test_create_new_never_replaces(tmp_path) -> None:
    path = tmp_path / "cache.jsonl"
    assert create_new(path, "first\n") is True
    assert create_new(path, "second\n") is False
    assert path.read_text() == "first\n" and _temporaries(tmp_path) == []


def test_a_real_full_disk_names_the_file_and_keeps_the_earlier_one(tiny_disk) -> None:
    disk = tiny_disk(256)
    target = disk / "report.json"
    write_atomic(target, "earlier report\n")
    fill_disk(disk, leave_bytes=1024)
    with pytest.raises(NoSpaceError, match=r"report\.json: it needs 200,000 bytes"):
        write_atomic(target, "x" * 200_000)
    assert target.read_text() == "earlier report\n" and _temporaries(disk) == []


def test_a_full_disk_during_a_build_leaves_the_earlier_build_and_no_staging(tiny_disk, tmp_path) -> None:
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    release = generate_synthetic_release(tmp_path / "release", n_videos=60, seed=4, compress=False).release_dir
    small = generate_synthetic_release(tmp_path / "small", n_videos=3, seed=4).release_dir
    disk = tiny_disk(4096)
    out = disk / "built"
    build_dataset(small, out, progress=False)
    before = snapshot(out)
    with pytest.raises(NoSpaceError) as info:
        build_dataset(release, out, progress=False)
    assert "built" in info.value.line() and "bytes" in info.value.line()
    assert snapshot(out) == before
    assert [p.name for p in disk.iterdir()] == ["built"]  # no staging folder, no lock file


# ----------------------------------------------------------------------------- staging folders and locks


def test_staging_left_by_a_dead_writer_goes_and_a_live_ones_stays(tmp_path) -> None:
    dead = tmp_path / ".built.building-999999999-deadbeef"  # no such process
    dead.mkdir()
    (dead / "part.parquet").write_bytes(b"half")
    with staging_folder(tmp_path, ".built.building-") as live:
        (live / "x").write_text("being written")
        assert not dead.exists()
        assert remove_stale_staging(tmp_path, ".built.building-") == []  # its lock is held: kept
        assert live.is_dir()
    assert not live.exists() and list(tmp_path.iterdir()) == []


def test_a_file_lock_makes_a_second_holder_wait(tmp_path) -> None:
    lock = tmp_path / ".generate.lock"
    script = (
        "import sys, time\n"
        "from mis_bench_dataset.toolkit.atomic import file_lock\n"
        f"with file_lock({str(lock)!r}):\n"
        "    print('got it', flush=True)\n"
    )
    with file_lock(lock):
        waiter = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, cwd=REPO)
        with pytest.raises(subprocess.TimeoutExpired):
            waiter.wait(timeout=2)  # blocked while this process holds the lock
    out, _ = waiter.communicate(timeout=30)
    assert out.strip() == "got it"


def test_a_held_lock_refuses_a_second_holder_and_is_freed_from_any_thread(tmp_path) -> None:
    """`try_lock` never waits: None while another holder has the lock (another open of it, as a second run's),
    and the holder's release frees it whichever thread calls it (a cache opened and closed by different threads)."""
    import threading

    from mis_bench_dataset.toolkit.atomic import try_lock

    held = try_lock(tmp_path / "x.lock")
    assert held is not None and try_lock(tmp_path / "x.lock") is None
    releaser = threading.Thread(target=held.release)
    releaser.start()
    releaser.join()
    again = try_lock(tmp_path / "x.lock")
    assert again is not None
    again.release()


# ----------------------------------------------------------------------------- every writer is the one writer


# (module, call) pairs that write a file without the atomic writer, each for a reason.
ALLOWED_WRITES = {
    ("mis_bench_dataset/toolkit/atomic.py", "*"),  # the writer itself
    (
        "eval_scripts/harness/response_cache.py",
        "open",
    ),  # the append-only cache: one flushed line per record, proven first
    ("mis_bench_dataset/builder/parquet_shards.py", "rename"),  # shards inside the build's staging folder
    ("mis_bench_dataset/builder/parquet_shards.py", "ParquetWriter"),
    ("mis_bench_dataset/builder/builder.py", "rename"),  # the staging folder swapped in whole
    ("mis_bench_dataset/synth/sample.py", "rename"),  # the release staging folder renamed into place, under the lock
    ("mis_bench_dataset/synth/generator.py", "rename"),  # `synth`'s staging folder renamed into place when complete
    ("mis_bench_dataset/synth/generator.py", "savez"),  # into an in-memory buffer, then the writer
    ("mis_bench_dataset/synth/generator.py", "savez_compressed"),
    ("eval_scripts/answers/feature_plots.py", "savefig"),  # into an in-memory buffer (a prompt's image)
    ("raft_trainer/tiny.py", "save_pretrained"),  # into a scratch folder, then the writer
    ("mis_bench_dataset/toolkit/atomic.py", "savefig"),
}
WRITING_CALLS = {"write_text", "write_bytes", "savefig", "rename", "savez", "savez_compressed", "to_csv"}
WRITING_CALLS |= {"to_parquet", "dump", "ParquetWriter", "save_to_disk", "save_pretrained"}
SHUTIL_COPIES = {"copyfile", "copy", "copy2", "copytree", "move"}


def _writes(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        on_os = isinstance(func, ast.Attribute) and _is_os(func.value)
        if name in WRITING_CALLS or (on_os and name in ("replace", *SHUTIL_COPIES)):
            found.append((node.lineno, name))
        elif name == "open" and not (isinstance(func, ast.Attribute) and _is_group(func.value)):
            # open(path, mode) / os.open(path, flags), or path.open(mode): a Path method takes the mode first.
            position = slice(0, 1) if isinstance(func, ast.Attribute) and not _is_os(func.value) else slice(1, 2)
            modes = [a for a in node.args[position] if isinstance(a, ast.Constant)] + [
                k.value for k in node.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)
            ]
            if any(set(str(m.value)) & set("wax+") for m in modes):
                found.append((node.lineno, name))
    return found


def _is_os(node: ast.AST) -> bool:
    return isinstance(node, ast.Name) and node.id in ("os", "shutil")


def _is_group(node: ast.AST) -> bool:
    """`files.open(...)` / `group.open(...)`: the atomic writer's own handle."""
    return isinstance(node, ast.Name) and node.id in ("files", "group")


def test_no_library_module_writes_a_file_but_through_the_one_writer() -> None:
    offenders = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            for line, call in _writes(path):
                if (rel, "*") not in ALLOWED_WRITES and (rel, call) not in ALLOWED_WRITES:
                    offenders.append(f"{rel}:{line} {call}(...)")
    assert offenders == [], "write through mis_bench_dataset.toolkit.atomic instead:\n" + "\n".join(offenders)


# ----------------------------------------------------------------------------- the C locale


def _c_locale() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG", "PYTHONIOENCODING"))}
    return {**env, "LC_ALL": "C", "PYTHONUTF8": "0"}


NEXT_COMMAND = "--next-command--"
RUN_EACH = f"""
import json, sys
from eval_scripts.cli import main
commands, command = [], []
for word in sys.argv[1:]:
    if word == {NEXT_COMMAND!r}:
        commands.append(command)
        command = []
    else:
        command.append(word)
print(json.dumps([main(command) for command in commands]))
"""


@pytest.mark.slow
def test_every_command_writes_utf8_under_the_c_locale(synthetic_build, tmp_path) -> None:
    from mis_bench_dataset import BuiltDataset
    from mis_icc_metric import read_references

    from _leaderboard_helpers import make_results

    root = tmp_path / "wörk"
    root.mkdir()
    results = make_results(read_references(synthetic_build, split="test"), model="org/modèle-ü")
    results["dataset"]["fingerprint"] = BuiltDataset.of(synthetic_build).fingerprint("test")
    (root / "results.json").write_text(json.dumps(results), encoding="utf-8")
    ascii_build = tmp_path / "build"  # pyarrow and datasets cannot open a non-ASCII path under LC_ALL=C
    commands = [
        ["synth", str(root / "rélease"), "--videos", "4"],
        ["build", str(root / "rélease"), "--labels", str(root / "rélease" / "ratings.csv"), "--out", str(ascii_build)],
        ["stats", str(ascii_build), "--out", str(root / "stâts")],
        ["submit", str(root / "results.json"), "--out", str(root / "sübs")],
        ["leaderboard", str(root / "sübs"), "--references", str(synthetic_build), "--bootstrap", "100"]
        + ["--out", str(root / "bœard")],
        ["report", str(root / "results.json"), "--references", str(synthetic_build), "--bootstrap", "100"]
        + ["--comparison-bootstrap", "100", "--out", str(root / "répört")],
    ]
    # One interpreter started under the C locale runs the six commands one after the other, as `mis-bench` would
    # (its argv decoded by that locale, each command its own `main(argv)` call): one start instead of six.
    argv = [word for command in commands for word in (*command, NEXT_COMMAND)]
    done = subprocess.run(
        [sys.executable, "-c", RUN_EACH, *argv], cwd=REPO, env=_c_locale(), capture_output=True, timeout=600
    )
    assert done.returncode == 0, done.stderr.decode("utf-8", "replace")[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [0] * len(commands), done.stderr.decode("utf-8", "replace")
    assert b"Traceback" not in done.stderr
    board = json.loads((root / "bœard" / "leaderboard.json").read_text(encoding="utf-8"))
    assert [e["model"] for e in board["entries"]] == ["org/modèle-ü"]
    written = [p for p in [*root.rglob("*"), *ascii_build.rglob("*")] if p.suffix in (".json", ".md", ".html", ".csv")]
    assert len(written) > 10
    for path in written:
        text = path.read_bytes().decode("utf-8")  # every text file is UTF-8
        assert "\\udc" not in text, path


def test_a_path_pyarrow_cannot_open_under_the_c_locale_is_one_clear_line(synthetic_build, tmp_path) -> None:
    release = synthetic_build.parent / "release"
    done = subprocess.run(
        [sys.executable, "-m", "eval_scripts.cli", "build", str(release), "--out", str(tmp_path / "bùild")],
        cwd=REPO,
        env=_c_locale(),
        capture_output=True,
        timeout=300,
    )
    err = done.stderr.decode("ascii")  # the terminal's encoding: whatever it cannot show is escaped
    assert done.returncode == 2 and "Traceback" not in err and "internal error" not in err
    (line,) = [line for line in err.splitlines() if line.startswith("mis-bench")]
    assert "b\\xf9ild" in line and "UTF-8 locale" in line


def test_sigterm_during_a_run_exits_143_in_one_line_and_the_next_run_resumes(
    synthetic_build, tmp_path, chat_server
) -> None:
    import signal
    import time

    from eval_scripts.harness.response_cache import iter_records

    out = tmp_path / "out"
    cache = out / "responses.cache.jsonl"
    with chat_server(delay_s=0.2) as server:
        run = run_args(
            synthetic_build, out, server.base_url, model="m", limit=3, concurrency=2, api_key_env=TEST_KEY_ENV
        )
        command = [sys.executable, "-m", "eval_scripts.cli", *run]
        victim = subprocess.Popen(command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while not (cache.is_file() and cache.read_bytes().count(b"\n") >= 4):
            assert victim.poll() is None and time.monotonic() < deadline, victim.communicate()[1][-2000:]
            time.sleep(0.01)
        victim.send_signal(signal.SIGTERM)
        _, err = victim.communicate(timeout=60)
        assert victim.returncode == 143, err[-2000:]
        lines = [line for line in err.splitlines() if line.startswith("mis-bench")]
        assert len(lines) == 1 and "terminated (SIGTERM)" in lines[0] and "Traceback" not in err
        assert _temporaries(out) == []
        answered = sum(r["status"] == "ok" for r in iter_records(cache))
        resumed = subprocess.run([*command, "--json"], cwd=REPO, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert json.loads(resumed.stdout)["cached"] == answered

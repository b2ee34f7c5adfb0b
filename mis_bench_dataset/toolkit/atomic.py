"""The one writer of every file the toolkit writes: whole or not at all, UTF-8, never a stray temporary.

Every output (predictions, raw responses, results, reports, figures, statistics, leaderboards,
submissions, batch files, merged caches, build reports and cards) goes through `AtomicFiles`:

- each file is written in full to a temporary file beside its target, with a unique name
  (`.NAME.PID-RANDOM.tmp`), flushed to the disk (`fsync`) and only then renamed onto the target,
  so a reader sees the old file or the new one, never half of one;
- files written together (a run's predictions, raw responses and results) are renamed only once
  every one of them is complete, so a failure never leaves a folder mixing two runs;
- on any failure, Ctrl-C, or SIGTERM (the CLI turns it into `Terminated`, like Ctrl-C) the
  temporaries are removed and the targets are untouched;
- a full disk raises `NoSpaceError`, which names the file and the bytes it needed and had;
- text is written as UTF-8 whatever the locale; a path decoded under a non-UTF-8 locale
  (its undecodable bytes held as surrogate escapes) is written as the text its bytes spell.

Contents are assembled in memory and written in one go (the toolkit's outputs are small next to
memory; Parquet shards are written into a staging folder instead: `staging_folder`). A build's
staging folder carries a lock held while it is written, so the next build can tell a folder left
by a killed build (removed) from one still being written (kept). Every lock of the toolkit is taken
here (`try_lock`, `file_lock`), on `filelock`.

Whoever must know when a file is in place (the ownership manifest, which records a claimed file only
once it exists with its content) registers with `on_publish`: every target is announced right after
its rename, never before.
"""

from __future__ import annotations

import contextlib
import errno
import io
import logging
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from filelock import FileLock, Timeout

from mis_bench_dataset.toolkit.errors import DataError
from mis_bench_dataset.toolkit.text_safety import unicode_text

logger = logging.getLogger(__name__)

_NO_SPACE = frozenset({errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)})


class NoSpaceError(DataError):
    """The disk (or quota) is full: names the file and how many bytes it needed (exit 1)."""


def is_no_space(err: BaseException) -> bool:
    """Whether an error is a full disk or quota (also pyarrow's, which may carry only the message)."""
    return isinstance(err, OSError) and (
        err.errno in _NO_SPACE or "No space left on device" in str(err) or "Disk quota exceeded" in str(err)
    )


def no_space_error(path: str | Path, needed: int | None = None, done: int | None = None) -> NoSpaceError:
    """The one message of a full disk: which file, how much it needed, how much is free."""
    path = Path(path)
    try:
        free = f"{shutil.disk_usage(path.parent if path.parent.exists() else Path('.')).free:,} bytes are free"
    except OSError:
        free = "the free space is unknown"
    if needed is not None:
        size = f"it needs {needed:,} bytes"
    elif done is not None:
        size = f"it had written {done:,} bytes"
    else:
        size = "its size is unknown"
    return NoSpaceError(
        f"no space left on the device for {unicode_text(str(path))}: {size}, {free}",
        hint="free some space (or choose another output folder) and rerun; earlier outputs are unchanged",
    )


_LISTENERS: list[Callable[[list[Path]], None]] = []


def on_publish(listener: Callable[[list[Path]], None]) -> None:
    """Call `listener(targets)` after each group of files is renamed into place (the ownership manifest
    records its claims there, so a file is recorded only once it exists with the content written)."""
    if listener not in _LISTENERS:
        _LISTENERS.append(listener)


def _announce(targets: Iterable[Path]) -> None:
    targets = list(targets)
    if targets:
        for listener in list(_LISTENERS):
            listener(targets)


def make_folders(folder: Path) -> list[Path]:
    """Create `folder` and its missing parents; returns those it made, outermost first."""
    missing = []
    for candidate in (folder, *folder.parents):
        if candidate.is_dir():
            break
        missing.append(candidate)
    missing.reverse()
    for made in missing:
        made.mkdir(exist_ok=True)
    return missing


def remove_empty_folders(folders: list[Path]) -> None:
    """Remove the folders `make_folders` made (innermost first), those still empty: a failed write leaves none."""
    for folder in reversed(folders):
        with contextlib.suppress(OSError):
            folder.rmdir()


def temporary_name(target: Path) -> Path:
    """A unique temporary path beside `target` (same folder, so the final rename stays on one file system)."""
    return target.with_name(f".{target.name}.{os.getpid()}-{uuid.uuid4().hex[:12]}.tmp")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_folder(folder: Path) -> None:
    """Make a rename durable (POSIX); file systems that cannot fsync a folder are left as they are."""
    with contextlib.suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _encode(data: str | bytes) -> bytes:
    return unicode_text(data).encode("utf-8") if isinstance(data, str) else bytes(data)


def _write_new(path: Path, data: bytes, *, target: Path, sync: bool = True) -> None:
    """Create `path` (exclusive), write `data`, fsync; a full disk becomes NoSpaceError naming `target`."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        _write_all(fd, data)
        if sync:
            os.fsync(fd)
    except OSError as err:
        if is_no_space(err):
            raise no_space_error(target, needed=len(data)) from err
        raise
    finally:
        os.close(fd)


def sync_file(path: str | Path) -> None:
    """Flush a file written by another library (pyarrow) to the disk before it is published."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def publish_file(finished: str | Path, target: str | Path) -> Path:
    """Put a file written elsewhere (a verified download) in place in one rename: synced first, so a reader sees
    the old file or the whole new one, never a part; the rename made durable."""
    finished, target = Path(finished), Path(target)
    sync_file(finished)
    os.replace(finished, target)
    _fsync_folder(target.parent)
    _announce([target])
    return target


class AtomicFiles:
    """Files published together: `with AtomicFiles() as files: files.write(path, data) ...`.

    Nothing reaches a target until the block ends without an error; then every temporary is
    renamed onto its target. On an error (any exception, Ctrl-C, SIGTERM) every temporary is removed.
    """

    def __init__(self, *, durable: bool = True) -> None:
        self.durable = durable  # False: no fsync (bulk files whose folder is published or regenerated whole)
        self._pending: list[tuple[Path, Path]] = []  # (temporary, target)
        self._created: list[Path] = []  # folders made for the targets, removed again if the group fails

    def __enter__(self) -> AtomicFiles:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.commit()
        else:
            self.discard()

    def write(self, target: str | Path, data: str | bytes) -> Path:
        """Stage `data` (text as UTF-8) for `target`; returns the target."""
        target = Path(target)
        self._created += make_folders(target.parent)  # a claim only checks its path; the write makes its folders
        tmp = temporary_name(target)
        self._pending.append((tmp, target))
        _write_new(tmp, _encode(data), target=target, sync=self.durable)
        return target

    @contextlib.contextmanager
    def open(self, target: str | Path, mode: str = "w", *, newline: str | None = None) -> Iterator:
        """A file-like object for `target` ("w": text, UTF-8; "wb": bytes), staged when the block ends."""
        if mode not in ("w", "wb"):
            raise ValueError(f"mode must be 'w' or 'wb', got {mode!r}")
        buffer: io.StringIO | io.BytesIO = io.StringIO(newline=newline) if mode == "w" else io.BytesIO()
        yield buffer
        self.write(target, buffer.getvalue())

    def save_figure(self, figure, target: str | Path, **savefig) -> Path:
        """Stage a matplotlib figure (rendered in memory in the target's format, then written like any file)."""
        target = Path(target)
        buffer = io.BytesIO()
        figure.savefig(buffer, format=savefig.pop("format", target.suffix.lstrip(".") or "png"), **savefig)
        return self.write(target, buffer.getvalue())

    def read(self, target: str | Path) -> bytes:
        """What `target` holds once this group is committed: its staged bytes, else the file as it is."""
        target = Path(target)
        staged = [tmp for tmp, staged_target in self._pending if staged_target == target]
        return (staged[-1] if staged else target).read_bytes()

    def commit(self) -> None:
        """Rename every staged file onto its target (all are complete and on the disk already)."""
        pending, self._pending = self._pending, []
        try:
            for tmp, target in pending:
                os.replace(tmp, target)
            self._created = []
        except BaseException:
            for tmp, _ in pending:
                with contextlib.suppress(OSError):
                    tmp.unlink()
            raise
        if self.durable:
            for folder in {target.parent for _, target in pending}:
                _fsync_folder(folder)
        _announce(target for _, target in pending)

    def discard(self) -> None:
        pending, self._pending = self._pending, []
        for tmp, _ in pending:
            with contextlib.suppress(OSError):
                tmp.unlink()
        created, self._created = self._created, []
        remove_empty_folders(created)


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write one file atomically (text as UTF-8): readers never see half a file."""
    with AtomicFiles() as files:
        return files.write(path, data)


@contextlib.contextmanager
def atomic_open(path: str | Path, mode: str = "w", *, newline: str | None = None) -> Iterator:
    """`with atomic_open(path) as handle:` one file written atomically (see `AtomicFiles.open`)."""
    with AtomicFiles() as files, files.open(path, mode, newline=newline) as handle:
        yield handle


def save_figure(figure, path: str | Path, **savefig) -> Path:
    """Save a matplotlib figure atomically (never a truncated PNG on the target)."""
    with AtomicFiles() as files:
        return files.save_figure(figure, path, **savefig)


def create_new(path: str | Path, data: str | bytes) -> bool:
    """Publish `path` with `data` only if it does not exist (never replacing anything); False when it did.

    The data is written and synced under a temporary name, then hard-linked onto `path` (which fails
    if `path` exists, whoever made it); where hard links are not supported the file is created
    exclusively and written in place.
    """
    path = Path(path)
    data = _encode(data)
    created = make_folders(path.parent)
    tmp = temporary_name(path)
    done = False
    try:
        _write_new(tmp, data, target=path)
        try:
            os.link(tmp, path)
        except FileExistsError:
            return False
        except OSError as err:  # no hard links here (some network and FAT file systems)
            if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
                raise
            try:
                _write_new(path, data, target=path)
            except FileExistsError:
                return False
        _fsync_folder(path.parent)
        done = True
        _announce([path])
        return True
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if not done:
            remove_empty_folders(created)


# ----------------------------------------------------------------------------- locks and staging folders


def try_lock(path: str | Path) -> FileLock | None:
    """Take the exclusive lock on `path` (created if missing) without waiting: the held lock, or None when
    another holder has it. The caller releases it (`lock.release()`). Built on `filelock` (`flock` on POSIX)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = FileLock(path, thread_local=False)  # held by its holder, whichever thread releases it
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock


@contextlib.contextmanager
def file_lock(path: str | Path, *, waiting: str | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) for the block, waiting for another holder.

    `waiting` is logged when another process holds it. The one lock of the toolkit (`filelock`).
    """
    lock = try_lock(path)
    if lock is None:
        if waiting:
            logger.info("%s", waiting)
        lock = FileLock(Path(path), thread_local=False)
        lock.acquire()
    try:
        yield
    finally:
        lock.release()


def remove_stale_staging(parent: Path, prefix: str) -> list[Path]:
    """Remove `parent/{prefix}*` folders whose writer is gone (their lock file is free); returns them.

    A folder whose lock another process holds is being written and is left alone; one without
    a lock file (made before locks existed, or by a writer killed before taking it) is removed
    only when its writer's process id is no longer running here.
    """
    removed = []
    if not parent.is_dir():
        return removed
    for folder in sorted(parent.glob(f"{prefix}*")):
        if not folder.is_dir() or folder.is_symlink():
            continue
        lock = folder.with_name(folder.name + ".lock")
        if lock.is_file():
            probe = try_lock(lock)
            stale = probe is not None
            if probe is not None:
                probe.release()
        else:
            stale = not _process_alive(_pid_of(folder.name))
        if stale:
            shutil.rmtree(folder, ignore_errors=True)
            lock.unlink(missing_ok=True)
            removed.append(folder)
            logger.info("removed %s, left by an interrupted writer", folder)
    return removed


def _pid_of(name: str) -> int | None:
    for part in name.replace(".", "-").split("-"):
        if part.isdigit():
            return int(part)
    return None


def _process_alive(pid: int | None) -> bool:
    if pid is None:
        return False
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by someone else
        return True
    return True


@contextlib.contextmanager
def staging_folder(parent: str | Path, prefix: str) -> Iterator[Path]:
    """A fresh hidden folder `parent/{prefix}PID-RANDOM`, locked while the block runs, removed if it fails.

    Leftovers of interrupted writers with the same prefix are removed first. The block moves the
    folder into place on success (a rename); whatever is still there afterwards is removed.
    """
    parent = Path(parent)
    parent.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(parent, prefix)
    folder = parent / f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:8]}"
    lock = folder.with_name(folder.name + ".lock")
    held = try_lock(lock)  # a fresh name: no other holder
    try:
        folder.mkdir()
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        lock.unlink(missing_ok=True)
        if held is not None:
            held.release()

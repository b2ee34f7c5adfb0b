"""Output ownership: a command replaces only files it wrote itself, never its inputs.

Every folder a command writes into holds a small hidden manifest (`.mis-bench-outputs.json`)
mapping each file the toolkit wrote there to the writer that wrote it (`report`, `scores`,
`build`, ...). Before writing a file a command *claims* it:

- a path that is one of the command's inputs is refused (`score --json PREDICTIONS`);
- an existing file is replaced only when the manifest says the same writer wrote it; a file
  the user put there, or one another writer made, is named in the error and left alone;
- a path of the wrong kind (a folder where a file goes, a file where a folder goes) is refused.

Claim early, record on success: a claim only CHECKS (before any work, so a bad `--out` fails fast) and
notes the file as pending. The manifest records it once the file exists with its content: the toolkit's
atomic writer (`toolkit.atomic`) announces every file it renames into place, and a pending claim is
recorded then. So a command that fails before writing leaves no claim, and a user's file written later
at that path is never taken for the toolkit's. The one way to write an output:

    target = folder.claim("results.json", WRITER)     # early: refuses inputs, user files, wrong kinds
    ...                                               # read, validate, compute
    write_atomic(target, text)                        # last: written whole, then recorded

or, for files written together, `folder.publish(WRITER, {"a.json": text, "b.csv": text})`. A new response
cache is recorded when its header is created (`atomic.create_new` announces it too); a file written by another
library is recorded with `folder.record(...)` once it exists. A run killed half-way leaves the files it
finished recorded, so it can be rerun. Every read-modify-write of the manifest holds an exclusive lock on
`.mis-bench-outputs.lock` (`toolkit.atomic.file_lock`), so two runs writing one folder at once never drop each
other's records. A build replaces its whole folder atomically, so it checks every file in the old folder
(`check_replaceable_folder`). Only `remove_owned` and `remove_stale` (a rerun's files it no longer writes)
delete anything, and only files the manifest records as that writer's.
"""

from __future__ import annotations

import errno
import fnmatch
import json
import os
import threading
import weakref
from collections.abc import Iterable, Mapping
from pathlib import Path

from mis_bench_dataset.toolkit.atomic import AtomicFiles, file_lock, on_publish, write_atomic
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.text_safety import unicode_text

MANIFEST_NAME = ".mis-bench-outputs.json"
LOCK_NAME = ".mis-bench-outputs.lock"  # held while the manifest is read, changed and written back
_MAX_NAMED = 5


def resolve_path(path: str | Path) -> Path:
    """The absolute path with its links followed; a link loop is the OSError it is (ELOOP, naming the path),
    not Python's RuntimeError, so the CLI says it in one line like every other path problem."""
    try:
        return Path(path).expanduser().resolve()
    except RuntimeError as err:  # Python < 3.13: "Symlink loop from ..."
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from err


_resolve = resolve_path


def _is_within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def read_manifest(folder: str | Path) -> dict[str, str]:
    """relative POSIX path -> writer, for the files the toolkit wrote in `folder` ({} when none)."""
    try:
        data = json.loads((Path(folder) / MANIFEST_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = data.get("files") if isinstance(data, dict) else None
    return {str(k): str(v) for k, v in files.items()} if isinstance(files, dict) else {}


def write_manifest(folder: str | Path, files: dict[str, str]) -> None:
    payload = {"written_by": "mis-bench", "files": dict(sorted(files.items()))}
    write_atomic(Path(folder) / MANIFEST_NAME, json.dumps(payload, indent=1, ensure_ascii=False) + "\n")


def update_manifest(folder: str | Path, add: dict[str, str] | None = None, remove: Iterable[str] = ()) -> dict:
    """Record `add` and drop `remove` in `folder`'s manifest under its lock (the records of a concurrent run
    are read inside the lock, so none is lost); returns the manifest as written."""
    folder = Path(folder)
    with file_lock(folder / LOCK_NAME, waiting=f"waiting for another mis-bench run writing {folder}"):
        dropped = set(remove)
        files = {k: v for k, v in read_manifest(folder).items() if k not in dropped}
        files.update(add or {})
        write_manifest(folder, files)
    return files


def _named(paths: Iterable[str]) -> str:
    paths = sorted(paths)
    more = f" and {len(paths) - _MAX_NAMED} more" if len(paths) > _MAX_NAMED else ""
    return ", ".join(paths[:_MAX_NAMED]) + more


def check_arrow_path(path: str | Path, *, where: str) -> None:
    """Refuse a path that pyarrow and `datasets` cannot open: they encode paths as UTF-8, so a name this
    locale could not decode (LC_ALL=C and a non-ASCII name: surrogate escapes) fails inside them."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(
            f"the path {unicode_text(text)} holds characters this locale cannot decode, and the Parquet "
            "libraries (pyarrow, datasets) cannot open it",
            where=where,
            hint="run with a UTF-8 locale (LC_ALL=C.UTF-8) or PYTHONUTF8=1, or use an ASCII path",
        ) from None


def check_folder_path(folder: str | Path, *, command: str, arg: str = "--out") -> None:
    """Refuse an output folder path that is a file or lies below a file (a usage error naming `arg`)."""
    folder = Path(folder).expanduser()
    blocking = next((p for p in (folder, *folder.parents) if p.exists() and not p.is_dir()), None)
    if blocking is not None:
        what = "is a file" if blocking == folder else f"lies inside {blocking}, a file"
        raise UsageError(
            f"{arg} {folder} {what}, not a folder",
            where=f"mis-bench {command}",
            hint="give the path of a folder (it is created when missing)",
        )


class _Pending:
    """Claims checked but not yet written: absolute target -> (folder root, relative path, writer, the folder, the
    claiming thread)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.claims: dict[str, tuple[Path, str, str, weakref.ref | None, int]] = {}

    def add(self, folder: OutputFolder, rel: str, writer: str) -> None:
        entry = (folder.root, rel, writer, weakref.ref(folder), threading.get_ident())
        with self.lock:
            self.claims[_key(folder.root / rel)] = entry

    def take(self, targets: Iterable[Path]) -> list[tuple[Path, str, str, weakref.ref | None, int]]:
        with self.lock:
            return [hit for hit in (self.claims.pop(_key(t), None) for t in targets) if hit is not None]

    def clear(self, thread: int | None = None) -> None:
        with self.lock:
            self.claims = {k: v for k, v in self.claims.items() if thread is not None and v[4] != thread}


_PENDING = _Pending()


def _key(path: str | Path) -> str:
    return os.path.abspath(os.fspath(path))


def _on_published(targets: list[Path]) -> None:
    """The atomic writer put `targets` in place: record the pending claims among them, one update per folder."""
    groups: dict[tuple[Path, str], list[tuple[str, weakref.ref | None]]] = {}
    for root, rel, writer, ref, _ in _PENDING.take(targets):
        groups.setdefault((root, writer), []).append((rel, ref))
    for (root, writer), entries in groups.items():
        files = update_manifest(root, dict.fromkeys((rel for rel, _ in entries), writer))
        for _, ref in entries:
            folder = ref() if ref is not None else None
            if folder is not None:
                folder._owned = files


on_publish(_on_published)


def drop_pending_claims(*, this_thread: bool = True) -> None:
    """Forget the claims this thread made and never wrote (the CLI calls it when a command ends, so a failed
    command's claim cannot be recorded by a later write in the same process; a server's threads keep theirs);
    `this_thread=False` forgets every thread's."""
    _PENDING.clear(threading.get_ident() if this_thread else None)


class OutputFolder:
    """A folder a command writes into: each file is claimed (checked) before the work, recorded once written."""

    def __init__(
        self, root: str | Path, *, command: str, arg: str = "--out", inputs: Iterable[str | Path] = ()
    ) -> None:
        self.root = Path(root).expanduser()
        self.command = command
        self.arg = arg
        check_folder_path(self.root, command=command, arg=arg)
        self._inputs = {_resolve(p) for p in inputs}
        self._owned = read_manifest(self.root) if self.root.is_dir() else {}

    def claim(self, relpath: str | Path, writer: str) -> Path:
        """The absolute path to write `relpath` to, after checking it may be (re)written by `writer`."""
        return self.claim_all([relpath], writer)[0]

    def claim_all(self, relpaths: Iterable[str | Path], writer: str) -> list[Path]:
        """Check several files at once (all before any is noted) and return their paths.

        Nothing is recorded or created here: each file is recorded when the atomic writer puts it in place
        (or by `record`), so a command that fails first leaves the folder and its manifest as they were.
        """
        rels = [Path(relpath).as_posix() for relpath in relpaths]
        targets = [self._check(rel, writer) for rel in rels]
        for rel in rels:
            if self._owned.get(rel) != writer:
                _PENDING.add(self, rel, writer)
        return targets

    def record(self, relpaths: Iterable[str | Path], writer: str) -> list[str]:
        """Record files `writer` wrote by other means than the atomic writer (appended, written by another
        library) - only those that exist; returns the relative paths recorded."""
        rels = [Path(relpath).as_posix() for relpath in relpaths]
        _PENDING.take(self.root / rel for rel in rels)
        present = [rel for rel in rels if (self.root / rel).exists() and self._owned.get(rel) != writer]
        if present:
            self._owned = update_manifest(self.root, dict.fromkeys(present, writer))
        return present

    def publish(self, writer: str, contents: Mapping[str | Path, str | bytes]) -> list[Path]:
        """Claim every file, write them atomically together (all or none), then record them: the one call for
        outputs whose content is ready."""
        targets = self.claim_all(list(contents), writer)
        with AtomicFiles() as files:
            for target, data in zip(targets, contents.values(), strict=True):
                files.write(target, data)
        return targets

    def _check(self, rel: str, writer: str) -> Path:
        target = self.root / rel
        resolved = _resolve(target)
        if resolved in self._inputs:
            raise UsageError(
                f"{self.arg} {target} would overwrite the input {resolved}",
                where=f"mis-bench {self.command}",
                hint=f"choose another {self.arg}",
            )
        if target.is_dir():
            raise DataError(
                f"{target} is a folder where mis-bench {self.command} writes its {writer} file",
                where=self.arg,
                hint=f"move it away or choose another {self.arg}",
            )
        for parent in target.relative_to(self.root).parents:
            if parent != Path(".") and (self.root / parent).exists() and not (self.root / parent).is_dir():
                raise DataError(
                    f"{self.root / parent} is a file where mis-bench {self.command} needs a folder",
                    where=self.arg,
                    hint=f"move it away or choose another {self.arg}",
                )
        if (target.exists() or target.is_symlink()) and self._owned.get(rel) != writer:
            raise DataError(
                f"{target} exists and was not written by mis-bench {self.command}",
                where=self.arg,
                hint=f"move it away or choose another {self.arg}; nothing was changed",
            )
        return target

    def remove_stale(self, writer: str, patterns: Iterable[str], keep: Iterable[str | Path]) -> list[str]:
        """After a rerun: remove the files `writer` wrote here earlier that match a pattern (`fnmatch`, on the
        relative path; escape user text with `glob.escape`) but are not in `keep` (this run's files), so a rerun
        that writes fewer files leaves none of the earlier ones beside the new. Only files the manifest records as
        `writer`'s are touched; returns the relative paths removed."""
        keep_rels = {self._rel(path) for path in keep}
        patterns = list(patterns)
        owned = read_manifest(self.root) if self.root.is_dir() else {}
        stale = sorted(
            rel
            for rel, by in owned.items()
            if by == writer and rel not in keep_rels and any(fnmatch.fnmatchcase(rel, pattern) for pattern in patterns)
        )
        for rel in stale:
            (self.root / rel).unlink(missing_ok=True)
        if stale:
            self._owned = update_manifest(self.root, remove=stale)
        return stale

    def _rel(self, path: str | Path) -> str:
        """`path` relative to the folder (a path already relative is taken as relative to it)."""
        try:
            return Path(os.path.abspath(path)).relative_to(os.path.abspath(self.root)).as_posix()
        except ValueError:
            return Path(path).as_posix()

    def owned(self, relpath: str | Path, writer: str) -> bool:
        return self._owned.get(Path(relpath).as_posix()) == writer

    def remove_owned(self, relpath: str | Path, writer: str) -> bool:
        """Delete a file only if `writer` wrote it (the manifest says so); True when removed."""
        rel = Path(relpath).as_posix()
        if not self.owned(rel, writer):
            return False
        (self.root / rel).unlink(missing_ok=True)
        self._owned = update_manifest(self.root, remove=[rel])
        return True


def as_output_folder(out: str | Path | OutputFolder, command: str, inputs: Iterable[str | Path] = ()) -> OutputFolder:
    """`out` as an OutputFolder (a path given by a library caller becomes one for `command`)."""
    return out if isinstance(out, OutputFolder) else OutputFolder(out, command=command, inputs=inputs)


def claim_file(path: str | Path, *, command: str, writer: str, arg: str, inputs: Iterable[str | Path] = ()) -> Path:
    """Claim one output file given on the command line (`score --json FILE`)."""
    path = Path(path).expanduser()
    if path.is_dir():
        raise UsageError(
            f"{arg} {path} is a folder", where=f"mis-bench {command}", hint="give the path of a file to write"
        )
    return OutputFolder(path.parent, command=command, arg=arg, inputs=inputs).claim(path.name, writer)


def check_not_overlapping(out: str | Path, sources: Iterable[str | Path], *, command: str, arg: str = "--out") -> None:
    """Refuse an output folder that is, contains or lies inside one of the command's source folders or files."""
    out_resolved = _resolve(out)
    for source in sources:
        source_resolved = _resolve(source)
        if _is_within(source_resolved, out_resolved) or _is_within(out_resolved, source_resolved):
            raise UsageError(
                f"{arg} {out} overlaps the input {source}",
                where=f"mis-bench {command}",
                hint=f"choose an {arg} folder outside the input (and not containing it)",
            )


def foreign_files(folder: str | Path, writer: str) -> list[str]:
    """Files in `folder` (recursively) that the manifest does not record as `writer`'s."""
    folder = Path(folder)
    manifest = read_manifest(folder)
    foreign = []
    for path in sorted(folder.rglob("*")):
        if path.is_dir() and not path.is_symlink():
            continue
        rel = path.relative_to(folder).as_posix()
        if rel in (MANIFEST_NAME, LOCK_NAME):
            continue
        if manifest.get(rel) != writer:
            foreign.append(rel)
    return foreign


def check_replaceable_folder(folder: str | Path, writer: str, *, command: str, arg: str = "--out") -> None:
    """Refuse to replace a folder holding anything `writer` did not write (the files are named)."""
    folder = Path(folder)
    check_folder_path(folder, command=command, arg=arg)
    if not folder.is_dir():
        return
    foreign = foreign_files(folder, writer)
    if foreign:
        raise DataError(
            f"{arg} {folder} holds {len(foreign)} file(s) mis-bench {command} did not write: {_named(foreign)}",
            where=arg,
            hint="move them away or choose another folder; nothing was changed",
        )

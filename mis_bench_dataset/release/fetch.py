"""`mis-bench fetch`: the authors' public files downloaded at their pinned commits, each published only once
its SHA-256 equals the provenance table's (`release.provenance`), so what a reproduction or a card stands on
is exactly what the authors committed, without a clone of their repository.

- Each file is requested as `{base}/{commit}/{path}` (GitHub's raw file host for calistalu/MIS-Bench, or
  a mirror in that layout: `MIS_BENCH_AUTHORS_URL` / `--base-url`), with timeouts, over HTTPS with
  certificate checks (urllib of the standard library).
- Bytes go to `OUT/.fetch-partial/NAME.part`, never where a command reads. A connection cut mid-file is
  resumed at once with an HTTP Range request (`RETRIES` times), and by the next run after that; a server
  that ignores the range sends the whole file, which then starts over.
- A finished file is renamed to `OUT/NAME` only when its hash is the table's; another hash removes it and
  is refused (exit 1, both hashes on the line). A file already at `OUT/NAME` with the table's hash is kept
  and not requested; one with another hash is the user's: refused before anything is downloaded, never replaced.
- Exit codes (docs/reproducing.md): a host that cannot be reached
  at all (refused, unknown, connect timeout) is exit 1 with the `git show` commands that write the files
  from a clone; a refused request (HTTP 4xx: a wrong `--base-url`) is exit 2; requests that still fail after
  their retries (cut connections, 5xx) are exit 3, the partial file kept for the next run to resume.
  A failure after a redirect names the URL it failed at (`_Redirects`), not the host that redirected.

Why not `pooch` (1.9, read for issue 38): its HTTP downloader always starts a file from byte 0 and deletes the
temporary file of a failed try, so a cut download is never resumed (no Range request, nothing kept for the next
run); its retries cover a hash mismatch too (the file is fetched again instead of refused once) and an unreachable
host (waits instead of failing at once with the `git show` commands); it does not know a file's size, so it cannot
refuse a body that grows past it; it publishes with `shutil.move` without an fsync; it needs `requests`, and draws
its own tqdm bar. Pauses between tries here are the toolkit's one backoff (`toolkit.backoff`).
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import os
import socket
import ssl
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from mis_bench_dataset.release.provenance import (
    AUTHORS_REPOSITORY,
    FEATURE_SAMPLES,
    PUBLIC_FILES,
    PublicFile,
    sha256_of,
)
from mis_bench_dataset.toolkit.atomic import file_lock, publish_file
from mis_bench_dataset.toolkit.backoff import backoff_delay
from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS, DataError, MisBenchError, UsageError
from mis_bench_dataset.toolkit.urls import http_url

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://raw.githubusercontent.com/calistalu/MIS-Bench"
BASE_URL_ENV = "MIS_BENCH_AUTHORS_URL"
AUTHORS_FOLDER = "authors"  # the default --out, inside the toolkit's cache folder
PARTIAL_FOLDER = ".fetch-partial"
LOCK_NAME = ".fetch.lock"
DEFAULT_TIMEOUT_S = 30.0  # per connect and per read
RETRIES = 3  # resumes of one file within a run, after a cut connection or a server error
PAUSE_BASE_S, PAUSE_MAX_S = 0.25, 2.0  # the pause before asking again after no progress (doubling, capped)
_CHUNK = 1 << 16
_REFUSED_STATUSES = frozenset({400, 401, 403, 404, 410, 451})


class FetchRequestsError(MisBenchError):
    """Requests that still failed after their retries (a cut connection, a server error); exit 3, rerun resumes."""

    exit_code = EXIT_REQUESTS


class AuthorsUnreachableError(DataError):
    """The file host cannot be reached at all (exit 1, like an unreachable model server); says how to do without."""


class HashMismatchError(DataError):
    """A downloaded file is not the authors' file byte for byte; nothing of it is kept (exit 1)."""


@dataclass
class FetchedFile:
    """One file of a fetch: fetched (downloaded now) or kept (already there); verified either way."""

    file: PublicFile
    status: str  # "fetched" or "kept"
    url: str
    resumed_from: int = 0  # bytes of an earlier partial download the last request continued from
    restarts: int = 0  # times a server ignored the range and the file started over
    requests: int = 0

    def to_dict(self) -> dict:
        return {
            "file": self.file.name,
            "status": self.status,
            "verified": True,  # published or kept only with the table's SHA-256
            "size": self.file.size,
            "url": self.url,
            "resumed_from": self.resumed_from,
            "restarts": self.restarts,
            "requests": self.requests,
            **self.file.to_dict(),
        }


@dataclass
class FetchReport:
    out_dir: Path
    base_url: str
    files: list[FetchedFile] = field(default_factory=list)

    def named(self, status: str) -> list[str]:
        return [f.file.name for f in self.files if f.status == status]

    def to_dict(self) -> dict:
        return {
            "out": str(self.out_dir),
            "base_url": self.base_url,
            "repository": AUTHORS_REPOSITORY,
            "fetched": self.named("fetched"),
            "kept": self.named("kept"),
            "verified": [f.file.name for f in self.files],
            "files": [f.to_dict() for f in self.files],
        }

    def summary(self) -> str:
        fetched, kept = len(self.named("fetched")), len(self.named("kept"))
        size = sum(f.file.size for f in self.files if f.status == "fetched")
        return (
            f"{len(self.files)} of the authors' files in {self.out_dir}: {fetched} fetched ({size:,} bytes), "
            f"{kept} already there and kept; every one has the SHA-256 of the provenance table"
        )


def default_folder() -> Path:
    """`authors/` in the toolkit's cache folder (`$MIS_BENCH_CACHE`, else ~/.cache/mis-bench)."""
    from mis_bench_dataset.toolkit.cache_folder import cache_root

    return cache_root() / AUTHORS_FOLDER


def resolve_base_url(given: str | None = None) -> str:
    """`given`, else `$MIS_BENCH_AUTHORS_URL`, else GitHub's raw file host; http(s) only, no trailing slash."""
    text = given or os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL
    example = f"{DEFAULT_BASE_URL} (files are requested as BASE/COMMIT/PATH)"
    return http_url(text, where=f"--base-url / {BASE_URL_ENV}", example=example).url


def public_files(features: str | None = None) -> tuple[PublicFile, ...]:
    """The five files of `reproduce` and `build --authors`, plus the files of a feature sample."""
    if features is None:
        return PUBLIC_FILES
    if features not in FEATURE_SAMPLES:
        raise UsageError(f"no feature sample {features!r}", hint=f"choose one of {', '.join(FEATURE_SAMPLES)}")
    return (*PUBLIC_FILES, *FEATURE_SAMPLES[features].files)


def file_url(base_url: str, file: PublicFile) -> str:
    return f"{base_url}/{file.commit_full}/{urllib.parse.quote(file.path)}"


def offline_commands(files: Iterable[PublicFile]) -> str:
    """The commands that write `files` from a clone of the authors' repository (docs/reproducing.md)."""
    files = list(files)
    commands = [f.git_show for f in files if not f.is_feature_file]
    commands += [s.git_archive for s in FEATURE_SAMPLES.values() if any(f in s.files for f in files)]
    return f"git clone {AUTHORS_REPOSITORY} && cd MIS-Bench && " + " && ".join(commands)


def _check_present(files: Iterable[PublicFile], out: Path) -> set[str]:
    """Names already in `out` with the table's hash; a file there with another hash stops the fetch first."""
    present = set()
    for file in files:
        target = out / file.name
        if not (target.exists() or target.is_symlink()):
            continue
        digest = sha256_of(target) if target.is_file() else None
        if digest != file.sha256:
            found = f"SHA-256 {digest}" if digest else "not a file"
            raise DataError(
                f"{target} is already there and is not the authors' {file.name} ({found}, the provenance "
                f"table's SHA-256 {file.sha256}); it is left as it is",
                where="mis-bench fetch --out",
                hint="move it away or fetch into another --out",
            )
        present.add(file.name)
    return present


def fetch_authors_files(
    out: str | Path | None = None,
    *,
    features: str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT_S,
    progress: bool = True,
) -> FetchReport:
    """Download the authors' files missing from `out` (default `default_folder()`), each verified before it
    is published; files already there with the table's hash are kept. Holds a lock on `out` while it runs."""
    from mis_bench_dataset.toolkit.ownership import check_folder_path
    from mis_bench_dataset.toolkit.progress import step

    files = public_files(features)
    base = resolve_base_url(base_url)
    out = Path(out).expanduser() if out is not None else default_folder()
    check_folder_path(out, command="fetch")
    report = FetchReport(out, base)
    with file_lock(out / LOCK_NAME, waiting=f"waiting for another mis-bench fetch into {out}"):
        present = _check_present(files, out)
        missing = [f for f in files if f.name not in present]
        partial = sum(_size_of(_part_path(out, f)) for f in missing)
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(_remove_empty, out / PARTIAL_FOLDER)
            bar = cleanup.enter_context(
                step(
                    "fetching the authors' files",
                    total=sum(f.size for f in missing),
                    initial=partial,
                    unit="B",
                    unit_scale=True,
                    show=progress and bool(missing),
                )
            )
            for file in files:
                if file.name in present:
                    report.files.append(FetchedFile(file, "kept", file_url(base, file)))
                    continue
                report.files.append(_fetch_one(file, base, out, timeout, bar, missing))
                logger.debug("fetched and verified %s", file.name)
    return report


def _part_path(out: Path, file: PublicFile) -> Path:
    return out / PARTIAL_FOLDER / f"{file.name}.part"


def _remove_empty(folder: Path) -> None:
    """The partial-download folder and its sub-folders, where nothing is left in them."""
    if not folder.is_dir():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        with contextlib.suppress(OSError):
            sub.rmdir()
    with contextlib.suppress(OSError):
        folder.rmdir()


def _fetch_one(file: PublicFile, base: str, out: Path, timeout: float, bar, missing: list[PublicFile]) -> FetchedFile:
    """Download one file into its `.part` (resuming), then verify and publish it. A `.part` left by an earlier
    run that does not verify (written by another version, or damaged) is started over once before refusing."""
    url = file_url(base, file)
    part = _part_path(out, file)
    part.parent.mkdir(parents=True, exist_ok=True)
    done = FetchedFile(file, "fetched", url)
    earlier = _size_of(part)
    _download_with_retries(file, url, part, timeout, bar, done, [f for f in missing if not (out / f.name).is_file()])
    if earlier and sha256_of(part) != file.sha256:
        logger.warning("%s: the partial download kept from an earlier run does not verify; starting over", file.name)
        bar.update(-_size_of(part))
        part.unlink()
        done.restarts += 1
        _download_with_retries(file, url, part, timeout, bar, done, [])
    _publish(part, out, file, url)
    return done


def _download_with_retries(
    file: PublicFile, url: str, part: Path, timeout: float, bar, done: FetchedFile, unfetched: list[PublicFile]
) -> None:
    """Requests until `part` holds what the server sends in full: a cut connection resumes at once, a server
    error is asked again after a pause, `RETRIES` times; a host not reached at all fails at once."""
    failure = ""
    for attempt in range(RETRIES + 1):
        had = _size_of(part)
        if had >= file.size:
            return  # complete (from an earlier run too): verified without a request; a longer file is refused
        try:
            if _download(url, part, file, timeout, bar, done):
                return
            failure = f"the connection ended after {_size_of(part):,} of {file.size:,} bytes"
        except _Cut as cut:
            failure = str(cut)
        except urllib.error.HTTPError as err:
            failure = _http_failure(err, file, failed_url(err, url))
        except (urllib.error.URLError, OSError) as err:
            if attempt == 0 and not had and unfetched:
                raise _unreachable(err, failed_url(err, url), unfetched, asked=url) from err
            failure = f"{type(err).__name__}: {getattr(err, 'reason', err)}"
            where = failed_url(err, url)
            failure += f" (at {where}, where {url} redirected)" if where != url else ""
        if _size_of(part) <= had and attempt < RETRIES:  # no progress: wait a little before asking again
            time.sleep(backoff_delay(attempt, base_s=PAUSE_BASE_S, max_s=PAUSE_MAX_S))
    raise FetchRequestsError(
        f"{file.name} could not be fetched in {RETRIES + 1} requests: {failure}",
        where=url,
        hint=f"rerun the same mis-bench fetch to resume from the {_size_of(part):,} bytes kept in {part}",
    )


def _size_of(path: Path) -> int:
    return path.stat().st_size if path.is_file() else 0


class _Cut(Exception):
    """The response broke off (connection reset, timeout while reading, short body)."""


def _download(url: str, part: Path, file: PublicFile, timeout: float, bar, done: FetchedFile) -> bool:
    """One request: continue `part` from its size (Range), or start it over when the server sends it whole.
    True when the response ended as the server said it would (the file is then verified, whatever its size)."""
    offset = _size_of(part)
    headers = {"User-Agent": "mis-bench-fetch", "Accept-Encoding": "identity"}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    done.requests += 1
    redirects = _Redirects()
    try:
        response = urllib.request.build_opener(redirects).open(
            urllib.request.Request(url, headers=headers), timeout=timeout
        )
    except OSError as err:  # URLError and HTTPError included: say where the request failed, after any redirect
        if redirects.last is not None:
            err.failed_url = redirects.last  # type: ignore[attr-defined]
        if isinstance(err, urllib.error.HTTPError) and err.code == 416 and offset:  # past the file: start over
            part.unlink()
            bar.update(-offset)
            done.restarts += 1
            raise _Cut("the server refused to resume (HTTP 416); starting over") from err
        raise
    with response:
        resumed = bool(offset) and response.status == 206 and _range_start(response) == offset
        if offset and not resumed:  # the whole file (the range ignored), or a range we did not ask for
            logger.info("%s: the server ignored the range request; starting the file over", file.name)
            bar.update(-offset)
            done.restarts += 1
            offset = 0
        done.resumed_from = offset
        _copy_body(response, part, offset, file, bar)
        return not response.length  # urllib returns a short body without an error: what it still expected


class _Redirects(urllib.request.HTTPRedirectHandler):
    """urllib's redirect handling, remembering the last URL a redirect led to (what a failure then names)."""

    def __init__(self) -> None:
        self.last: str | None = None

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            self.last = new.full_url
        return new


def failed_url(err: BaseException, asked: str) -> str:
    """The URL a request failed at: the one a redirect led to (`_Redirects`, an HTTPError's own), else `asked`."""
    if isinstance(err, urllib.error.HTTPError) and err.url:
        return err.url
    return getattr(err, "failed_url", None) or asked


def _range_start(response) -> int | None:
    """Where a 206 response's `Content-Range: bytes START-END/TOTAL` starts."""
    value = response.headers.get("Content-Range", "")
    try:
        return int(value.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None


def _copy_body(response, part: Path, offset: int, file: PublicFile, bar) -> None:
    """Append the body to `part` (truncated to `offset` first); a file growing past the table's size is refused."""
    with open(part, "r+b" if part.exists() else "wb") as handle:
        handle.truncate(offset)
        handle.seek(offset)
        written = offset
        while True:
            try:
                chunk = response.read1(_CHUNK)  # what has arrived: a stalled server leaves it on the disk
            except (http.client.HTTPException, OSError) as err:  # IncompleteRead, reset, read timeout
                raise _Cut(
                    f"the connection broke after {written:,} of {file.size:,} bytes ({type(err).__name__})"
                ) from err
            if not chunk:
                return
            written += len(chunk)
            if written > file.size:
                handle.close()
                part.unlink()
                raise HashMismatchError(
                    f"the server sent more than the {file.size:,} bytes of the authors' {file.name}; "
                    "nothing of it was kept",
                    where=response.geturl(),
                    hint=f"check the mirror (--base-url / {BASE_URL_ENV}) or fetch from {DEFAULT_BASE_URL}",
                )
            handle.write(chunk)
            bar.update(len(chunk))


def _publish(part: Path, out: Path, file: PublicFile, url: str) -> None:
    """Rename the finished `part` onto `OUT/NAME` if its hash is the table's; else remove it and refuse."""
    target = out / file.name
    digest = sha256_of(part)
    if digest != file.sha256:
        part.unlink()
        raise HashMismatchError(
            f"{file.name} from the server is not the authors' file: SHA-256 {digest}, the provenance table's "
            f"{file.sha256}; nothing of it was kept",
            where=url,
            hint=f"check the mirror (--base-url / {BASE_URL_ENV}) or fetch from {DEFAULT_BASE_URL}",
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    if _check_present([file], out):  # put there meanwhile by something that does not take our lock
        part.unlink()
        return
    publish_file(part, target)


def _http_failure(err: urllib.error.HTTPError, file: PublicFile, url: str) -> str:
    """A refused request (a wrong base URL or path) stops the fetch (exit 2); other statuses are retried."""
    if err.code in _REFUSED_STATUSES:
        raise UsageError(
            f"the file host refused {file.name}: HTTP {err.code} {err.reason}",
            where=url,
            hint=f"check --base-url / {BASE_URL_ENV} (files are requested as BASE/COMMIT/PATH)",
        ) from None
    return f"HTTP {err.code} {err.reason}"


def _unreachable(
    err: OSError, url: str, missing: Iterable[PublicFile], *, asked: str | None = None
) -> AuthorsUnreachableError:
    reason = getattr(err, "reason", err)
    if isinstance(reason, socket.gaierror):
        cause = "unknown host"
    elif isinstance(reason, (TimeoutError, socket.timeout)):
        cause = "connect timeout"
    elif isinstance(reason, ConnectionRefusedError):
        cause = "connection refused"
    elif isinstance(reason, ssl.SSLError):
        cause = f"TLS failure: {reason}"
    else:
        cause = f"{type(reason).__name__}: {reason}"
    host = urllib.parse.urlsplit(url).netloc.rpartition("@")[2]
    redirected = f", where {asked} redirected" if asked is not None and asked != url else ""
    return AuthorsUnreachableError(
        f"cannot reach the authors' file host {host} ({cause}{redirected})",
        where=url,
        hint="without the network, write the files from a clone of the authors' repository (docs/reproducing.md): "
        + offline_commands(missing),
    )


def authors_inputs(folder: str | Path | None = None) -> tuple[Path, Path]:
    """(transcripts, labels) of a folder `fetch` wrote (default `default_folder()`): what `build --authors`
    builds from, the same as `--transcripts DIR/fis_transcript.csv --labels DIR/coding.csv`."""
    from mis_bench_dataset.release.provenance import CODING, TRANSCRIPTS

    folder = Path(folder).expanduser() if folder is not None else default_folder()
    paths = []
    for file in (TRANSCRIPTS, CODING):
        path = folder / file.name
        if not path.is_file():
            raise DataError(
                f"no {file.name} in the folder",
                where=str(folder),
                hint=f"fetch the authors' files first: mis-bench fetch --out {folder}",
            )
        if sha256_of(path) != file.sha256:
            logger.warning("%s is not byte for byte the authors' %s; building from it anyway", path, file.name)
        paths.append(path)
    return paths[0], paths[1]

"""Who sent each submission and when the board received it: the account the board's limits count and the
time that breaks ties (the earlier submission keeps the rank).

The time is the board's, never the submitter's: a submission's own `created_at` is text its sender writes.

- A local folder (`mis-bench leaderboard DIR`, the Space's `MIS_BENCH_SUBMISSIONS`): every file is the board
  operator's (account None), received at its modification time in the folder.
- The Space's requests repo (`MIS_BENCH_REQUESTS_REPO`): a submission is a pull request
  (`mis-bench submit --push`); its author is the account and the Hub's creation time of the pull request
  the time. Files on the main branch that no pull request added are the operator's (account None: someone
  with write access put them there, like the toolkit's baselines).
"""

from __future__ import annotations

import datetime as _dt
import logging
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from mis_bench_dataset.toolkit.atomic import write_atomic
from mis_bench_dataset.toolkit.text_safety import slug

logger = logging.getLogger(__name__)

REQUESTS_FOLDER = "requests"
_DIFF_PATH = re.compile(r"^\+\+\+ b/(requests/[^\n]+\.json)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Request:
    """How one submission file reached the board."""

    account: str | None  # None: the operator's own file
    received_at: _dt.datetime  # timezone-aware UTC

    def to_dict(self) -> dict:
        return {"account": self.account, "submitted_at": self.received_at.isoformat(timespec="seconds")}


def file_request(path: Path) -> Request:
    """A file of a local folder: the operator's, received at its modification time."""
    return Request(None, _dt.datetime.fromtimestamp(path.stat().st_mtime, tz=_dt.timezone.utc))


def _utc(value: _dt.datetime | str) -> _dt.datetime:
    moment = _dt.datetime.fromisoformat(value.replace("Z", "+00:00")) if isinstance(value, str) else value
    return moment if moment.tzinfo else moment.replace(tzinfo=_dt.timezone.utc)


def pull_request_paths(diff: str) -> list[str]:
    """The `requests/*.json` files a pull request's diff adds or changes."""
    return sorted(set(_DIFF_PATH.findall(diff or "")))


def hub_requests(repo_id: str, dest: str | Path, *, api=None, token: str | None = None) -> dict[str, Request]:
    """Download every submission of a Hub requests repo into `dest`; file name -> its Request.

    Open and merged pull requests are read at their own revision (`refs/pr/N`), so a submission counts from
    the moment it is sent; closed ones are not. Each lands as `pr{N}__{name}`; main-branch files no pull
    request added land under their own name as the operator's. `api`: an `HfApi` (tests pass a fake one).
    """
    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    requests: dict[str, Request] = {}
    from_pulls: set[str] = set()
    pulls = api.get_repo_discussions(repo_id, repo_type="dataset", discussion_type="pull_request")
    for pull in sorted(pulls, key=lambda p: p.num):
        if pull.status not in ("open", "merged"):
            continue
        details = api.get_discussion_details(repo_id, pull.num, repo_type="dataset")
        for path in pull_request_paths(details.diff):
            from_pulls.add(path)
            name = f"pr{pull.num}__{slug(Path(path).stem)}.json"
            _download(api, repo_id, path, f"refs/pr/{pull.num}", dest / name)
            requests[name] = Request(pull.author, _utc(pull.created_at))
    for path in _main_request_files(api, repo_id):
        if path not in from_pulls:
            name = slug(Path(path).stem) + ".json"
            _download(api, repo_id, path, None, dest / name)
            requests[name] = file_request(dest / name)
    logger.info("requests repo %s: %d submission(s)", repo_id, len(requests))
    return requests


def _main_request_files(api, repo_id: str) -> Iterable[str]:
    files = api.list_repo_files(repo_id, repo_type="dataset")
    return sorted(p for p in files if p.startswith(f"{REQUESTS_FOLDER}/") and p.endswith(".json"))


def _download(api, repo_id: str, path: str, revision: str | None, target: Path) -> None:
    local = api.hf_hub_download(repo_id, path, repo_type="dataset", revision=revision)
    write_atomic(target, Path(local).read_bytes())

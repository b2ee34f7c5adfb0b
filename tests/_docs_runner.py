"""Running a page's blocks as a reader would (tests/test_docs_blocks.py; the rules are in _docs_helpers.py).

`PageRun` lays out one page's private folders (a working directory showing the checkout, `/tmp/`, the
shell's state) and runs blocks in them. `replay_default_job` is the one exception to "each page runs its
own blocks": the README's first command, `mis-bench run` in a fresh checkout, is run once per test run
(conftest's `readme_default_job`, also what tests/test_main_job.py checks), and a page that starts with
the same command in the same fresh state is given that run's output and its `mis-bench-results/`: the
command, its inputs (the checkout, the cached default sample) and its environment are the same, so a
second run could only print and write the same (the job is deterministic; test_main_job checks that a
rerun on the same data gives the same numbers).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from _docs_zygote import PYTHON_STDIN, Zygote

from _docs_helpers import SHARED, Block

REPO = Path(__file__).resolve().parents[1]
SHARED_FOLDER = (REPO / SHARED).resolve()  # the developers' and CI's copy of the public data, when laid out
BLOCK_TIMEOUT_S = 900
DEFAULT_JOB_COMMAND = "mis-bench run\n"  # the README's first command once its setup is taken off
DEFAULT_JOB_OUTPUT = "mis-bench-results"  # where it writes, in the working directory
# Commands that import the Hugging Face training stack (about 5 s of CPU each): forked from one process per test
# worker that imported it once (tests/_docs_zygote.py), unless DOCS_FRESH_PROCESSES is set; so are Python blocks
# and `python3 -c` lines that import raft_trainer. `run --backend transformers` only uses a server already started
# (a refusal of its options imports no torch: starting the server for it would cost more than it saves).
TRAINING_STACK = re.compile(r"mis-bench train\b|python3 -c \"[^\"]*raft_trainer")
TRANSFORMERS_RUN = re.compile(r"mis-bench run\b[^\n]*--backend transformers")

BASH_PRELUDE = r"""set -euo pipefail
_docs_save() {
  local _docs_names
  _docs_names=$(compgen -v | grep -vxFf "$DOCS_BASELINE" | grep -v '^_docs' || true)
  {
    if [ -n "$_docs_names" ]; then declare -p $_docs_names; fi
    printf 'cd %q\n' "$PWD"
  } > "$DOCS_STATE" 2>/dev/null || true
  printf '%s' "$PWD" > "$DOCS_STATE.pwd"
}
compgen -v > "$DOCS_BASELINE"
if [ -f "$DOCS_STATE" ]; then . "$DOCS_STATE"; fi
trap _docs_save EXIT
"""


def _checkout_view(work: Path) -> None:
    """`work` shows the checkout: its top-level entries linked in (writes go to `work` itself), and
    `../shared` beside it where the checkout has one."""
    if SHARED_FOLDER.is_dir():
        (work.parent / "shared").symlink_to(SHARED_FOLDER)
    ignored = subprocess.run(
        ["git", "check-ignore", *[p.name for p in REPO.iterdir()]], cwd=REPO, capture_output=True, text=True
    ).stdout.split()
    for entry in REPO.iterdir():
        if entry.name != ".git" and entry.name not in ignored:
            (work / entry.name).symlink_to(entry)


@dataclass
class PageRun:
    """One page's folders under `root`: `checkout` (the working directory), `tmp` (`/tmp/` and TMPDIR),
    `scripts` (the bash blocks as files) and the shell's state."""

    root: Path
    cache: Path  # MIS_BENCH_CACHE: the suite's cached default sample
    blocks_run: int = 0

    def __post_init__(self) -> None:
        for folder in (self.work, self.tmp, self.scripts):
            folder.mkdir(parents=True)
        _checkout_view(self.work)

    @property
    def work(self) -> Path:
        return self.root / "checkout"

    @property
    def tmp(self) -> Path:
        return self.root / "tmp"

    @property
    def scripts(self) -> Path:
        return self.root / "scripts"

    @property
    def cwd(self) -> Path:
        """Where the next block runs: where the last bash block left the shell, else the checkout."""
        state_pwd = self.root / "shell-state.pwd"
        return Path(state_pwd.read_text()) if state_pwd.is_file() else self.work

    @property
    def fresh(self) -> bool:
        """No block (bash or Python) has run yet in this page."""
        return self.blocks_run == 0

    def environment(self) -> dict[str, str]:
        return {
            **os.environ,
            # The interpreter running the suite is the reader's `python3` (a virtual environment's bin first).
            "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]),
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            "TMPDIR": str(self.tmp),
            "MIS_BENCH_CACHE": str(self.cache),
            "DOCS_STATE": str(self.root / "shell-state"),
            "DOCS_BASELINE": str(self.root / "shell-baseline"),
            "MPLBACKEND": "Agg",
        }

    def here(self, text: str) -> str:
        """`/tmp/` of a block is the page's private temporary folder."""
        return text.replace("/tmp/", f"{self.tmp}/")

    def run(self, block: Block, code: str) -> subprocess.CompletedProcess:
        self.blocks_run += 1
        environment = self.environment()
        if block.language == "bash":
            script = self.scripts / f"{block.line}.sh"
            script.write_text(BASH_PRELUDE + self.here(code), encoding="utf-8")
            command, stdin = ["bash", str(script)], None
            joined = code.replace("\\\n", " ")  # a command continued over lines
            zygote = _zygote(environment, TRAINING_STACK.search(joined), TRANSFORMERS_RUN.search(joined))
            if zygote is not None:
                environment = zygote.page_env(environment)
        else:  # as pasted into `python3`: the working directory on sys.path
            command, stdin = [sys.executable, "-"], self.here(code)
            zygote = _zygote(environment, "raft_trainer" in code, False)
            if zygote is not None:
                environment = zygote.page_env(environment)
                command = [sys.executable, "-S", environment["DOCS_ZYGOTE_CLIENT"], PYTHON_STDIN]
        return subprocess.run(
            command,
            cwd=self.cwd,
            env=environment,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=BLOCK_TIMEOUT_S,
        )


def _zygote(environment: dict[str, str], starts: object, uses: object) -> Zygote | None:
    """The worker's training-stack server for a block that `starts` it (or `uses` one already running), if any."""
    if os.environ.get("DOCS_FRESH_PROCESSES") or not (starts or (uses and Zygote._started is not None)):
        return None
    zygote = Zygote.for_env(environment)
    return zygote if zygote.wait_ready() else None


def run_default_job(root: Path, cache: Path) -> subprocess.CompletedProcess:
    """The README's first command, as its page runs it: `mis-bench run` in a fresh checkout view under `root`."""
    page = PageRun(root, cache)
    return page.run(Block("README.md", 0, "bash", "bash", DEFAULT_JOB_COMMAND), DEFAULT_JOB_COMMAND)


def replay_default_job(page: PageRun, block: Block, code: str, job) -> subprocess.CompletedProcess | None:
    """The suite's one run of the README's first command (`job`: conftest's `readme_default_job`) for a page
    that starts with it: its output folder copied into the page's checkout, its CompletedProcess returned.
    None (run the block) for any other block or state, or without `job`."""
    if job is None or code != DEFAULT_JOB_COMMAND or block.language != "bash" or not page.fresh:
        return None
    shutil.copytree(job.work / DEFAULT_JOB_OUTPUT, page.work / DEFAULT_JOB_OUTPUT, symlinks=True)
    page.blocks_run += 1
    return job.done

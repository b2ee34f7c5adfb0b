"""Reading and running the code blocks of the docs pages and the README (tests/test_docs_blocks.py).

The rules (also in docs/architecture.md, "Writing docs"):

- A ```bash or ```python block is executed. The page's blocks run in order, in one temporary working
  directory that shows the checkout (its top-level files and folders linked in), so paths such as
  `raft_trainer/train.py` resolve as they do for a reader in the checkout, while whatever a block writes
  lands in the temporary folder. Bash blocks share one shell session (variables and the current
  directory carry over, `set -euo pipefail`); each Python block runs as its own script.
- `/tmp/` in a block (and in its output block) stands for a private temporary folder of the page; `TMPDIR`
  points there too, so `$(mktemp -d)` does as well. `HF_HOME` and `MIS_BENCH_CACHE` are temporary.
- Setup commands are not run again: a `git clone ...` line, `python3 -m venv`, `. .venv/bin/activate` and
  `pip install ...` (a command of its own or joined by `&&`). Each `pip install` is checked instead:
  what it installs must be installed here (torch at the pinned version, every requirement of the extras).
- The README's first command, `mis-bench run` in a fresh checkout, runs once per test run; a page that
  starts with it replays that run (tests/_docs_runner.py says why that is the same).
- `mis-bench train` and `mis-bench run --backend transformers` fork from a process that imported the training
  stack once per test worker (tests/_docs_zygote.py says why that is the same); DOCS_FRESH_PROCESSES=1 turns it off.
- A ```text block is not executed; it is either an output block or a command that cannot run offline,
  whose first line says why: `# Needs ...` (a GPU, a server, the network, ...).
- A block naming `../shared` (the developers' and CI's read-only copy of the public data beside the
  checkout: the authors' files, the real transcripts) runs with that folder beside the temporary checkout
  when it exists; without it the block is skipped and the page's test says which blocks it skipped.
- An output block is a ```text fence with `title="output"` right after a runnable block: that block's
  stdout must match it line by line (trailing spaces and surrounding blank lines ignored). A line that is
  exactly `...` stands for any number of lines; `...` inside a line for any text on that line.
- A block right after `<!-- docs-test: ci -->` holds the commands CI runs: each of its lines must be a line
  of `.ci/run`, and it is not executed here (the test command would run this suite inside itself).
"""

from __future__ import annotations

import configparser
import importlib.metadata
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement

RUNNABLE = ("bash", "python")
FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>`{3,})(?P<info>[^`]*)$")
CI_MARKER = "<!-- docs-test: ci -->"
NEEDS = re.compile(r"^\s*#\s*Needs\b")
SHARED = "../shared"  # the public data laid out beside a developer's or CI's checkout (tests/conftest.py)
OPTIONS_WITH_VALUES = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "-c", "--constraint", "-r"}
SETUP_COMMAND = re.compile(
    r"^(python3? -m venv\b|\. \.venv/bin/activate$|source \.venv/bin/activate$|(python3? -m )?pip3? install\b)"
)


@dataclass
class Block:
    page: str
    line: int  # 1-based line of the opening fence
    language: str
    info: str
    code: str
    end: int = 0  # 0-based index of the line after the closing fence
    ci: bool = False  # right after CI_MARKER
    output: Block | None = None  # the output block that follows, for a runnable block
    is_output: bool = False

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def needs_shared(self) -> bool:
        """It reads the data of `../shared` (run only where that folder exists)."""
        return SHARED + "/" in self.code


# A command that reads the embedded default sample: `default_sample(...)`, or `mis-bench run` without `--dataset`.
DEFAULT_SAMPLE_USE = re.compile(r"default_sample\b|(?:^|&&|;|\|\|)\s*mis-bench run\b(?![^\n]*--dataset)", re.MULTILINE)


@dataclass
class PageBlocks:
    page: str
    blocks: list[Block] = field(default_factory=list)

    @property
    def runnable(self) -> list[Block]:
        return [b for b in self.blocks if b.language in RUNNABLE and not b.ci]

    @property
    def uses_default_sample(self) -> bool:
        """A block reads the default sample (continued lines joined first): the page is given the suite's cache. A
        page this misses still runs right, generating the sample into its own empty cache (slowly)."""
        return any(DEFAULT_SAMPLE_USE.search(b.code.replace("\\\n", " ")) for b in self.runnable)


def read_blocks(path: Path, name: str) -> PageBlocks:
    """Every fenced block of a Markdown page, with its language, the CI marker and its output block."""
    lines = path.read_text(encoding="utf-8").splitlines()
    page = PageBlocks(name)
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if not opening:
            i += 1
            continue
        indent, ticks, info = opening["indent"], opening["ticks"], opening["info"].strip()
        body, j = [], i + 1
        while j < len(lines) and not re.match(rf"^[ \t]*{ticks}\s*$", lines[j]):
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        if j == len(lines):
            raise ValueError(f"{name}:{i + 1}: a fence that is never closed")
        language = info.split()[0] if info else ""
        previous = next((lines[k].strip() for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        block = Block(name, i + 1, language, info, "\n".join(body) + "\n", end=j + 1, ci=previous == CI_MARKER)
        block.is_output = language == "text" and 'title="output"' in info
        if block.is_output:
            runnable = page.blocks[-1] if page.blocks else None
            if runnable is None or runnable.language not in RUNNABLE or runnable.output is not None:
                raise ValueError(f"{block.where}: an output block must follow a bash or python block")
            if any(lines[k].strip() for k in range(runnable.end, i)):
                raise ValueError(f"{block.where}: an output block must directly follow its block")
            runnable.output = block
        page.blocks.append(block)
        i = j + 1
    return page


def output_matches(expected: str, actual: str) -> bool:
    """The output rule: lines compared without trailing spaces; `...` alone is any lines, in a line any text."""
    want = _trimmed(expected)
    have = _trimmed(actual)
    pattern = []
    for line in want:
        if line.strip() == "...":
            pattern.append(r"(?:[^\n]*\n)*?")
        else:
            pattern.append(".*?".join(re.escape(part) for part in line.split("...")) + r"\n")
    return re.fullmatch("".join(pattern), "".join(line + "\n" for line in have), re.S) is not None


def _trimmed(text: str) -> list[str]:
    lines = [line.rstrip() for line in text.splitlines()]
    while lines and not lines[0]:
        lines.pop(0)
    while lines and not lines[-1]:
        lines.pop()
    return lines


def split_setup(code: str) -> tuple[str, list[str]]:
    """The bash code without its setup commands, and those commands (checked, not run)."""
    kept, setup = [], []
    for line in code.splitlines():
        if line.startswith("git clone "):  # with the `cd` into the clone that follows it
            setup.append(line)
            continue
        commands = [c.strip() for c in line.split(" && ")] if not line.lstrip().startswith("#") else [line]
        run = [c for c in commands if not SETUP_COMMAND.match(c)]
        setup += [c for c in commands if SETUP_COMMAND.match(c)]
        if run or not commands:
            kept.append(" && ".join(run) if len(commands) > 1 else line)
    return "\n".join(kept) + "\n", setup


def unmet_install(command: str, setup_cfg: Path) -> list[str]:
    """What a skipped `pip install ...` would install that is not installed here (empty: all there)."""
    words = shlex.split(command, comments=True)
    words = words[3:] if words[:3] in (["python3", "-m", "pip"], ["python", "-m", "pip"]) else words[1:]
    if words[:1] != ["install"]:
        return []
    config = configparser.ConfigParser()
    config.read(setup_cfg)
    extras = config["options.extras_require"]
    targets = [
        word
        for before, word in zip(words, words[1:], strict=False)
        if not word.startswith("-") and before not in OPTIONS_WITH_VALUES  # `--index-url URL`'s URL is no target
    ]
    unmet = []
    for target in targets:
        if target.startswith("."):
            chosen = re.findall(r"\w[\w-]*", target.partition("[")[2])
            requirements = [*config["options"]["install_requires"].split("\n")]
            pending = list(chosen)
            while pending:
                for line in extras[pending.pop()].splitlines():
                    if line.strip().startswith("mis-bench["):
                        pending += re.findall(r"\w[\w-]*", line.partition("[")[2])
                    elif line.strip():
                        requirements.append(line)
            unmet += [r for r in requirements if r.strip() and not _installed(Requirement(r.strip()))]
        elif not _installed(Requirement(target)):
            unmet.append(target)
    return unmet


def _installed(requirement: Requirement) -> bool:
    try:
        version = importlib.metadata.version(requirement.name)
    except importlib.metadata.PackageNotFoundError:
        return False
    local = version.split("+")[0]  # torch 2.13.0+cpu satisfies torch==2.13.0
    return requirement.specifier.contains(local, prereleases=True)

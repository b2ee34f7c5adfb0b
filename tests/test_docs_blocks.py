"""Every shell and Python block of the README and of docs/*.md runs, and the outputs the pages show are
what the commands print. The rules are in tests/_docs_helpers.py (and docs/architecture.md): each page's
blocks run in order in a temporary folder that shows the checkout, `/tmp/` is a private temporary folder,
`HF_HOME` and `MIS_BENCH_CACHE` are temporary, setup commands are checked instead of run, ```text blocks
are outputs or say what they need, and an output block after a command must match what it printed."""

from __future__ import annotations

import difflib
import os
import subprocess

import pytest

from _docs_helpers import (
    CI_MARKER,
    NEEDS,
    Block,
    output_matches,
    read_blocks,
    split_setup,
    unmet_install,
)
from _docs_runner import DEFAULT_JOB_COMMAND, REPO, SHARED_FOLDER, PageRun, replay_default_job

PAGES = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]
# Languages a fence may have: executed (bash, python), outputs and commands that cannot run (text),
# and what is not a command (a citation, a diagram without a language).
KNOWN_LANGUAGES = {"bash", "python", "text", "bibtex", "", "json", "yaml"}
CHECK_COMMAND = "scripts/check"  # the one test command: README's "Tests" block, run by .ci/run


# Pages whose blocks take over 5 s to run here (training, real data, 10,000-resample reports, scaling): `slow`, so
# they run when RUN_SLOW=1 (scripts/check, CI); the others run in the quick suite too.
SLOW_PAGES = {
    "README.md",
    "docs/training.md",
    "docs/reproducing.md",
    "docs/reports.md",
    "docs/dataset.md",
    "docs/metric.md",
    "docs/scaling.md",
    "docs/agreement.md",
    "docs/estimates.md",
    "docs/calibration.md",
    "docs/workflow.md",
}


def _pages_with_code() -> list:
    return [
        pytest.param(page, marks=pytest.mark.slow) if page in SLOW_PAGES else page
        for page in PAGES
        if read_blocks(REPO / page, page).runnable or _ci_blocks(page)
    ]


def _starts_with_the_default_job(blocks) -> bool:
    """The page's first runnable block is the README's first command (the suite's one run of it is replayed)."""
    first = blocks.runnable[0] if blocks.runnable else None
    return first is not None and first.language == "bash" and split_setup(first.code)[0] == DEFAULT_JOB_COMMAND


def _ci_blocks(page: str) -> list[Block]:
    return [b for b in read_blocks(REPO / page, page).blocks if b.ci]


def _ci_lines() -> set[str]:
    """The lines CI runs: `.ci/run`'s and those of `scripts/check`, which it calls."""
    return {
        line.strip()
        for script in (REPO / ".ci" / "run", REPO / CHECK_COMMAND)
        for line in script.read_text(encoding="utf-8").splitlines()
    }


@pytest.mark.parametrize("page", _pages_with_code())
def test_every_block_of_the_page_runs_and_prints_what_it_shows(page, tmp_path, request):
    blocks = read_blocks(REPO / page, page)
    # The suite's default sample and its run of the README's first command only for a page that uses them: a worker
    # starting with another page does not wait while the other worker makes them.
    cache = request.getfixturevalue("default_sample_cache") if blocks.uses_default_sample else tmp_path / "cache"
    run = PageRun(tmp_path / "page", cache)
    readme_default_job = request.getfixturevalue("readme_default_job") if _starts_with_the_default_job(blocks) else None
    ci_lines = _ci_lines()
    skipped = []
    for block in blocks.blocks:
        if block.ci:
            commands = [line.strip() for line in block.code.splitlines() if line.strip()]
            missing = [line for line in commands if line not in ci_lines]
            assert not missing, f"{block.where}: not what .ci/run (or the scripts/check it calls) runs: {missing}"
            continue
        if block.language not in ("bash", "python"):
            continue
        if block.needs_shared and not SHARED_FOLDER.is_dir():
            skipped.append(block.where)
            continue
        code, setup = split_setup(block.code) if block.language == "bash" else (block.code, [])
        for command in setup:
            unmet = unmet_install(command, REPO / "setup.cfg")
            assert not unmet, f"{block.where}: `{command}` would install what is not installed here: {unmet}"
        done = replay_default_job(run, block, code, readme_default_job) or run.run(block, code)
        assert done.returncode == 0, (
            f"{block.where}: the {block.language} block exits {done.returncode}\n--- stdout\n{done.stdout[-3000:]}"
            f"\n--- stderr\n{done.stderr[-5000:]}"
        )
        if block.output is not None:
            printed = done.stdout.replace(f"{run.tmp}/", "/tmp/").replace(str(run.tmp), "/tmp")
            expected = block.output.code
            assert output_matches(expected, printed), f"{block.output.where}: the page shows other output:\n" + "".join(
                difflib.unified_diff(expected.splitlines(True), printed.splitlines(True), "page", "printed", n=1)
            )

    # Nothing but ignored folders is left where a reader's checkout would be.
    written = sorted(p.name + ("/" if p.is_dir() else "") for p in run.work.iterdir() if not p.is_symlink())
    if written:
        ignored = subprocess.run(["git", "check-ignore", *written], cwd=REPO, capture_output=True, text=True)
        assert set(ignored.stdout.split()) == set(written), f"{page} leaves files in the checkout: {written}"
    if skipped:
        pytest.skip(f"{SHARED_FOLDER} absent (laid out for developers and CI only): skipped {', '.join(skipped)}")


def test_every_block_is_run_or_says_why_not():
    """A fence is runnable, an output, a CI command list, or a ```text command that starts `# Needs ...`."""
    problems = []
    for page in PAGES:
        for block in read_blocks(REPO / page, page).blocks:
            if block.language not in KNOWN_LANGUAGES:
                problems.append(f"{block.where}: fence language {block.language!r} is neither run nor marked")
            elif block.language == "text" and not block.is_output and not NEEDS.match(block.code):
                problems.append(f"{block.where}: a ```text block that is no output must start with `# Needs ...`")
    assert not problems, "\n".join(problems)


def test_the_test_command_is_one_command_and_ci_runs_it():
    """README's "Tests" section leads with one command, `scripts/check`; .ci/run runs exactly it, as a line of its
    own, and the README's first block is one command too (install and the default job)."""
    readme = read_blocks(REPO / "README.md", "README.md")
    tests_line = next(i for i, line in enumerate((REPO / "README.md").read_text().splitlines()) if line == "## Tests")
    first_ci = next(b for b in readme.blocks if b.ci)
    assert first_ci.line > tests_line and first_ci.code == CHECK_COMMAND + "\n"
    assert CHECK_COMMAND in (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert os.access(REPO / CHECK_COMMAND, os.X_OK) and os.access(REPO / ".ci" / "run", os.X_OK)
    first = readme.runnable[0]
    assert first.language == "bash" and len(first.code.strip().splitlines()) == 1
    assert split_setup(first.code)[0] == DEFAULT_JOB_COMMAND
    # The installation page starts with the same command (its test replays the README's run of it).
    assert read_blocks(REPO / "docs" / "installation.md", "docs/installation.md").runnable[0].code == first.code


def test_the_ci_marker_precedes_a_bash_block():
    for page in PAGES:
        lines = (REPO / page).read_text(encoding="utf-8").splitlines()
        marked = sum(line.strip() == CI_MARKER for line in lines)
        assert marked == len(_ci_blocks(page)) and all(b.language == "bash" for b in _ci_blocks(page)), page


def test_output_rule():
    assert output_matches("a\n...\nd\n", "a\nb\nc\nd\n")
    assert output_matches("a\n...\nd\n", "a\nd\n")
    assert output_matches("total: ... requests\n", "total: 256 requests  \n\n")
    assert not output_matches("a\nd\n", "a\nb\nd\n")
    assert not output_matches("total: 12 requests\n", "total: 13 requests\n")
    assert not output_matches("x ... y\n", "x\ny\n")  # `...` in a line never spans lines


def test_setup_commands_are_recognised_and_checked():
    code, setup = split_setup("python3 -m venv .venv && . .venv/bin/activate\npip install -e . && mis-bench run\n")
    assert code == "mis-bench run\n" and setup == ["python3 -m venv .venv", ". .venv/bin/activate", "pip install -e ."]
    assert unmet_install('pip install -e ".[test]"', REPO / "setup.cfg") == []
    assert unmet_install("pip install torch==0.0.1", REPO / "setup.cfg") == ["torch==0.0.1"]
    cpu = "pip install torch==0.0.1 --index-url https://download.pytorch.org/whl/cpu"
    assert unmet_install(cpu, REPO / "setup.cfg") == ["torch==0.0.1"]  # the index URL is an option's value


def test_only_a_fresh_page_starting_with_the_default_job_replays_it(tmp_path, default_sample_cache):
    """The shared run stands in only for `mis-bench run` as a page's first block: after any block (a Python one
    included) or for another command, the block runs itself."""
    first = PageRun(tmp_path / "first", default_sample_cache)
    bash = Block("p.md", 1, "bash", "bash", DEFAULT_JOB_COMMAND)
    assert replay_default_job(first, bash, "mis-bench run --json\n", job=None) is None
    later = PageRun(tmp_path / "later", default_sample_cache)
    assert later.run(Block("p.md", 1, "python", "python", "print(1)\n"), "print(1)\n").stdout == "1\n"
    assert not later.fresh and replay_default_job(later, bash, DEFAULT_JOB_COMMAND, job=None) is None


def test_a_page_using_the_default_sample_is_recognised():
    from _docs_helpers import PageBlocks

    def uses(code: str, language: str = "bash") -> bool:
        return PageBlocks("p", [Block("p", 1, language, language, code)]).uses_default_sample

    assert uses("mis-bench run\n") and uses("pip install -e . && mis-bench run --bootstrap 200\n")
    assert uses("from mis_bench_dataset import default_sample\nprint(default_sample().build_dir)\n", "python")
    assert not uses("mis-bench run --dataset build --out runs\n")
    assert not uses("mis-bench run --backend openai --model m \\\n    --dataset build --dry-run\n")
    assert not uses("mis-bench report runs --out r\n") and not uses("# mis-bench run\n", "text")

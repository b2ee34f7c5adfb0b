"""The docs runner's shared training-stack process (tests/_docs_zygote.py): a forked `mis-bench train` prints and
exits as a fresh one does, and a block whose environment differs runs fresh."""

from __future__ import annotations

import pytest
from _docs_zygote import Zygote

from _docs_helpers import Block
from _docs_runner import TRAINING_STACK, TRANSFORMERS_RUN, PageRun

# A refusal: the whole command line runs (flags parsed, settings checked) and ends in one line, exit 2.
REFUSED = (
    "mis-bench train --model_name_or_path m --dataset_dir d --optim paged_adamw_8bit --use_cpu true || echo exit $?\n"
)

# What a fresh interpreter would print (its argv, `__main__`, the working directory first on sys.path), then the
# parent's pid: the shared server's for a forked one.
SHOW = "print(d.DIGITS, __name__, sys.argv, repr(sys.path[0]), os.getppid())"
PYTHON = f"import os, sys\nimport raft_trainer.digits as d\n{SHOW}\n"
PYTHON_C = f'python3 -c "import os, sys, raft_trainer.digits as d; {SHOW}"\n'
WHAT = ["0123456789 __main__ ['-'] ''", "0123456789 __main__ ['-c'] ''"]  # the block's, the line's


@pytest.mark.slow  # the server imports the training stack, and the fresh run does again: about 10 s of CPU
def test_a_forked_train_prints_and_exits_as_a_fresh_one(tmp_path, monkeypatch):
    forked_page = PageRun(tmp_path / "forked", tmp_path / "cache")
    forked = forked_page.run(Block("p.md", 1, "bash", "bash", REFUSED), REFUSED)
    zygote = Zygote._started
    assert zygote is not None and zygote.wait_ready(), "the block did not start the shared process"
    monkeypatch.setenv("DOCS_FRESH_PROCESSES", "1")
    fresh = PageRun(tmp_path / "fresh", tmp_path / "cache").run(Block("p.md", 1, "bash", "bash", REFUSED), REFUSED)
    assert forked.returncode == fresh.returncode == 0
    assert forked.stdout == fresh.stdout == "exit 2\n"
    assert forked.stderr == fresh.stderr and forked.stderr.startswith("mis-bench train: error: settings")
    # A Python block and a `python3 -c` line that import raft_trainer: the same interpreter state as a fresh one.
    monkeypatch.delenv("DOCS_FRESH_PROCESSES")
    ran = {}
    for fork in (True, False):
        if not fork:
            monkeypatch.setenv("DOCS_FRESH_PROCESSES", "1")
        page = PageRun(tmp_path / f"python-{fork}", tmp_path / "cache")
        ran[fork] = [page.run(Block("p.md", 1, "python", "python", PYTHON), PYTHON)]
        ran[fork].append(page.run(Block("p.md", 2, "bash", "bash", PYTHON_C), PYTHON_C))
    server = str(zygote.process.pid)
    for forked_one, fresh_one, what in zip(ran[True], ran[False], WHAT, strict=True):
        # The last word is the parent's pid: the shared server only for the forked one.
        (forked_out, forked_parent), (fresh_out, fresh_parent) = (
            r.stdout.rsplit(maxsplit=1) for r in (forked_one, fresh_one)
        )
        assert forked_parent == server != fresh_parent
        assert (forked_one.returncode, forked_out) == (fresh_one.returncode, fresh_out) == (0, what)

    # The same command with a variable the block exported (it could change what an import sees) runs fresh.
    monkeypatch.delenv("DOCS_FRESH_PROCESSES")
    exported = f"export DOCS_ZYGOTE_DEBUG=$PWD/fallback.txt\n{REFUSED}"  # (a /tmp/ path would be the page's)
    other_page = PageRun(tmp_path / "other", tmp_path / "cache")
    other = other_page.run(Block("p.md", 1, "bash", "bash", exported), exported)
    assert (other.returncode, other.stdout, other.stderr) == (0, fresh.stdout, fresh.stderr)
    assert "differs: ['DOCS_ZYGOTE_DEBUG']" in (other_page.work / "fallback.txt").read_text()


def test_only_the_training_stack_commands_are_routed():
    assert TRAINING_STACK.search("mis-bench train --model m")
    assert TRANSFORMERS_RUN.search("mis-bench run --backend transformers --model m --dataset b")
    assert not TRAINING_STACK.search("mis-bench run --backend transformers --model m -M dtype=float64")
    assert TRAINING_STACK.search("python3 -c \"from raft_trainer import save_tiny_model; save_tiny_model('t')\"")
    assert not TRAINING_STACK.search("mis-bench run --dataset b") and not TRAINING_STACK.search("mis-bench score")
    assert not TRAINING_STACK.search('python3 -c "import mis_icc_metric"')

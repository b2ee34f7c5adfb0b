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


@pytest.mark.slow  # the server imports the training stack (unless the worker has one), the fresh refusal too
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
    # A Python block and a `python3 -c` line that import raft_trainer print what Python's `-` and `-c` give a fresh
    # interpreter (argv, `__main__`, the working directory first on sys.path), forked from the server.
    monkeypatch.delenv("DOCS_FRESH_PROCESSES")
    page = PageRun(tmp_path / "python", tmp_path / "cache")
    ran = [page.run(Block("p.md", 1, "python", "python", PYTHON), PYTHON)]
    ran.append(page.run(Block("p.md", 2, "bash", "bash", PYTHON_C), PYTHON_C))
    for done, what in zip(ran, WHAT, strict=True):
        printed, parent = done.stdout.rsplit(maxsplit=1)  # the last word: the parent's pid
        assert (done.returncode, printed, parent) == (0, what, str(zygote.process.pid)), done.stderr

    # A `python3 -c` line with a variable the block exported (it could change what an import sees) runs fresh.
    exported = f"export DOCS_ZYGOTE_DEBUG=$PWD/fallback.txt\n{PYTHON_C}"  # (a /tmp/ path would be the page's)
    other_page = PageRun(tmp_path / "other", tmp_path / "cache")
    other = other_page.run(Block("p.md", 1, "bash", "bash", exported), exported)
    printed, parent = other.stdout.rsplit(maxsplit=1)
    assert (other.returncode, printed) == (0, WHAT[1]) and parent != str(zygote.process.pid)
    assert "differs: ['DOCS_ZYGOTE_DEBUG']" in (other_page.work / "fallback.txt").read_text()


def test_only_the_training_stack_commands_are_routed():
    assert TRAINING_STACK.search("mis-bench train --model m")
    assert TRANSFORMERS_RUN.search("mis-bench run --backend transformers --model m --dataset b")
    assert not TRAINING_STACK.search("mis-bench run --backend transformers --model m -M dtype=float64")
    assert TRAINING_STACK.search("python3 -c \"from raft_trainer import save_tiny_model; save_tiny_model('t')\"")
    assert not TRAINING_STACK.search("mis-bench run --dataset b") and not TRAINING_STACK.search("mis-bench score")
    assert not TRAINING_STACK.search('python3 -c "import mis_icc_metric"')

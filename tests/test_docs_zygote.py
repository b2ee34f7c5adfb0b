"""The docs runner's shared training-stack process (tests/_docs_zygote.py): a forked `mis-bench train` prints and
exits as a fresh one does, and a block whose environment differs runs fresh."""

from __future__ import annotations

import pytest
from _docs_zygote import Zygote

from _docs_helpers import Block
from _docs_runner import TRAINING_STACK, PageRun

# A refusal: the whole command line runs (flags parsed, settings checked) and ends in one line, exit 2.
REFUSED = (
    "mis-bench train --model_name_or_path m --dataset_dir d --optim paged_adamw_8bit --use_cpu true || echo exit $?\n"
)


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

    # The same command with a variable the block exported (it could change what an import sees) runs fresh.
    monkeypatch.delenv("DOCS_FRESH_PROCESSES")
    exported = f"export DOCS_ZYGOTE_DEBUG=$PWD/fallback.txt\n{REFUSED}"  # (a /tmp/ path would be the page's)
    other_page = PageRun(tmp_path / "other", tmp_path / "cache")
    other = other_page.run(Block("p.md", 1, "bash", "bash", exported), exported)
    assert (other.returncode, other.stdout, other.stderr) == (0, fresh.stdout, fresh.stderr)
    assert "differs: ['DOCS_ZYGOTE_DEBUG']" in (other_page.work / "fallback.txt").read_text()


def test_only_the_training_stack_commands_are_routed():
    assert TRAINING_STACK.search("mis-bench train --model m")
    assert TRAINING_STACK.search("mis-bench run --backend transformers --model m --dataset b")
    assert not TRAINING_STACK.search("mis-bench run --dataset b") and not TRAINING_STACK.search("mis-bench score")

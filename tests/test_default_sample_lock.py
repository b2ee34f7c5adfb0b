"""Two first uses of the default sample at once both succeed: it is generated once, under one lock, and both use
it. The two processes are the ones that made the suite's sample (conftest's `default_sample_cache`), started
together as two terminals' first `mis-bench run` would be; `mis-bench run` gets its sample from `default_sample`."""

from __future__ import annotations

from pathlib import Path

GENERATING = "mis_bench_dataset.synth.sample: generating the embedded default sample"
WAITING = "mis_bench_dataset.toolkit.atomic: waiting for another process generating the sample in"


def test_two_first_uses_started_together_both_succeed_and_generate_once(
    default_sample_first_uses, default_sample_cache
) -> None:
    for use in default_sample_first_uses:
        assert use.returncode == 0, use.stderr[-3000:]
    first, second = (Path(use.stdout.strip()) for use in default_sample_first_uses)
    assert first == second and first.parent.parent == default_sample_cache
    assert (first / "README.md").is_file()
    generated = [GENERATING in use.stderr for use in default_sample_first_uses]
    waited = [WAITING in use.stderr for use in default_sample_first_uses]
    assert sorted(generated) == [False, True]  # one generated it
    assert waited == [not made for made in generated]  # the other waited for it, then used it
    assert not any(Path(default_sample_cache).glob("*/.release.staging-*"))  # no staging folder left behind

"""The transformers backend's expected readout with and without the shared-prefix path (issue 29): the same
predictions within 1e-5 on a tiny random Qwen2 built locally, for both template versions, and version 2's rows of a
dimension sharing far more of their tokens than version 1's."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import raft_trainer.predict as predict
from eval_scripts import DecodingConfig, Prompt, get_backend, render_prompt
from raft_trainer import save_tiny_model

from _harness_helpers import scoring_rows

FIELDS = ("integer_expected", "fraction_expected", "integer_mass", "fraction_mass")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny") / "tiny-qwen2", seed=5)


def _prompts(version: int) -> list[Prompt]:
    rows = scoring_rows(3, dimensions=("empathy", "abc"))
    for row in rows[::2]:  # transcripts of different lengths: padded batches
        row["transcript"] += " I am here with you." * 2
    return [Prompt(r["video_id"], r["dimension"], render_prompt(r, "text", "direct", version=version)) for r in rows]


def _read(model_dir: Path, prompts: list[Prompt], share: bool) -> tuple[np.ndarray, list]:
    """(the digit expectations and masses, the scores and texts) of every prompt, in the prompts' order."""
    backend = get_backend("transformers", str(model_dir), batch_size=2, device="cpu", share_prefix=share)
    completions = sorted(
        backend.complete(prompts, DecodingConfig.for_style("direct", score_from="expected")), key=lambda c: c.index
    )
    values = np.array([[c.expected[f] for f in FIELDS] for c in completions])
    return values, [(c.expected["score"], c.text) for c in completions]


@pytest.mark.parametrize("version", [1, 2])
def test_predictions_with_and_without_the_shared_prefix_are_equal(tiny, version, monkeypatch) -> None:
    shared: list[int] = []
    original = predict._shared_prefix

    def spy(model, prompts, members, device):
        length, cache = original(model, prompts, members, device)
        shared.append(length)
        return length, cache

    monkeypatch.setattr(predict, "_shared_prefix", spy)
    prompts = _prompts(version)
    plain, plain_scores = _read(tiny, prompts, share=False)
    assert shared == []  # the plain path: one pass over every whole prompt
    reused, reused_scores = _read(tiny, prompts, share=True)
    assert len(shared) == 2 and min(shared) > 0  # one prefix per dimension (3 rows each), computed once
    assert plain.shape == (6, len(FIELDS)) and np.abs(plain - reused).max() <= 1e-5
    for (a, text_a), (b, text_b) in zip(plain_scores, reused_scores, strict=True):
        assert text_a == text_b and (a is None) == (b is None)  # the greedy digits, and a score out of [1, 5]
        assert a is None or abs(a - b) <= 1e-5


def test_version_2_rows_of_a_dimension_share_most_of_their_tokens(tiny) -> None:
    """Token ids the rows of a dimension share, with the tiny tokenizer: version 1 only its task text and second
    paragraph, version 2 the rubric as well (recomputed here, not taken from the test above)."""
    from raft_trainer.data import prefilled_prompt_ids
    from raft_trainer.digits import DigitTokens

    backend = get_backend("transformers", str(tiny), device="cpu")
    digits = DigitTokens.from_tokenizer(backend.tokenizer)
    share = {}
    for version in (1, 2):
        ids = [
            prefilled_prompt_ids(backend.tokenizer, digits, [{"role": "user", "content": p.text}])
            for p in _prompts(version)
            if p.dimension == "abc"
        ]
        common = len(os.path.commonprefix(ids))
        share[version] = common / min(len(i) for i in ids)
    assert share[2] > 0.75 > 0.40 > share[1]

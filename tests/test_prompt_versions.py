"""The two versions of the eight templates (issue 29): version 2, laid out for prefix caching, is the default for
`direct` and `cot`; version 1 stays selectable with its hashes; the version is in every results file; requests go
dimension-major; the dry run's prefix reuse and its cost with a cached-input price."""

from __future__ import annotations

import hashlib
import json
import os

import pytest
from datasets import Dataset

from eval_scripts import render_prompt
from eval_scripts.answers.prompts import (
    DEFAULT_PROMPT_VERSION,
    MODALITIES,
    PROMPT_VERSIONS,
    template_hash,
    template_version,
)
from eval_scripts.cli import main
from eval_scripts.harness.ordering import prefix_order
from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS, RUBRIC, BuiltDataset
from mis_bench_dataset.dimensions import ZERO_SHOT_PROMPT_STYLES as TEMPLATE_STYLES
from mis_bench_dataset.protocol import PAPER_TEMPLATE_SHA256

from _harness_helpers import prompt_text, scoring_rows
from _run_args import run_args

# sha256 of every template file. Version 1's are the files every run used before version 2 existed (unchanged);
# a change of wording is a new version, never an edit of a pinned file.
PINS = {
    (1, "text", "direct"): "76428c4b8e79bc5f2ca87051524f2b47ca8f31ef1825162707c914bdadf4c48c",
    (1, "text", "cot"): "e70877a0d324feb2e85735ef5687bad4d0e434a6899b7951b6ca4a7c28df9358",
    (1, "audio+text", "direct"): "bae8d26d1c7758b96b3977b2993294c1aae4cc020fd6ee90ec6ebdf2e17e33de",
    (1, "audio+text", "cot"): "3b39ba5e4578f571c4709ecd8963fbfe5334cc042c5895d87c82ddacae369425",
    (1, "video+text", "direct"): "a23e2335f8364b7f9c02b3ed19372d86454f693f169cf820be9e7eb267cc0c1b",
    (1, "video+text", "cot"): "f8fdeb9cf6e7549733c3b620277036f7d19d59866ca237f9a2bdedc99df7a073",
    (1, "audio+video+text", "direct"): "c88fabc6d789c5202d6c07da38ca2d8e42a09281a73295042c3932f5fbb44eaa",
    (1, "audio+video+text", "cot"): "b168f0dc6322df4f1e16a36c5d3d7411a150e82b101a790295dfaca439d2d9c1",
    (2, "text", "direct"): "127c3978307841131e57307f7a5212bd929f604491bdfa6b0287aa4bea1c00ac",
    (2, "text", "cot"): "735bdffe200555b966ec9e3a017affb7f45f615937032172c3057c580f6acc11",
    (2, "audio+text", "direct"): "d36e732a4296edd57daedc7f6f1400660ad378ec151c1b13c0b45ec363cb55eb",
    (2, "audio+text", "cot"): "214f8a48dd5e82d2055669da35b0e8aa515f84c35f6390a2652f44d3b4add536",
    (2, "video+text", "direct"): "fa3aee83ba12aab4233d5ea0bb574d63be88f34c5ecba22f96472f4a03ed0fd0",
    (2, "video+text", "cot"): "95cb9a71a06a4bacb79bad740d04e88b8f937a871cde07e4712448b3edc03773",
    (2, "audio+video+text", "direct"): "befb8972122ce7c04689f6f5daadb136fcd428cc4afe7c2b3111535bb85dca45",
    (2, "audio+video+text", "cot"): "13cddcc07487fe95189ab0a66c4ed867caa5648d2acbfa14cac576efdc86642b",
}
# Version 2's request for scoring_rows(1)'s first row, text setting (prompt sha256, cache key, request body sha256):
# test_protocol_harness.GOLDEN holds version 1's.
GOLDEN_V2 = {
    "direct": (
        "55b4495371518b37c940160554b86565b4faab88987b63678220597e6b406d97",
        "473fd50dce95ed728c0daeacaec5c37a10aed1c876948ed00ab0167a379b3874",
        "001d510b792d93493a8a6d73d8c88996555f3317bde68c98ac683381e295e4a2",
    ),
    "cot": (
        "44a8a5299cb829b70dfd234a26ab64ab48ebdd75d3cb8f56edded91bd2aae501",
        "c9b922f0648b640e70e0020427faee1d0a6cb85c516e2e79751dc7a0402d55a0",
        "ec1ac8a9b0a51efc78d68bd826c216559442c141636a19cd84fcac4bb04a6d21",
    ),
}
MODEL = "fake-model"


def test_every_template_file_has_its_pinned_hash_and_paper_has_one_wording() -> None:
    assert PROMPT_VERSIONS == (1, 2) and DEFAULT_PROMPT_VERSION == 2
    got = {(v, m, s): template_hash(m, s, v) for v in PROMPT_VERSIONS for m in MODALITIES for s in TEMPLATE_STYLES}
    assert got == PINS
    assert all(template_hash(m, "direct") == PINS[(2, m, "direct")] for m in MODALITIES)  # the default
    assert {template_hash(m, "paper", v) for m in MODALITIES for v in PROMPT_VERSIONS} == {PAPER_TEMPLATE_SHA256}
    assert (template_version("direct", 1), template_version("cot"), template_version("paper", 1)) == (1, 2, None)
    with pytest.raises(ValueError, match="unknown prompt version 3; expected one of 1, 2"):
        template_hash("text", "direct", 3)


@pytest.mark.parametrize("style", TEMPLATE_STYLES)
def test_version_2_requests_are_pinned(style) -> None:
    from eval_scripts import RunConfig
    from eval_scripts.backends.openai_backend import OpenAIBackend
    from eval_scripts.harness.context import prepare_run

    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1")
    context = prepare_run(
        RunConfig(backend="openai", model="m", prompt_style=style), backend, scoring=Dataset.from_list(scoring_rows(1))
    )
    prompt = context.prompts[0]
    body = backend.request_body(prompt, context.decoding)
    body_hash = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    assert (prompt.prompt_hash, context.keys[0], body_hash) == GOLDEN_V2[style]


def _positions(text: str, dimension: str, transcript: str) -> dict[str, int]:
    rubric = RUBRIC[dimension]
    return {
        "name": text.index(DIMENSION_BY_KEY[dimension].name),
        "criterion": text.index(rubric.criterion),
        "score 5": text.index(rubric.description(5)),
        "examples": text.index("Example 1."),
        "media": text.index("MEDIA-BLOCK") if "MEDIA-BLOCK" in text else None,
        "transcript": text.index(transcript),
        "answer": text.index("Final score: x.y" if "Final score: x.y" in text else "Output only the numeric score"),
    }


@pytest.mark.parametrize("modality", MODALITIES)
@pytest.mark.parametrize("style", TEMPLATE_STYLES)
def test_version_2_puts_what_a_dimension_shares_first_and_the_response_last(modality, style) -> None:
    from eval_scripts.answers.prompts import FewShotExample

    rows = scoring_rows(2)
    shots = [FewShotExample("AB0001_T1_Luke", "An example.", 3.7)]
    block = "" if modality == "text" else "MEDIA-BLOCK"
    for dimension in DIMENSION_KEYS:
        one, two = (r for r in rows if r["dimension"] == dimension)
        texts = [render_prompt(r, modality, style, media_block=block, few_shot=shots) for r in (one, two)]
        at = _positions(texts[0], dimension, one["transcript"])
        # version 2: name, rubric and examples, then the media, the transcript and the answer instruction
        assert at["name"] < at["criterion"] < at["score 5"] < at["examples"] < at["transcript"] < at["answer"]
        assert at["media"] is None if modality == "text" else at["examples"] < at["media"] < at["transcript"]
        # two videos' prompts of a dimension are equal up to the response: everything before it is shared
        shared = os.path.commonprefix(texts)
        assert texts[0][: at["examples"]] in shared and one["transcript"] not in shared
        assert len(shared) >= (at["media"] or at["transcript"]) - 300  # at most the setting's own sentence after it
        # version 1: the dimension's name before the transcript, its rubric after it
        old = render_prompt(one, modality, style, media_block=block, few_shot=shots, version=1)
        was = _positions(old, dimension, one["transcript"])
        assert was["name"] < was["transcript"] < was["criterion"] < was["examples"] < was["answer"]


def test_requests_go_dimension_major_across_settings() -> None:
    from eval_scripts import Prompt

    requests = [
        (modality, Prompt(row["video_id"], row["dimension"], render_prompt(row, modality, style, media_block="M")))
        for modality in ("text", "video+text")
        for style in TEMPLATE_STYLES
        for row in scoring_rows(2)
    ]
    sent = [requests[i] for i in prefix_order(requests)]
    dimensions = [prompt.dimension for _, prompt in sent]
    assert dimensions == [d for d in DIMENSION_KEYS for _ in range(8)]  # 2 settings x 2 styles x 2 videos each
    first = sent[:8]  # within a dimension: a setting's requests together, a response's two styles side by side
    assert [m for m, _ in first] == ["text"] * 4 + ["video+text"] * 4
    assert [p.video_id for _, p in first[:4]] == [first[0][1].video_id] * 2 + [first[2][1].video_id] * 2


def _argv(build, out, *extra: str) -> list[str]:
    return run_args(build, out, None, *extra, model=MODEL, limit=2)


def test_results_record_the_version_and_version_1_runs_in_its_own_folder(
    synthetic_build, tmp_path, capsys, chat_server
) -> None:
    rows = BuiltDataset.of(synthetic_build).rows("test")
    with chat_server() as server:
        for extra in ((), ("--prompt-version", "1"), ("--prompt", "paper")):
            assert main([*_argv(synthetic_build, tmp_path, "--base-url", server.base_url), *extra]) == 0
    capsys.readouterr()
    bodies = {1: server.bodies[16:32], 2: server.bodies[:16]}
    folders = {2: "text__direct", 1: "text__direct__prompts-v1", None: "text__paper"}
    for version, folder in folders.items():
        results = json.loads((tmp_path / MODEL / folder / "results.json").read_text())
        decoding = results["system"]["decoding"]
        assert decoding["template_version"] == version
        expected = PINS[(version, "text", "direct")] if version else PAPER_TEMPLATE_SHA256
        assert decoding["template_sha256"] == expected
    for version, sent in bodies.items():  # what the server got is the version's rendering of the row
        for body in sent:
            text = prompt_text(body)
            row = next(r for r in rows if r["transcript"].strip() in text and _named(r, text))
            assert text == render_prompt(row, "text", "direct", version=version)
    assert main([*_argv(synthetic_build, tmp_path), "--prompt-version", "3"]) == 2
    assert "--prompt-version" in capsys.readouterr().err


def _named(row: dict, text: str) -> bool:
    return f"one FIS dimension: {DIMENSION_BY_KEY[row['dimension']].name}." in text


def _dry_run(build, capsys, *extra: str) -> dict:
    capsys.readouterr()
    argv = [a for a in _argv(build, "unused-out", "--grid", "--dry-run", "--json") if a not in ("--limit", "2")]
    assert main([*argv, *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_dry_run_prefix_reuse_and_the_cost_with_a_cached_input_price(synthetic_build, tmp_path, monkeypatch, capsys):
    """The grid of the 40-video synthetic build's test split (docs/scaling.md's example): at least 80% of the
    prompt characters repeat the previous request's start with version 2, 57% with version 1."""
    monkeypatch.chdir(tmp_path)
    prices = ("--price-in", "2", "--price-out", "8")
    new = _dry_run(synthetic_build, capsys, *prices, "--price-cached-in", "0.5")
    old = _dry_run(synthetic_build, capsys, *prices, "--prompt-version", "1")
    assert new["requests"] == old["requests"] == 4 * 8 * 8  # 4 videos x 8 dimensions x 8 settings
    assert new["prefix"]["reused_chars_share"] >= 0.80 > 0.60 > old["prefix"]["reused_chars_share"]
    tokens, completion = new["prompt_tokens_estimate"], new["completion_tokens_estimate"]
    cached = round(tokens * new["prefix"]["reused_chars_share"])
    assert new["cached_prompt_tokens_estimate"] == cached and new["price_cached_in_per_million"] == 0.5
    assert new["cost_estimate"] == pytest.approx((tokens * 2 + completion * 8) / 1e6, rel=1e-12)
    with_cache = ((tokens - cached) * 2 + cached * 0.5 + completion * 8) / 1e6
    assert new["cost_estimate_with_cache"] == pytest.approx(with_cache, rel=1e-12)
    assert new["cost_max_with_cache"] > new["cost_estimate_with_cache"]
    assert old["cost_estimate_with_cache"] is None  # no cached-input price given
    capsys.readouterr()
    assert main([*_argv(synthetic_build, "unused-out", "--dry-run", "--price-cached-in", "0.5")]) == 2
    assert "--price-cached-in" in capsys.readouterr().err

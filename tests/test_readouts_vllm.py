"""The vLLM backend's expected-score readout, with a fake engine object standing in for `vllm` (GPU only): the
request asks for logprobs, and the expectation read from vLLM's output equals the hand computation."""

from __future__ import annotations

import math
import sys
import types
from dataclasses import dataclass

import pytest

from eval_scripts import DecodingConfig, Prompt, get_backend
from eval_scripts.answers.expected_score import TOP_LOGPROBS

from _readout_helpers import FRACTION_TOP, INTEGER_TOP, hand_expected
from _run_args import backend_keywords, run_args


@dataclass
class Logprob:  # vllm.sequence.Logprob
    logprob: float
    rank: int
    decoded_token: str


class FakeLLM:
    """`vllm.LLM`: answers "3.5" with the helper's top candidates at the digit positions."""

    params: list = []
    engines: list = []

    def __init__(self, model, **options):
        self.model = model
        FakeLLM.engines.append(options)

    def chat(self, conversations, params, use_tqdm=False):
        FakeLLM.params.append(params)
        vocabulary = {token: i for i, token in enumerate(["3", "4", " 2", "The", ".", "5", "0", "\n"])}

        def position(written, top):
            entries = {vocabulary[t]: Logprob(math.log(p), rank, t) for rank, (t, p) in enumerate(top, start=1)}
            entries.setdefault(vocabulary[written], Logprob(0.0, 1, written))
            return entries

        generated = types.SimpleNamespace(
            text="3.5",
            token_ids=[vocabulary["3"], vocabulary["."], vocabulary["5"]],
            logprobs=[position("3", INTEGER_TOP), position(".", [(".", 1.0)]), position("5", FRACTION_TOP)]
            if params.logprobs
            else None,
            finish_reason="stop",
        )
        return [types.SimpleNamespace(outputs=[generated], prompt_token_ids=[1, 2, 3]) for _ in conversations]


class SamplingParams:
    def __init__(self, **kwargs):
        self.logprobs = kwargs.pop("logprobs", None)
        self.kwargs = kwargs


@pytest.fixture
def fake_vllm(monkeypatch):
    module = types.ModuleType("vllm")
    module.LLM, module.SamplingParams = FakeLLM, SamplingParams
    monkeypatch.setitem(sys.modules, "vllm", module)
    FakeLLM.params = []
    return module


def test_vllm_expected_readout_asks_for_logprobs_and_equals_the_hand_computation(fake_vllm) -> None:
    backend = get_backend("vllm", "fake-model")
    prompts = [Prompt("AB0101_T1_Jessica", "wau", "Rate it."), Prompt("AB0102_T1_Luke", "wau", "Rate it too.")]
    completions = list(backend.complete(prompts, DecodingConfig.for_style("direct", score_from="expected")))
    assert FakeLLM.params[-1].logprobs == TOP_LOGPROBS and FakeLLM.params[-1].kwargs["max_tokens"] == 4
    assert [c.expected["score"] for c in completions] == [pytest.approx(hand_expected(), abs=1e-12)] * 2
    assert all(c.text == "3.5" and c.expected["integer_mass"] == pytest.approx(0.9) for c in completions)
    (plain,) = backend.complete(prompts[:1], DecodingConfig.for_style("direct"))
    assert FakeLLM.params[-1].logprobs is None and plain.expected is None


def _chat_sizes(monkeypatch, fake_vllm, argv: list[str], n: int) -> list[int]:
    """The prompts per `LLM.chat` call of a `mis-bench run --backend vllm` command line over `n` prompts."""
    from eval_scripts.cli import build_parser

    sizes = []
    original = FakeLLM.chat

    def counted(self, conversations, params, use_tqdm=False):
        sizes.append(len(conversations))
        return original(self, conversations, params, use_tqdm)

    monkeypatch.setattr(FakeLLM, "chat", counted)
    args = build_parser().parse_args(
        run_args(None, None, None, *argv, backend="vllm", bootstrap=None, no_progress=False)
    )
    backend = get_backend("vllm", "fake-model", **backend_keywords(args))
    prompts = [Prompt(f"AB01{i:02d}_T1_Jessica", "wau", f"Rate {i}.") for i in range(n)]
    assert len(list(backend.complete(prompts, DecodingConfig.for_style("direct")))) == n
    return sizes


def test_vllm_gets_every_prompt_in_one_call_unless_a_batch_size_is_given(monkeypatch, fake_vllm) -> None:
    """vLLM's scheduler sizes its batches: the transformers backend's 8 is not inherited; --batch-size still cuts."""
    assert _chat_sizes(monkeypatch, fake_vllm, [], 20) == [20]
    assert _chat_sizes(monkeypatch, fake_vllm, ["--batch-size", "8"], 20) == [8, 8, 4]


def test_vllm_engine_settings_arrive_typed_through_dash_m(monkeypatch, fake_vllm) -> None:
    """`-M` reaches `vllm.LLM` typed; `--dtype` (an alias kept from before `-M`) fills the same option; the
    settings that change answers are the ones recorded (`answer_options`)."""
    from eval_scripts.backends.backend_options import answer_options

    FakeLLM.engines = []
    argv = ["-M", "tensor_parallel_size=2", "-M", "max_model_len=4096", "-M", "gpu_memory_utilization=0.5"]
    _chat_sizes(monkeypatch, fake_vllm, [*argv, "--dtype", "bfloat16", "-M", "quantization=fp8"], 3)
    (engine,) = FakeLLM.engines
    assert engine == {
        "dtype": "bfloat16",
        "trust_remote_code": False,
        "tensor_parallel_size": 2,
        "gpu_memory_utilization": 0.5,
        "max_model_len": 4096,
        "quantization": "fp8",
    }
    backend = get_backend("vllm", "fake-model", tensor_parallel_size=2, max_model_len=4096, dtype="bfloat16")
    assert answer_options(backend.options) == {"dtype": "bfloat16", "tensor_parallel_size": 2}

"""The GPU check (`pytest -m gpu`): what a CPU cannot run, ready for the day a GPU is lent, on tiny random models built
here (nothing downloaded), about a few minutes on one GPU. Skipped without CUDA, so CI never fails on it.

- QLoRA: 4-bit NF4 (bitsandbytes) + LoRA + bf16 RAFT steps with `paged_adamw_8bit`: the loss finite and falling.
- `predict_scores` in bf16 against fp32 on the same weights: the expected scores within `BF16_TOLERANCE`.
- the vLLM backend on a tiny model (skipped without vllm), in its own process (vLLM takes most of the GPU memory).
- a DeepSpeed ZeRO-2 step through `mis-bench train --accelerate_config` (skipped without deepspeed).
- the time of one RAFT step against one CE step (same model, rows and batch).
- CoT-RAFT and GRPO steps (bf16, LoRA) timed against RAFT's, the GRPO adapter saved.

Each test adds its figures to a JSON file named by `MIS_BENCH_GPU_REPORT` (rewritten after every test, so a
run cut short keeps what it measured); docs/benchmarks.md names the command.
"""

from __future__ import annotations

import copy
import json
import math
import os
import statistics
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from raft_trainer import ReadoutOptions  # noqa: E402  (loads torch)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="the GPU check needs a CUDA device"),
]

REPO = Path(__file__).resolve().parents[1]
REPORT_ENV = "MIS_BENCH_GPU_REPORT"
# bf16 keeps 8 bits of mantissa: softmax probabilities move by ~1e-2 relative at most on these logits, so an
# expected score in [1, 5] by a few hundredths; 0.1 is a tenth of a score point, the score's own resolution.
BF16_TOLERANCE = 0.1


@pytest.fixture(scope="module")
def report():
    """The figures of this run, written to $MIS_BENCH_GPU_REPORT after each test (nothing written when unset)."""
    import transformers

    figures = {
        "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "synthetic": True,  # every figure here is from random tiny models on toy or synthetic rows
    }

    def record(name: str, values: dict) -> None:
        figures[name] = values
        path = os.environ.get(REPORT_ENV)
        if path:
            Path(path).write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")

    return record


def _tiny_folder(tmp_path: Path, **sizes) -> Path:
    """A random Qwen2 and its tokenizer saved for loading by id (a folder), as a user's model would be."""
    from raft_trainer.tiny import TinySize, tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer, seed=0, size=TinySize(**sizes))
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    return tmp_path


def _config(tmp_path: Path, **overrides):
    from raft_trainer import RAFTConfig

    base = dict(
        output_dir=str(tmp_path / "out"),
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        logging_steps=1,
        max_length=None,
        bf16=True,
        use_cpu=False,
        seed=0,
        lr_scheduler_type="constant",
        train_sampling_strategy="sequential",
    )
    return RAFTConfig(**{**base, **overrides})


def _lora(targets=("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")):
    from peft import LoraConfig

    return LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0, target_modules=list(targets), task_type="CAUSAL_LM")


def test_qlora_4bit_lora_bf16_raft_steps_with_paged_adamw_8bit(tmp_path, report):
    pytest.importorskip("bitsandbytes")
    from transformers import BitsAndBytesConfig

    from raft_trainer import RAFTTrainer
    from raft_trainer.tiny import tiny_tokenizer

    from _raft_helpers import short_encoded_toy

    folder = _tiny_folder(tmp_path / "tiny", hidden=64, layers=2)
    quantization = BitsAndBytesConfig(
        load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16
    )
    args = _config(
        tmp_path,
        max_steps=30,
        per_device_train_batch_size=8,
        learning_rate=1e-2,
        optim="paged_adamw_8bit",
        model_init_kwargs={"dtype": "bfloat16"},
    )
    started = time.perf_counter()
    trainer = RAFTTrainer(
        str(folder),
        args=args,
        train_dataset=short_encoded_toy(tiny_tokenizer(), 240, seed=0),
        quantization_config=quantization,
        peft_config=_lora(),
    )
    assert getattr(trainer.model, "is_loaded_in_4bit", False) or any(
        "Linear4bit" in type(m).__name__ for m in trainer.model.modules()
    )
    trainer.train()
    losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
    report(
        "qlora_raft",
        {
            "steps": len(losses),
            "losses": losses,
            "first5_mean": statistics.mean(losses[:5]),
            "last5_mean": statistics.mean(losses[-5:]),
            "seconds": time.perf_counter() - started,
            "peak_memory_mib": torch.cuda.max_memory_allocated() / 2**20,
        },
    )
    assert len(losses) == 30 and all(math.isfinite(x) for x in losses)
    assert statistics.mean(losses[-5:]) < statistics.mean(losses[:5])


def test_expected_score_predict_in_bf16_matches_fp32(tmp_path, report):
    from raft_trainer import RAFTConfig, predict_scores
    from raft_trainer.tiny import TinySize, tiny_model, tiny_tokenizer

    from _harness_helpers import scoring_rows

    tokenizer = tiny_tokenizer()
    rows = scoring_rows(6)  # 6 videos x 8 dimensions, with the rubric prompts
    config = RAFTConfig(str(tmp_path), max_length=None, use_cpu=False, bf16=False, report_to="none")
    fp32_model = tiny_model(tokenizer, seed=0, size=TinySize(hidden=256, layers=4)).cuda().eval()
    bf16_model = copy.deepcopy(fp32_model).to(torch.bfloat16)  # the same weights, rounded to bf16
    figures = {"rows": len(rows)}
    for method in ("greedy", "exact"):
        fp32 = predict_scores(
            fp32_model, tokenizer, rows, config, readout=ReadoutOptions(method=method, show_progress=False)
        )
        bf16 = predict_scores(
            bf16_model, tokenizer, rows, config, readout=ReadoutOptions(method=method, show_progress=False)
        )
        diff = abs(fp32 - bf16)
        figures[method] = {"max_abs_diff": float(diff.max()), "mean_abs_diff": float(diff.mean())}
    figures["tolerance"] = BF16_TOLERANCE
    report("predict_bf16_vs_fp32", figures)
    assert all(figures[m]["max_abs_diff"] <= BF16_TOLERANCE for m in ("greedy", "exact")), figures


def _step_timer():
    """A callback recording the wall time of each optimizer step, the GPU synchronised at both ends."""
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            torch.cuda.synchronize()
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            torch.cuda.synchronize()
            self.times.append(time.perf_counter() - self._start)

    return StepTimer()


def test_one_raft_step_against_one_ce_step(tmp_path, report):
    import datasets

    from raft_trainer import RAFTTrainer
    from raft_trainer.tiny import TinySize, tiny_model, tiny_tokenizer

    from _harness_helpers import scoring_rows

    tokenizer = tiny_tokenizer()
    rows = datasets.Dataset.from_list(scoring_rows(12))  # 96 rubric prompts
    figures = {}
    for objective in ("raft", "ce"):
        timer = _step_timer()
        trainer = RAFTTrainer(
            tiny_model(tokenizer, seed=0, size=TinySize(hidden=512, layers=4, vocab_size=32768)).to(torch.bfloat16),
            args=_config(tmp_path, raft_objective=objective, max_steps=12, per_device_train_batch_size=8),
            train_dataset=rows,
            processing_class=tokenizer,
            peft_config=_lora(("q_proj", "v_proj")),
            callbacks=[timer],
        )
        trainer.train()
        steady = timer.times[2:]  # the first steps warm the kernels and the allocator
        figures[objective] = {"median_step_s": statistics.median(steady), "steps_timed": len(steady)}
    figures["raft_over_ce"] = figures["raft"]["median_step_s"] / figures["ce"]["median_step_s"]
    figures["setting"] = "Qwen2 hidden 512, 4 layers, vocab 32768, bf16, LoRA q/v, batch 8 rubric prompts"
    report("raft_vs_ce_step", figures)
    assert 0 < figures["raft_over_ce"] < 3  # one forward either way; RAFT adds two positions' softmax


def test_deepspeed_zero2_step_through_mis_bench_train(tmp_path, synthetic_build, report):
    pytest.importorskip("deepspeed")
    import yaml

    from raft_trainer.accelerate_configs import config_path

    folder = _tiny_folder(tmp_path / "tiny")
    one_gpu = tmp_path / "zero2_one_gpu.yaml"  # the shipped ZeRO-2 file, by path, for the one GPU lent
    one_gpu.write_text(yaml.safe_dump({**yaml.safe_load(config_path("zero2").read_text()), "num_processes": 1}))
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "eval_scripts.cli", "train", "--accelerate_config", str(one_gpu)]
    cmd += ["--model_name_or_path", str(folder), "--dataset_dir", str(synthetic_build), "--output_dir", str(out)]
    cmd += ["--max_steps", "2", "--max_length", "2048", "--bf16", "true", "--logging_steps", "1", "--no_predict"]
    env = dict(os.environ, HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=400)
    seconds = time.perf_counter() - started
    logs = json.loads((out / "trainer_state.json").read_text())["log_history"] if proc.returncode == 0 else []
    losses = [h["loss"] for h in logs if "loss" in h]
    report("deepspeed_zero2", {"returncode": proc.returncode, "losses": losses, "seconds_with_launch": seconds})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert len(losses) == 2 and all(math.isfinite(x) for x in losses)
    assert (out / "adapter_model.safetensors").is_file()


VLLM_SCRIPT = textwrap.dedent(
    """
    import json, sys, time
    from eval_scripts.backends import DecodingConfig, get_backend
    from eval_scripts.answers.prompts import Prompt
    started = time.perf_counter()
    backend = get_backend("vllm", sys.argv[1], dtype="bfloat16", max_model_len=2048)
    loaded = time.perf_counter()
    prompts = [Prompt(f"ZZ{1000 + i}_T1_Luke", "wau", f"Rate response {i}: 'I hear you.'") for i in range(64)]
    done = list(backend.complete(prompts, DecodingConfig.for_style("direct", score_from="expected")))
    end = time.perf_counter()
    scored = [c for c in done if c.expected and c.expected.get("score") is not None]
    print(json.dumps({"completions": len(done), "expected_scores": len(scored), "load_s": loaded - started,
                      "rows_per_s": len(done) / (end - loaded)}))
    """
)


def test_vllm_backend_on_a_tiny_model(tmp_path, report):
    """Last, in its own process: vLLM reserves most of the GPU's memory for its KV cache."""
    pytest.importorskip("vllm")
    folder = _tiny_folder(tmp_path / "tiny", hidden=256, layers=2)  # head size 64, which vLLM's kernels take
    torch.cuda.empty_cache()  # vLLM sizes its cache from the memory free when it starts
    path = os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONPATH=path)
    proc = subprocess.run(
        [sys.executable, "-c", VLLM_SCRIPT, str(folder)], cwd=REPO, env=env, capture_output=True, text=True, timeout=400
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout.strip().splitlines()[-1])
    report("vllm_backend", figures)
    assert figures["completions"] == 64


def test_a_cot_raft_step_and_a_grpo_step_against_a_raft_step(tmp_path, report):
    """The methods beside MIS-RAFT on the GPU (issue 40): CoT-RAFT and GRPO steps in bf16 with LoRA, finite, timed
    against RAFT's on the same rubric prompts (2 a step), and the GRPO adapter saved."""
    from types import SimpleNamespace

    import datasets

    from raft_trainer import RAFTTrainer, make_grpo_trainer
    from raft_trainer.cot import RATIONALE_COLUMN
    from raft_trainer.tiny import WORDS, TinySize, tiny_model, tiny_tokenizer

    from _raft_helpers import toy_rows

    tokenizer = tiny_tokenizer()
    rationale = " ".join(WORDS * 8)  # 96 words of analysis
    rows = datasets.Dataset.from_list([{**r, RATIONALE_COLUMN: rationale} for r in toy_rows(16, seed=0)])
    figures = {}
    for method in ("raft", "cot-raft", "grpo"):
        timer = _step_timer()
        model = tiny_model(tokenizer, seed=0, size=TinySize(hidden=512, layers=4, vocab_size=32768)).to(torch.bfloat16)
        if method == "grpo":
            script = SimpleNamespace(num_generations=4, max_completion_length=16, grpo_temperature=1.0, grpo_beta=0.0)
            args = _config(tmp_path, max_steps=6, per_device_train_batch_size=8)
            trainer = make_grpo_trainer(
                model, args, script, rows, tokenizer, peft_config=_lora(("q_proj", "v_proj")), callbacks=[timer]
            )
        else:
            cot = {"completion_style": "cot", "raft_objective": "raft+ce"} if method == "cot-raft" else {}
            trainer = RAFTTrainer(
                model,
                args=_config(tmp_path, max_steps=6, per_device_train_batch_size=2, **cot),
                train_dataset=rows,
                processing_class=tokenizer,
                peft_config=_lora(("q_proj", "v_proj")),
                callbacks=[timer],
            )
        trainer.train()
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        assert losses and all(math.isfinite(x) for x in losses), (method, losses)
        steady = timer.times[2:]
        figures[method] = {"median_step_s": statistics.median(steady), "steps_timed": len(steady), "losses": losses}
        if method == "grpo":
            trainer.save_model(str(tmp_path / "grpo"))
            assert (tmp_path / "grpo" / "adapter_model.safetensors").is_file()
    for method in ("cot-raft", "grpo"):
        figures[f"{method}_over_raft"] = figures[method]["median_step_s"] / figures["raft"]["median_step_s"]
    figures["setting"] = (
        "Qwen2 hidden 512, 4 layers, vocab 32768, bf16, LoRA q/v, 2 rubric prompts a step; CoT-RAFT: a 96-word "
        "rationale, raft+ce; GRPO: 4 answers per prompt, at most 16 tokens"
    )
    report("methods_step", figures)


def test_a_step_of_each_training_method_against_raft(tmp_path, report):
    """Issue 40's methods on the GPU, bf16 and LoRA q/v: steps of raft, ntl, raft+ntl (the number token loss) and the
    regression head (`Qwen2ForSequenceClassification` with one output) on the same rubric prompts; each loss finite,
    each median step timed against raft's."""
    import datasets
    from transformers import Qwen2ForSequenceClassification

    from raft_trainer import RAFTTrainer
    from raft_trainer.tiny import TinySize, tiny_model, tiny_tokenizer

    from _harness_helpers import scoring_rows

    tokenizer = tiny_tokenizer()
    rows = datasets.Dataset.from_list(scoring_rows(12))  # 96 rubric prompts
    methods = {"raft": {}, "ntl": {"raft_objective": "ntl"}, "raft+ntl": {"raft_objective": "raft+ntl"}}
    methods["regression"] = {"head": "regression"}
    figures = {}
    for name, fields in methods.items():
        model = tiny_model(tokenizer, seed=0, size=TinySize(hidden=512, layers=4, vocab_size=32768))
        if name == "regression":
            config = model.config
            config.num_labels = 1
            model = Qwen2ForSequenceClassification(config)
        timer = _step_timer()
        trainer = RAFTTrainer(
            model.to(torch.bfloat16),
            args=_config(tmp_path, max_steps=12, per_device_train_batch_size=8, learning_rate=1e-4, **fields),
            train_dataset=rows,
            processing_class=tokenizer,
            peft_config=_lora(("q_proj", "v_proj")),
            callbacks=[timer],
        )
        trainer.train()
        losses = [h["loss"] for h in trainer.state.log_history if "loss" in h]
        figures[name] = {
            "median_step_s": statistics.median(timer.times[2:]),
            "first_loss": losses[0],
            "last_loss": losses[-1],
            "finite": all(math.isfinite(v) for v in losses),
        }
    for name in methods:
        figures[name]["over_raft"] = figures[name]["median_step_s"] / figures["raft"]["median_step_s"]
    figures["setting"] = "Qwen2 hidden 512, 4 layers, vocab 32768, bf16, LoRA q/v, batch 8 rubric prompts, 12 steps"
    report("training_methods_step", figures)
    assert all(figures[name]["finite"] for name in methods), figures
    assert all(0 < figures[name]["over_raft"] < 3 for name in methods), figures

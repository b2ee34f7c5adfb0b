"""Cost per optimizer step of the training methods beside MIS-RAFT, against MIS-RAFT's, on one machine in one run.

    python3 benchmarks/bench_methods.py [--hidden 32 --layers 2 --steps 6 --rationale-words 96 --json PATH]

Variants, each on the same rows (the real rubric prompts of toy transcripts, 2 prompts a step) with LoRA on
q_proj/v_proj, in its own spawned process (so its peak resident memory is its own):

- `raft`: RAFTTrainer, `raft_objective: raft` (the baseline: what a user of the toolkit runs today);
- `cot-raft`: CoT-RAFT (`completion_style: cot`, `raft+ce`) with a rationale of `--rationale-words` words;
- `grpo-2`, `grpo-4`: `--method grpo` with 2 and 4 sampled answers per prompt (`max_completion_length` 16).

The model is the toolkit's tiny random Qwen2 (`raft_trainer.tiny`, hidden 32, 2 layers) unless `--hidden` /
`--layers` say otherwise; nothing is downloaded. Each variant's median step time over `--steps` steps after one
warm-up step, and its ratio to `raft`'s, print as a Markdown table; `--json PATH` writes the figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import resource
import statistics
import sys
import time
from pathlib import Path
from types import SimpleNamespace

from raft_trainer.tiny import TinySize

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

VARIANTS = ("raft", "cot-raft", "grpo-2", "grpo-4")
PROMPTS_PER_STEP = 2


def _timer():
    from transformers import TrainerCallback

    class StepTimer(TrainerCallback):
        def __init__(self):
            self.times: list[float] = []
            self._start = 0.0

        def on_step_begin(self, args, state, control, **kwargs):
            self._start = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self._start)

    return StepTimer()


def _variant(opts: dict, variant: str, queue) -> None:
    import datasets
    import torch
    from peft import LoraConfig

    from raft_trainer.config import RAFTConfig
    from raft_trainer.cot import RATIONALE_COLUMN
    from raft_trainer.grpo import make_grpo_trainer
    from raft_trainer.tiny import WORDS, tiny_model, tiny_tokenizer
    from raft_trainer.trainer import RAFTTrainer

    from _raft_helpers import toy_rows

    torch.set_num_threads(1)
    tokenizer = tiny_tokenizer()
    model = tiny_model(tokenizer, size=TinySize(hidden=opts["hidden"], layers=opts["layers"]))
    steps = opts["steps"] + 1
    rationale = " ".join((WORDS * (opts["rationale_words"] // len(WORDS) + 1))[: opts["rationale_words"]])
    rows = [{**row, RATIONALE_COLUMN: rationale} for row in toy_rows(PROMPTS_PER_STEP * steps, seed=0)]
    lora = LoraConfig(r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM")
    timer = _timer()
    common = dict(
        output_dir=opts["out"],
        report_to="none",
        use_cpu=True,
        max_length=None,
        save_strategy="no",
        disable_tqdm=True,
        logging_steps=1,
        seed=0,
        max_steps=steps,
        lr_scheduler_type="constant",
    )
    if variant.startswith("grpo"):
        generations = int(variant.split("-")[1])
        script = SimpleNamespace(
            num_generations=generations, max_completion_length=16, grpo_temperature=1.0, grpo_beta=0.0
        )
        config = RAFTConfig(**common, per_device_train_batch_size=PROMPTS_PER_STEP * generations)
        trainer = make_grpo_trainer(
            model, config, script, datasets.Dataset.from_list(rows), tokenizer, peft_config=lora, callbacks=[timer]
        )
    else:
        cot = {"completion_style": "cot", "raft_objective": "raft+ce"} if variant == "cot-raft" else {}
        config = RAFTConfig(**common, per_device_train_batch_size=PROMPTS_PER_STEP, **cot)
        trainer = RAFTTrainer(
            model,
            args=config,
            train_dataset=datasets.Dataset.from_list(rows),
            processing_class=tokenizer,
            peft_config=lora,
            callbacks=[timer],
        )
    trainer.train()
    timed = timer.times[1:]  # the first step warms the allocator
    queue.put(
        {
            "median_step_s": statistics.median(timed),
            "steps_timed": len(timed),
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
    )


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--steps", type=int, default=6, help="timed steps (after 1 warm-up step)")
    p.add_argument("--rationale-words", type=int, default=96, help="CoT-RAFT: words of the rationale")
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    import tempfile

    context = mp.get_context("spawn")
    figures = {}
    with tempfile.TemporaryDirectory(prefix="bench-methods-") as out:
        opts = {**vars(args), "json": None, "out": out}
        for variant in VARIANTS:
            queue = context.Queue()
            process = context.Process(target=_variant, args=(opts, variant, queue))
            process.start()
            figures[variant] = queue.get()
            process.join()
    base = figures["raft"]["median_step_s"]
    print(f"| method | median step (s) | x RAFT | peak RSS (MB) |  ({PROMPTS_PER_STEP} prompts a step)")
    print("|---|---|---|---|")
    for variant, f in figures.items():
        print(f"| {variant} | {f['median_step_s']:.3f} | {f['median_step_s'] / base:.1f} | {f['peak_rss_mb']:.0f} |")
    if args.json:
        args.json.write_text(json.dumps({"options": vars(args) | {"json": str(args.json)}, **figures}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

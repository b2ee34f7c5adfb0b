"""The trainer's methods, cost per step against MIS-RAFT's: raft, ce, ntl, raft+ntl and the regression head, on
one randomly initialised Qwen2 (no download) with the real MIS-Bench prompt (rubric + transcript), LoRA on q/v.

    python3 benchmarks/bench_objectives.py [--hidden 256 --layers 4 --vocab 32768 --steps 12 --rows 32] [--json PATH]

The step times are taken as `bench_raft.py` takes them: the methods alternate step by step in random order in one
process (fair on a busy machine), 2 warm-up steps, the median of the rest; each method's model is built from the
same seed (the regression head: the same backbone config with one output, `Qwen2ForSequenceClassification`).
Prints a Markdown table (median step, ratio to raft) and the process's peak resident memory.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

METHODS = {  # name -> RAFTConfig fields
    "raft": {},
    "ce": {"raft_objective": "ce"},
    "ntl": {"raft_objective": "ntl"},
    "raft+ntl": {"raft_objective": "raft+ntl"},
    "regression": {"head": "regression"},
}


def _trainers(opts: dict) -> dict:
    import datasets
    import torch
    from bench_raft import _common_args, _setup
    from peft import LoraConfig
    from transformers import Qwen2ForSequenceClassification

    from raft_trainer.config import RAFTConfig
    from raft_trainer.trainer import RAFTTrainer

    from _harness_helpers import scoring_rows

    rows = datasets.Dataset.from_list(scoring_rows(max(1, opts["rows"] // 8)))  # eight dimensions per video
    trainers = {}
    for name, fields in METHODS.items():
        tokenizer, model = _setup(opts)
        if name == "regression":
            config = model.config
            config.num_labels = 1
            torch.manual_seed(0)
            model = Qwen2ForSequenceClassification(config).to(model.device, dtype=model.dtype)
        lora = LoraConfig(
            r=8, lora_alpha=16, lora_dropout=0.0, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"
        )
        args = RAFTConfig(**_common_args(opts, learning_rate=1e-4), **fields)
        trainers[name] = RAFTTrainer(model, args=args, train_dataset=rows, processing_class=tokenizer, peft_config=lora)
    return trainers


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32768)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--steps", type=int, default=12, help="timed steps (after 2 warm-up steps)")
    p.add_argument("--rows", type=int, default=32)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args(argv)
    opts = vars(args)

    import torch
    from bench_raft import _time_interleaved

    torch.manual_seed(0)
    medians = _time_interleaved(_trainers(opts), args.steps)
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else f"CPU ({os.cpu_count()} cores)"
    figures = {
        "device": device,
        "setting": f"Qwen2 hidden {args.hidden}, {args.layers} layers, vocab {args.vocab}, LoRA q/v, "
        f"batch {args.batch}",
        "median_step_s": medians,
        "over_raft": {name: medians[name] / medians["raft"] for name in medians},
        "peak_rss_mb_all_five": peak_mb,
        "synthetic": True,
    }
    print(f"{figures['setting']}; {device}; {args.steps} timed steps each, interleaved\n")
    print("| method | median step (s) | / raft |\n|---|---|---|")
    for name, seconds in medians.items():
        print(f"| {name} | {seconds:.3f} | {figures['over_raft'][name]:.2f}x |")
    print(f"\npeak resident memory of the process (all five trainers): {peak_mb:.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

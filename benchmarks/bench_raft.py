"""MIS-RAFT speed: training step time of raft vs ce (and TRL's stock SFTTrainer), and
`predict_scores` vs `generate()` + parse throughput and error, on one machine in one run.

    python3 benchmarks/bench_raft.py [--hidden 256 --layers 4 --vocab 32768 --steps 12 --rows 64]
    python3 benchmarks/bench_raft.py --modality-cost   # text vs audio+video+text (feature-derived) on a synthetic build
    python3 benchmarks/bench_raft.py --data-path [--ref a3f6604] [--videos 40] [--repeats 3]

`--data-path`: the code before (`git archive REF`) against this tree, in one run, on a synthetic build: its train
split encoded (`prepare_raft_dataset`, both prompt styles, max_length 1024) and its test split scored by the tiny
model (`predict_scores`, greedy and exact, median of 3 calls), each tree in fresh processes (one torch thread; a
warm-up on the validation split first), old and new alternating; CPU time of each part, peak RSS, and whether the
two trees' token ids, labels, score positions and scores are byte-identical.

Step times are measured with the variants alternating step by step in one process (fair on a busy
machine); each variant also runs alone in a spawned process so its peak resident memory (CPU) or
peak CUDA memory is its own. The model is a randomly initialised Qwen2 (no download) with the real
MIS-Bench prompt (rubric + transcript); `--vocab` pads the LM head to a realistic vocabulary size.
Prints a Markdown table and, with --json PATH, writes the figures.
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

from raft_trainer import ReadoutOptions
from raft_trainer.tiny import TinySize

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _setup(opts):
    import torch

    from raft_trainer.tiny import tiny_model, tiny_tokenizer

    tokenizer = tiny_tokenizer()
    model = tiny_model(
        tokenizer,
        size=TinySize(
            hidden=opts["hidden"],
            layers=opts["layers"],
            vocab_size=opts["vocab"],
            heads=8,
            kv_heads=4,
            ffn_factor=4,
            tie_word_embeddings=False,
        ),
    )
    if torch.cuda.is_available():
        model = model.to("cuda", dtype=torch.bfloat16)
    return tokenizer, model


def _common_args(opts, **extra) -> dict:
    """TrainingArguments shared by every timed trainer (RAFTConfig and SFTConfig alike)."""
    import torch

    cuda = torch.cuda.is_available()
    return dict(
        output_dir="/tmp/bench_raft_out",
        per_device_train_batch_size=opts["batch"],
        report_to="none",
        save_strategy="no",
        disable_tqdm=True,
        max_length=None,
        use_cpu=not cuda,
        bf16=cuda,
        train_sampling_strategy="sequential",
        optim="adamw_torch",
        **extra,  # RAFTConfig's default; SFTConfig's would be the fused AdamW
    )


def _time_interleaved(trainers: dict, steps: int) -> dict[str, float]:
    """Median optimizer-step time of each trainer over `steps` steps (after 2 warm-up steps), the
    trainers alternating step by step in random order so a busy machine slows them equally."""
    import itertools
    import random

    import torch

    batches = {}
    for name, trainer in trainers.items():
        trainer.create_optimizer()
        trainer.current_gradient_accumulation_steps = 1
        batches[name] = list(itertools.islice(trainer.get_train_dataloader(), steps + 2))
    times = {name: [] for name in trainers}
    rng = random.Random(0)
    for step in range(steps + 2):
        order = list(trainers)
        rng.shuffle(order)
        for name in order:
            trainer, batch = trainers[name], batches[name][step % len(batches[name])]
            n_items = trainer._get_num_items_in_batch([batch], trainer.args.device)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            t0 = time.perf_counter()
            trainer.training_step(trainer.model, batch, n_items)
            trainer.optimizer.step()
            trainer.optimizer.zero_grad()
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            if step >= 2:
                times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(t) for name, t in times.items()}


def _peak_memory_mb() -> float:
    import torch

    if torch.cuda.is_available():
        return torch.cuda.max_memory_allocated() / 2**20
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _train_variant(opts, variant, queue):

    from _raft_helpers import toy_dataset

    tokenizer, model = _setup(opts)
    data = toy_dataset(opts["batch"] * 3, seed=0)
    common = _common_args(opts, max_steps=3, logging_steps=1000)
    if variant == "trl-sft":
        from trl import SFTConfig, SFTTrainer

        from raft_trainer.data import conversation

        conv = data.map(conversation, remove_columns=data.column_names)
        trainer = SFTTrainer(model, args=SFTConfig(**common), train_dataset=conv, processing_class=tokenizer)
    else:
        from raft_trainer import RAFTConfig, RAFTTrainer

        trainer = RAFTTrainer(
            model,
            args=RAFTConfig(raft_objective=variant, **common),
            train_dataset=data,
            processing_class=tokenizer,
        )
    trainer.train()
    queue.put({"variant": variant, "peak_mb": _peak_memory_mb()})


def _interleaved_step_times(opts, queue):
    """Median optimizer-step time of each variant, the variants alternating step by step in one
    process so that a busy machine slows them equally (the ratio is what we report)."""
    import copy

    from trl import SFTConfig, SFTTrainer

    from raft_trainer import RAFTConfig, RAFTTrainer
    from raft_trainer.data import conversation

    from _raft_helpers import toy_dataset

    tokenizer, model = _setup(opts)
    data = toy_dataset(opts["batch"] * 4, seed=0)
    common = _common_args(opts)
    trainers = {}
    for variant in ("raft", "ce", "raft+ce"):
        trainers[variant] = RAFTTrainer(
            copy.deepcopy(model),
            args=RAFTConfig(raft_objective=variant, **common),
            train_dataset=data,
            processing_class=tokenizer,
        )
    conv = data.map(conversation, remove_columns=data.column_names)
    trainers["trl-sft"] = SFTTrainer(
        copy.deepcopy(model), args=SFTConfig(**common), train_dataset=conv, processing_class=tokenizer
    )
    queue.put(_time_interleaved(trainers, opts["steps"]))


def _predict_variant(opts, queue):
    import numpy as np
    import torch

    from raft_trainer import RAFTConfig, RAFTTrainer
    from raft_trainer.predict import generate_scores, predict_scores

    from _raft_helpers import toy_dataset, toy_rows

    tokenizer, model = _setup(opts)
    # teach the format and the task first (raft+ce: the completion text and the score), so generate() has
    # something to parse and the error comparison means something
    trainer = RAFTTrainer(
        model,
        args=RAFTConfig(
            output_dir="/tmp/bench_raft_out",
            raft_objective="raft+ce",
            max_steps=opts["fit_steps"],
            per_device_train_batch_size=8,
            learning_rate=3e-3,
            lr_scheduler_type="constant",
            report_to="none",
            save_strategy="no",
            disable_tqdm=True,
            max_length=None,
            use_cpu=not torch.cuda.is_available(),
            bf16=torch.cuda.is_available(),
            logging_steps=1000,
        ),
        train_dataset=toy_dataset(256, seed=0),
        processing_class=tokenizer,
    )
    trainer.train()
    model = trainer.model.eval()
    rows = toy_rows(opts["rows"], seed=11)
    gold = np.array([r["score"] for r in rows])
    out = []

    def timed(name, fn):
        fn(rows[: opts["predict_batch"]])  # warm-up
        elapsed = []
        for _ in range(opts["repeats"]):
            t0 = time.perf_counter()
            values = fn(rows)
            if torch.cuda.is_available():
                torch.cuda.synchronize()
            elapsed.append(time.perf_counter() - t0)
        elapsed = statistics.median(elapsed)
        parsed = np.array([np.nan if v is None else v for v in values], dtype=float)
        ok = ~np.isnan(parsed)
        out.append(
            {
                "method": name,
                "rows_per_s": len(rows) / elapsed,
                "parse_rate": float(ok.mean()),
                "mse": float(np.mean((parsed[ok] - gold[ok]) ** 2)) if ok.any() else float("nan"),
            }
        )

    b = opts["predict_batch"]
    timed(
        "predict_scores (greedy)",
        lambda r: predict_scores(model, tokenizer, r, readout=ReadoutOptions(batch_size=b, show_progress=False)),
    )
    timed(
        "predict_scores (exact)",
        lambda r: predict_scores(
            model, tokenizer, r, readout=ReadoutOptions(batch_size=b, method="exact", show_progress=False)
        ),
    )
    timed(
        "generate() + parse",
        lambda r: generate_scores(
            model, tokenizer, r, batch_size=b, max_new_tokens=opts["max_new_tokens"], show_progress=False
        )[0],
    )
    queue.put(out)


def _modality_cost(opts, queue):
    """What the feature-derived audio+video+text setting costs over text: descriptor computation,
    prompt tokens, RAFT step time (the two settings alternating step by step) and predict_scores rows/s."""
    import copy
    import tempfile

    import datasets

    from mis_bench_dataset import build_dataset, generate_synthetic_release
    from raft_trainer import RAFTConfig, RAFTTrainer, predict_scores
    from raft_trainer.media import attach_feature_context, load_feature_contexts

    setting = "audio+video+text"
    tokenizer, model = _setup(opts)
    with tempfile.TemporaryDirectory(prefix="bench_raft_modality_") as tmp:
        release = generate_synthetic_release(Path(tmp) / "release", n_videos=opts["videos"], seed=0)
        build = Path(tmp) / "build"
        build_dataset(release.release_dir, build, labels=release.ratings_csv, progress=False)
        t0 = time.perf_counter()
        contexts = load_feature_contexts(build, setting)
        contexts_s = time.perf_counter() - t0
        scoring = datasets.load_dataset(str(build), "scoring")
    data = {"text": scoring["train"], setting: attach_feature_context(scoring["train"], contexts, setting)}
    common = _common_args(opts)
    trainers = {
        name: RAFTTrainer(
            copy.deepcopy(model),
            args=RAFTConfig(modality=name, **common),
            train_dataset=rows,
            processing_class=tokenizer,
        )
        for name, rows in data.items()
    }
    tokens = {name: statistics.mean(len(ids) for ids in t.train_dataset["input_ids"]) for name, t in trainers.items()}
    step_times = _time_interleaved(trainers, opts["steps"])
    test = scoring["test"].select(range(min(opts["rows"], len(scoring["test"]))))
    test_rows = {"text": test.to_list(), setting: attach_feature_context(test, contexts, setting).to_list()}
    rows_per_s = {}
    for name, rows in test_rows.items():
        t0 = time.perf_counter()
        predict_scores(
            model,
            tokenizer,
            rows,
            RAFTConfig(modality=name, max_length=None),
            readout=ReadoutOptions(batch_size=opts["predict_batch"], show_progress=False),
        )
        rows_per_s[name] = len(rows) / (time.perf_counter() - t0)
    queue.put(
        {
            "videos": opts["videos"],
            "contexts_s": contexts_s,
            "tokens_per_row": tokens,
            "median_step_s": step_times,
            "predict_rows_per_s": rows_per_s,
        }
    )


DATA_PATH_STYLES = ("toolkit", "paper")
DATA_PATH_MAX_LENGTH = 1024  # the paper style's longest rubric needs more than 512 tiny-tokenizer tokens


def _data_path_child(build: str) -> None:
    """One tree's data path on `build` (this process's PYTHONPATH picks the tree); prints CPU seconds per part,
    peak RSS and digests of every output as one JSON line."""
    import hashlib

    import datasets
    import numpy as np
    import torch

    from raft_trainer.config import RAFTConfig
    from raft_trainer.data import ScoringEncoder, prepare_raft_dataset
    from raft_trainer.digits import DigitTokens
    from raft_trainer.predict import predict_scores
    from raft_trainer.tiny import tiny_model, tiny_tokenizer

    torch.set_num_threads(1)
    datasets.disable_caching()
    datasets.disable_progress_bars()
    tokenizer = tiny_tokenizer()
    digits = DigitTokens.from_tokenizer(tokenizer)
    scoring = datasets.load_dataset(build, "scoring")
    cpu, digests = {}, {}
    columns = ["input_ids", "labels", "score_index", "score", "dimension_index"]
    for style in DATA_PATH_STYLES:  # warm-up on the validation split: template compiled, BPE caches filled
        prepare_raft_dataset(scoring["validation"], ScoringEncoder(tokenizer, digits, None, prompt_style=style))
    for style in DATA_PATH_STYLES:
        encoder = ScoringEncoder(tokenizer, digits, DATA_PATH_MAX_LENGTH, prompt_style=style)
        t0 = time.process_time()
        encoded = prepare_raft_dataset(scoring["train"], encoder)
        cpu[f"encode train ({style})"] = time.process_time() - t0
        digests[f"encode train ({style})"] = hashlib.sha256(
            json.dumps(encoded.select_columns(columns).to_dict()).encode()
        ).hexdigest()
    model = tiny_model(tokenizer, seed=0)
    rows = scoring["test"].to_list()
    config = RAFTConfig(max_length=None)
    predict_scores(
        model, tokenizer, scoring["validation"].to_list()[:8], config, readout=ReadoutOptions(show_progress=False)
    )
    for method in ("greedy", "exact"):  # the median of 3 calls: a forward pass's CPU time swings by 10-20 %
        times = []
        for _ in range(3):
            t0 = time.process_time()
            scores = predict_scores(
                model, tokenizer, rows, config, readout=ReadoutOptions(method=method, show_progress=False)
            )
            times.append(time.process_time() - t0)
        cpu[f"predict test ({method})"] = statistics.median(times)
        digests[f"predict test ({method})"] = hashlib.sha256(np.asarray(scores, dtype=np.float64).tobytes()).hexdigest()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(
        json.dumps(
            {
                "cpu_s": cpu,
                "digests": digests,
                "peak_rss_mb": peak,
                "rows": {"train": len(scoring["train"]), "test": len(rows)},
            }
        )
    )


def _data_path(args) -> int:
    """Old tree vs this tree on the data path (see the module docstring); prints a Markdown table."""
    import subprocess
    import tempfile

    from mis_bench_dataset import build_dataset, generate_synthetic_release

    runs: dict[str, list[dict]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="bench_raft_data_") as scratch:
        work = Path(scratch)
        release = generate_synthetic_release(work / "release", n_videos=args.videos, seed=0)
        build = work / "build"
        build_dataset(release.release_dir, build, labels=release.ratings_csv, progress=False)
        old = work / "old"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.ref], capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
        for _ in range(args.repeats):
            for name, code in (("before", old), ("after", REPO)):
                env = {**os.environ, "PYTHONPATH": str(code), "HF_DATASETS_CACHE": str(work / f"hf-{name}")}
                argv = [sys.executable, str(Path(__file__).resolve()), "--data-path-child", str(build)]
                done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    raise SystemExit(f"{code}: the data path failed:\n{done.stderr[-3000:]}")
                runs[name].append(json.loads(done.stdout.strip().splitlines()[-1]))
    parts = list(runs["after"][0]["cpu_s"])
    med = {name: {part: statistics.median(r["cpu_s"][part] for r in rs) for part in parts} for name, rs in runs.items()}
    peak = {name: statistics.median(r["peak_rss_mb"] for r in rs) for name, rs in runs.items()}
    same = {part: runs["before"][0]["digests"][part] == runs["after"][0]["digests"][part] for part in parts}
    rows = runs["after"][0]["rows"]
    print(
        f"## MIS-RAFT data path, {args.ref} vs this tree: synthetic build of {args.videos} videos "
        f"({rows['train']} train, {rows['test']} test rows), median of {args.repeats} rounds, one torch thread; "
        f"load average {os.getloadavg()[0]:.1f}\n"
    )
    print("| part | before CPU s | after CPU s | speed-up | outputs |\n|---|---:|---:|---:|---|")
    for part in parts:
        b, a = med["before"][part], med["after"][part]
        print(f"| {part} | {b:.2f} | {a:.2f} | {b / a:.2f}x | {'byte-identical' if same[part] else 'DIFFERENT'} |")
    total_b, total_a = sum(med["before"].values()), sum(med["after"].values())
    print(f"| all | {total_b:.2f} | {total_a:.2f} | {total_b / total_a:.2f}x | |")
    print(f"\npeak RSS of the process (MB): before {peak['before']:.0f}, after {peak['after']:.0f}")
    if args.json:
        args.json.write_text(json.dumps({"ref": args.ref, "median_cpu_s": med, "peak_rss_mb": peak, "identical": same}))
    return 0 if all(same.values()) else 1


def _run(target, *args):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=target, args=(*args, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=32768)
    p.add_argument("--batch", type=int, default=2)
    p.add_argument("--steps", type=int, default=12, help="timed steps (after 2 warm-up steps)")
    p.add_argument("--rows", type=int, default=64)
    p.add_argument("--repeats", type=int, default=3, help="timed repeats of each inference method (median)")
    p.add_argument("--predict-batch", type=int, default=8)
    p.add_argument("--fit-steps", type=int, default=60)
    p.add_argument("--max-new-tokens", type=int, default=12, help="'The score prediction is: 3.4' + end token")
    p.add_argument("--json", type=Path, default=None)
    p.add_argument(
        "--modality-cost", action="store_true", help="only measure text vs audio+video+text (feature-derived)"
    )
    p.add_argument("--videos", type=int, default=40, help="synthetic videos for --modality-cost and --data-path")
    p.add_argument("--data-path", action="store_true", help="only measure the data path: --ref against this tree")
    p.add_argument("--ref", default="a3f6604", help="--data-path: the code before (a git ref)")
    p.add_argument("--data-path-child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.data_path_child:
        _data_path_child(args.data_path_child)
        return 0
    if args.data_path:
        return _data_path(args)
    opts = vars(args).copy()
    for key in ("json", "data_path", "ref", "data_path_child"):
        opts.pop(key)
    if args.modality_cost:
        return _print_modality_cost(_run(_modality_cost, opts), args)

    step_times = _run(_interleaved_step_times, opts)
    training = [_run(_train_variant, opts, v) for v in ("raft", "ce", "raft+ce", "trl-sft")]
    for r in training:
        r["median_step_s"] = step_times[r["variant"]]  # interleaved timing; the separate run gives peak memory
    by_name = {r["variant"]: r for r in training}
    inference = _run(_predict_variant, opts)
    base = next(r for r in inference if r["method"].startswith("generate"))

    import torch

    where = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU ({os.cpu_count()} cores)"
    print(f"## MIS-RAFT benchmark on {where}: Qwen2 hidden {args.hidden}, {args.layers} layers, vocab {args.vocab}\n")
    print("| training variant | median step (s) | vs raft | peak memory (MB) |\n|---|---|---|---|")
    for r in training:
        print(
            f"| {r['variant']} | {r['median_step_s']:.4f} "
            f"| {r['median_step_s'] / by_name['raft']['median_step_s']:.3f}x | {r['peak_mb']:.0f} |"
        )
    print(f"\nraft / ce step-time ratio: {by_name['raft']['median_step_s'] / by_name['ce']['median_step_s']:.3f}")
    print(
        f"\n| inference ({args.rows} rows, batch {args.predict_batch}) | rows/s | speed-up | parse rate | MSE |\n"
        "|---|---|---|---|---|"
    )
    for r in inference:
        print(
            f"| {r['method']} | {r['rows_per_s']:.1f} | {r['rows_per_s'] / base['rows_per_s']:.2f}x "
            f"| {r['parse_rate']:.2f} | {r['mse']:.3f} |"
        )
    if args.json:
        args.json.write_text(
            json.dumps({"device": where, "options": opts, "training": training, "inference": inference}, indent=2)
        )
    return 0


def _print_modality_cost(r: dict, args) -> int:
    import torch

    where = torch.cuda.get_device_name() if torch.cuda.is_available() else f"CPU ({os.cpu_count()} cores)"
    setting = "audio+video+text"
    print(
        f"## MIS-RAFT feature-derived audio+video+text vs text on {where}: "
        f"Qwen2 hidden {args.hidden}, {args.layers} layers\n"
    )
    print(f"descriptors for {r['videos']} synthetic videos (load `features` + compute): {r['contexts_s']:.2f} s\n")
    print("| setting | tokens / row | median RAFT step (s) | predict_scores rows/s |\n|---|---|---|---|")
    for name in ("text", setting):
        print(
            f"| {name} | {r['tokens_per_row'][name]:.0f} | {r['median_step_s'][name]:.4f} "
            f"| {r['predict_rows_per_s'][name]:.1f} |"
        )
    print(f"\nstep-time ratio {setting} / text: {r['median_step_s'][setting] / r['median_step_s']['text']:.2f}")
    if args.json:
        args.json.write_text(json.dumps({"device": where, **r}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Readout speed in the transformers backend: the expected score (`--score-from expected`) against
`generate()` + parse (`--score-from text`), on a tiny random Qwen2 with the real MIS-Bench prompts.

    python3 benchmarks/bench_readouts.py [--hidden 32 --layers 2 --vocab 0 --videos 8 --repeats 7 --threads 1]
        [--transcript-chars 0]

The direct and CoT prompts are the default version-2 templates (task text and rubric first, the response last);
"v1" modes run the version-1 templates (`--prompt-version 1`), i.e. the tree before issue 29, and "no shared
prefix" the backend's plain path (`share_prefix=False`), in the same process. The table's last column is the share
of prompt characters that repeat the start of the previous request in the order a run sends them
(`harness.ordering`). `--transcript-chars N` lengthens every transcript to about N characters (the 996 real
transcripts average about 700) by repeating its own sentence.

Each mode is the backend's own `complete()` on the same rows (8 dimensions per video), what `mis-bench
run --backend transformers` calls: text with the style's default token budget (32 direct, 16 paper) and
with the fewest tokens a score needs (4: "3", ".", "5", end); expected reads the digit distributions
(no generate() for direct/paper: one pass over the prompt, the prefix a dimension's rows share computed
once, one cached step over [digit, '.']). Two more modes run `raft_trainer.predict`'s `generate_scores` and
`predict_scores` (the same read path) on the trainer's prompt, whose rubric comes before the transcript.
Modes alternate repeat by repeat in one process (fair on a busy machine; the median wall time is reported);
each mode also runs alone in a spawned process for its peak resident memory. Prints a Markdown table;
--json PATH writes the figures.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from raft_trainer import ReadoutOptions
from raft_trainer.tiny import TinySize

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# (name, prompt style, readout, max_new_tokens or None for the style's default, template version, shared prefix)
MODES = [
    ("direct v1: generate() + parse, default 32 tokens", "direct", "text", None, 1, True),
    ("direct v1: expected score (before issue 29)", "direct", "expected", None, 1, True),
    ("direct: generate() + parse, default 32 tokens", "direct", "text", None, 2, True),
    ("direct: generate() + parse, 4 tokens", "direct", "text", 4, 2, True),
    ("direct: expected score, no shared prefix", "direct", "expected", None, 2, False),
    ("direct: expected score", "direct", "expected", None, 2, True),
    ("paper: generate() + parse, default 16 tokens", "paper", "text", None, 2, True),
    ("paper: expected score", "paper", "expected", None, 2, True),
    # The same read path on the trainer's prompt (rubric before the transcript, so a dimension's rows share it):
    # raft_trainer.predict's own functions, not the backend.
    ("trainer prompt: generate_scores, 16 tokens", "toolkit", "text", 16, 2, True),
    ("trainer prompt: predict_scores", "toolkit", "expected", None, 2, True),
]
BASELINES = {"direct": MODES[2][0], "paper": MODES[6][0], "toolkit": MODES[8][0]}  # generate() at the default budget
BEFORE = MODES[1][0]  # the expected readout of the tree before issue 29
V1_TEXT = MODES[0][0]  # generate() with the version-1 templates


def _save_model(folder: Path, opts: dict) -> Path:
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
            max_positions=8192,
        ),
    )
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _rows(videos: int, transcript_chars: int) -> list[dict]:
    from _harness_helpers import scoring_rows

    rows = scoring_rows(videos)
    for row in rows:
        sentence = row["transcript"]
        row["transcript"] = " ".join([sentence] * max(1, round(transcript_chars / (len(sentence) + 1))))
    return rows


def _prompts(style: str, videos: int, version: int = 2, transcript_chars: int = 0):
    from eval_scripts.answers.prompts import Prompt, render_paper_prompt, render_prompt

    rows = _rows(videos, transcript_chars)
    if style == "toolkit":  # the trainer's functions take the rows themselves
        return rows
    prompts = []
    for row in rows:
        if style == "paper":
            paper = render_paper_prompt(row, "text")
            prompts.append(Prompt(row["video_id"], row["dimension"], paper.user, system=paper.system))
        else:
            text = render_prompt(row, "text", style, version=version)
            prompts.append(Prompt(row["video_id"], row["dimension"], text))
    return prompts


def _reused_share(prompts) -> float | None:
    """Share of prompt characters repeating the previous request's start, in the order a run sends them."""
    from eval_scripts.harness.ordering import prefix_order, prefix_stats

    if not prompts or not hasattr(prompts[0], "text"):
        return None
    requests = [("text", p) for p in prompts]
    return prefix_stats([requests[i] for i in prefix_order(requests)]).reused_chars_share


def _decoding(style: str, readout: str, tokens: int | None):
    from eval_scripts.backends.base import DecodingConfig

    if style == "toolkit":
        return DecodingConfig(max_new_tokens=tokens or 16, score_from=readout, style=style)
    return DecodingConfig.for_style(style, score_from=readout, max_new_tokens=tokens)


def _one_pass(backend, prompts, decoding) -> tuple[float, list]:
    start = time.perf_counter()
    if decoding.style == "toolkit":
        completions = _trainer_pass(backend, prompts, decoding)
    else:
        completions = list(backend.complete(prompts, decoding))
    return time.perf_counter() - start, completions


def _trainer_pass(backend, rows, decoding) -> list:
    """`raft_trainer.predict`'s functions on the trainer's prompt, as Completions for `_figures`."""
    from eval_scripts.backends.base import Completion
    from raft_trainer.predict import generate_scores, predict_scores

    model, tokenizer = backend.hf_model, backend.tokenizer
    if decoding.expected:
        scores = predict_scores(
            model, tokenizer, rows, readout=ReadoutOptions(batch_size=backend.batch_size, show_progress=False)
        )
        usage = {"prompt_tokens": 0, "completion_tokens": 2}
        return [Completion(i, "", True, usage=usage, expected={"score": float(v)}) for i, v in enumerate(scores)]
    values, texts = generate_scores(
        model,
        tokenizer,
        rows,
        batch_size=backend.batch_size,
        max_new_tokens=decoding.max_new_tokens,
        show_progress=False,
    )
    return [Completion(i, t, True, usage={"prompt_tokens": 0, "completion_tokens": decoding.max_new_tokens})
            for i, t in enumerate(texts)]  # fmt: skip


def _figures(completions, readout: str, style: str) -> dict:
    from mis_icc_metric.score_parser import parse_score

    n = len(completions)
    parse_style = "paper" if style == "toolkit" else style  # the trainer's completion "The score prediction is: x"
    values = [
        (c.expected or {}).get("score") if readout == "expected" else parse_score(c.text, parse_style)
        for c in completions
    ]
    return {
        "prompt_tokens_per_row": sum(c.usage["prompt_tokens"] for c in completions) / n,
        "completion_tokens_per_row": sum(c.usage["completion_tokens"] for c in completions) / n,
        "scored": sum(v is not None for v in values),
    }


def _timed(opts: dict, model_dir: Path) -> dict:
    """Median wall time of each mode, the modes alternating repeat by repeat in random order."""
    import torch

    from eval_scripts.backends import get_backend

    torch.set_num_threads(opts["threads"])

    backend = get_backend("transformers", str(model_dir), batch_size=opts["batch"], device=opts["device"])
    prompts = {
        (style, version): _prompts(style, opts["videos"], version, opts["transcript_chars"])
        for _, style, _, _, version, _ in MODES
    }
    times: dict[str, list[float]] = {name: [] for name, *_ in MODES}
    figures: dict[str, dict] = {}
    for name, style, readout, tokens, version, share in MODES:  # warm-up, and the figures that do not depend on timing
        backend.share_prefix = share
        _, completions = _one_pass(backend, prompts[style, version], _decoding(style, readout, tokens))
        figures[name] = _figures(completions, readout, style) | {"reused_share": _reused_share(prompts[style, version])}
        if readout == "expected":
            figures[name]["scores"] = [(c.expected or {}).get("score") for c in completions]
    rng = random.Random(0)
    for _ in range(opts["repeats"]):
        order = list(MODES)
        rng.shuffle(order)
        for name, style, readout, tokens, version, share in order:
            backend.share_prefix = share
            elapsed, _ = _one_pass(backend, prompts[style, version], _decoding(style, readout, tokens))
            times[name].append(elapsed)
    rows = len(prompts["direct", 2])
    return {
        name: {
            **figures[name],
            "median_s": statistics.median(t),
            "rows": rows,
            "rows_per_s": rows / statistics.median(t),
        }
        for name, t in times.items()
    }


def _peak(opts, model_dir, mode, queue) -> None:
    import torch

    from eval_scripts.backends import get_backend

    torch.set_num_threads(opts["threads"])
    name, style, readout, tokens, version, share = mode
    backend = get_backend(
        "transformers", str(model_dir), batch_size=opts["batch"], device=opts["device"], share_prefix=share
    )
    prompts = _prompts(style, opts["videos"], version, opts["transcript_chars"])
    _one_pass(backend, prompts, _decoding(style, readout, tokens))
    queue.put((name, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def _peaks(opts: dict, model_dir: Path, results: dict) -> None:
    context = mp.get_context("spawn")
    for mode in MODES:
        queue = context.Queue()
        process = context.Process(target=_peak, args=(opts, model_dir, mode, queue))
        process.start()
        name, peak = queue.get()
        process.join()
        results[name]["peak_rss_mb"] = peak


def _table(results: dict) -> None:
    print(
        "| mode | rows/s | median s | vs generate() (default budget) | vs expected before issue 29 | "
        "prompt tokens/row | completion tokens/row | scored | peak RSS MB | prompt chars shared with the previous |"
    )  # the trainer rows' prompt tokens are not counted (0)
    print("|---|---|---|---|---|---|---|---|---|---|")
    before = results[BEFORE]["median_s"]
    for name, style, readout, _, version, _ in MODES:
        r = results[name]
        generated = results.get(V1_TEXT if version == 1 else BASELINES[style])  # absent with --expected-only
        vs_generate = f"{generated['median_s'] / r['median_s']:.1f}x" if generated else ""
        versus = f"{before / r['median_s']:.1f}x" if (style, readout) == ("direct", "expected") else ""
        shared = "" if r["reused_share"] is None else f"{100 * r['reused_share']:.0f}%"
        peak = f"{r['peak_rss_mb']:.0f}" if "peak_rss_mb" in r else ""
        print(
            f"| {name} | {r['rows_per_s']:.1f} | {r['median_s']:.2f} | {vs_generate} | {versus} | "
            f"{r['prompt_tokens_per_row']:.0f} | {r['completion_tokens_per_row']:.1f} | {r['scored']}/{r['rows']} | "
            f"{peak} | {shared} |"
        )


def _values_equal(results: dict) -> None:
    """Today's expected readout reads the same values with and without the shared prefix (the same prompts)."""
    shared, plain = (results.get(name, {}).get("scores") for name in (MODES_BY_KEY["shared"], MODES_BY_KEY["plain"]))
    if shared and plain:
        gap = max(abs(a - b) for a, b in zip(shared, plain, strict=True))
        print(f"\nvalues: direct expected score with vs without the shared prefix, max |difference| {gap:.1e}")


MODES_BY_KEY = {"shared": "direct: expected score", "plain": "direct: expected score, no shared prefix"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--vocab", type=int, default=32768)
    parser.add_argument("--videos", type=int, default=8, help="videos; 8 rows (dimensions) each")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (1: steadier on a shared machine)")
    parser.add_argument("--transcript-chars", type=int, default=0, help="lengthen transcripts to about N characters")
    parser.add_argument("--no-peak", action="store_true", help="skip the per-mode peak memory processes")
    parser.add_argument(
        "--expected-only",
        action="store_true",
        help="only the direct expected modes (before issue 29, no shared prefix, today's): the ratio alone, sooner",
    )
    parser.add_argument("--json", type=Path)
    opts = vars(parser.parse_args())
    if opts["expected_only"]:
        MODES[:] = [mode for mode in MODES if mode[1:3] == ("direct", "expected")]
    with tempfile.TemporaryDirectory() as tmp:
        model_dir = _save_model(Path(tmp) / "tiny-qwen2", opts)
        results = _timed(opts, model_dir)
        if not opts["no_peak"]:
            _peaks(opts, model_dir, results)
    _table(results)
    _values_equal(results)
    if opts["json"]:
        opts["json"].write_text(json.dumps({"options": opts | {"json": str(opts["json"])}, "modes": results}, indent=1))


if __name__ == "__main__":
    main()

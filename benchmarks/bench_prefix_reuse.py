"""How much of each prompt repeats the start of the previous request, in the order a run sends them, with the
version-1 and version-2 templates (issue 29): what a provider's prefix cache (vLLM's automatic prefix caching,
SGLang, OpenAI's prompt caching) can skip.

    python3 benchmarks/bench_prefix_reuse.py [--videos 40] [--transcripts ../shared/data/mis-bench-transcripts.csv]

On a SYNTHETIC build (`mis-bench synth` + `mis-bench build`, every modality setting through its features): the
dry run (`harness.runner.dry_run`, what `mis-bench run --dry-run` prints) of one setting (text direct) and of the
grid (4 settings x direct/CoT), per split. With `--transcripts` (a `video,transcript` CSV, e.g. the 996 real
transcripts) also the text settings' prompts of every transcript, ordered as a run orders them. Prints a Markdown
table; --json PATH writes the figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _build(root: Path, videos: int) -> Path:
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    release = generate_synthetic_release(root / "release", n_videos=videos, seed=0)
    build_dataset(release.release_dir, root / "build", labels=release.ratings_csv, progress=False)
    return root / "build"


def _dry_run_share(build: Path, out: Path, split: str, version: int, grid: bool) -> tuple[int, float]:
    from eval_scripts.harness.runner import RunConfig, dry_run, grid_configs

    config = RunConfig(backend="openai", model="gpt-x", dataset=build, split=split, out=out, prompt_version=version)
    configs = list(grid_configs(config)) if grid else [config]
    plan = dry_run(configs, grid=grid)
    return plan["requests"], plan["prefix"]["reused_chars_share"]


def _transcript_share(path: Path, version: int, styles: tuple[str, ...]) -> tuple[int, float]:
    from eval_scripts.answers.prompts import Prompt, render_prompt
    from eval_scripts.harness.ordering import prefix_order, prefix_stats
    from mis_bench_dataset.dimensions import DIMENSION_KEYS

    with path.open(newline="", encoding="utf-8") as handle:
        transcripts = {r["video"]: r["transcript"] for r in csv.DictReader(handle) if r["transcript"].strip()}
    requests = [
        ("text", Prompt(video, d, render_prompt({"video_id": video, "dimension": d, "transcript": text}, "text", s,
                                                version=version)))
        for video, text in transcripts.items()
        for d in DIMENSION_KEYS
        for s in styles
    ]  # fmt: skip
    stats = prefix_stats([requests[i] for i in prefix_order(requests)])
    return stats.requests, stats.reused_chars_share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--videos", type=int, default=40, help="videos of the synthetic build")
    parser.add_argument("--transcripts", type=Path, help="a video,transcript CSV (e.g. the 996 real transcripts)")
    parser.add_argument("--json", type=Path)
    opts = parser.parse_args()
    logging.disable(logging.WARNING)
    figures = []
    with tempfile.TemporaryDirectory() as tmp:
        build = _build(Path(tmp), opts.videos)
        for split in ("test", "train"):
            for grid in (False, True):
                shares = {v: _dry_run_share(build, Path(tmp) / "runs", split, v, grid) for v in (1, 2)}
                what = "grid (4 settings x direct/CoT)" if grid else "text direct"
                figures.append((f"SYNTHETIC {opts.videos}-video build, {split} split, {what}", shares))
    if opts.transcripts:
        for styles in (("direct",), ("direct", "cot")):
            shares = {v: _transcript_share(opts.transcripts, v, styles) for v in (1, 2)}
            figures.append((f"{opts.transcripts.name}, text {' + '.join(styles)}", shares))
    print("| requests sent | requests | v1: chars shared with the previous | v2 (default) |")
    print("|---|---|---|---|")
    for name, shares in figures:
        print(f"| {name} | {shares[1][0]:,} | {100 * shares[1][1]:.0f}% | {100 * shares[2][1]:.0f}% |")
    if opts.json:
        opts.json.write_text(json.dumps([{"what": n, "v1": s[1], "v2": s[2]} for n, s in figures], indent=1))


if __name__ == "__main__":
    main()

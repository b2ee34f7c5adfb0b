"""Reading huge predictions files: time and peak memory of `mis-bench score` on a multi-million-row file whose
second row is bad, and on a realistic large good file (chain-of-thought answers kept in `raw_response`).

    python3 benchmarks/bench_readers.py [--rows 5800000] [--cot-mb 192] [--ref REF] [--repeats 3]

Inputs, generated into a temporary folder: gold for 996 videos x 8 dimensions (long CSV); `bad-second-row.csv`,
`--rows` long rows (about 200 MB at 5.8 million) whose second row names a video absent from the gold; `cot.csv`,
one row per gold pair with a `raw_response` of about `--cot-mb` MB in all. Each command runs in a fresh process
(PYTHONPATH this tree, or with `--ref` also the code at that git ref, from `git archive`): wall time of the process
(imports included), the command's exit code and the child's peak RSS (VmHWM). The figures go to
docs/benchmarks.md ("Reading predictions").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
# The child's own peak: VmHWM, its address space's high-water mark since exec (ru_maxrss keeps a forked parent's).
CHILD = (
    "import json, re, sys\n"
    "from pathlib import Path\n"
    "from eval_scripts.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "peak = int(re.search(r'VmHWM:\\s*(\\d+)', Path('/proc/self/status').read_text()).group(1))\n"
    "print(json.dumps({'code': code, 'peak_mb': peak / 1024}), file=sys.stderr)\n"
)


def write_inputs(folder: Path, rows: int, cot_mb: float) -> dict[str, Path]:
    """The gold, the bad-second-row file and the chain-of-thought file (see the module's docstring)."""
    import numpy as np

    from mis_bench_dataset.dimensions import DIMENSION_KEYS
    from mis_bench_dataset.video_ids import STIMULI

    rng = np.random.default_rng(0)
    videos = [f"CL{1000 + i // 13:04d}_T{1 + i % 3}_{STIMULI[i % len(STIMULI)]}" for i in range(996)]
    pairs = [(video, dim) for video in videos for dim in DIMENSION_KEYS]
    gold = np.round(np.clip(rng.normal(3.5, 0.5, len(pairs)), 1, 5), 1)
    paths = {"gold": folder / "gold.csv", "bad": folder / "bad-second-row.csv", "cot": folder / "cot.csv"}
    paths["gold"].write_text(
        "video_id,dimension,score\n" + "".join(f"{v},{d},{g}\n" for (v, d), g in zip(pairs, gold, strict=True))
    )
    with paths["bad"].open("w") as handle:
        handle.write(f"video_id,dimension,prediction\n{pairs[0][0]},{pairs[0][1]},3.4\nZZ9999_T1_Luke,abc,3.4\n")
        block, i = [], 0
        while i < rows - 2:
            video = f"XY{i // 8:07d}_T{1 + i // 8 % 3}_Luke"
            block.append(f"{video},{DIMENSION_KEYS[i % 8]},{3 + i % 20 / 10:.1f}\n")
            i += 1
            if len(block) == 100_000:
                handle.write("".join(block))
                block = []
        handle.write("".join(block))
    sentence = "the clinician reflects the client's ambivalence warmly, so empathy is high while persuasion is low. "
    per_row = int(cot_mb * 1e6 / len(pairs))
    text = (sentence * (per_row // len(sentence) + 1))[:per_row]
    with paths["cot"].open("w") as handle:
        handle.write("video_id,dimension,prediction,raw_response\n")
        for (video, dim), g in zip(pairs, gold, strict=True):
            handle.write(f'{video},{dim},{g},"Step by step: {text} Final score: {g}"\n')
    return paths


def measure(tree: Path, args: list[str]) -> dict:
    """One command in a fresh process on `tree`'s code: wall time (imports included), exit code, peak RSS."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args],
        env={**ENV, "PYTHONPATH": str(tree)},
        cwd=tree,  # `python -c` puts the working folder first on the path
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    report = json.loads(done.stderr.strip().splitlines()[-1])
    first = next((line for line in done.stderr.splitlines() if "error:" in line), "")
    return {"wall_s": wall, **report, "error": first[:160]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=5_800_000)
    parser.add_argument("--cot-mb", type=float, default=192.0)
    parser.add_argument("--ref", default=None, help="also time the code at this git ref (git archive)")
    parser.add_argument("--repeats", type=int, default=3)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        sys.path.insert(0, str(REPO))
        paths = write_inputs(work, options.rows, options.cot_mb)
        sizes = {name: path.stat().st_size / 1e6 for name, path in paths.items()}
        trees = {"this tree": REPO}
        if options.ref:
            old = work / "old"
            old.mkdir()
            archive = subprocess.run(["git", "-C", str(REPO), "archive", options.ref], capture_output=True, check=True)
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
            trees[options.ref] = old
        for name in ("bad", "cot"):
            command = ["score", "--predictions", str(paths[name]), "--references", str(paths["gold"])]
            command += ["--bootstrap", "0"]
            for label, tree in trees.items():
                runs = [measure(tree, command) for _ in range(options.repeats)]
                print(
                    json.dumps(
                        {
                            "input": paths[name].name,
                            "MB": round(sizes[name], 1),
                            "code": label,
                            "wall_s": round(statistics.median(r["wall_s"] for r in runs), 2),
                            "peak_mb": round(statistics.median(r["peak_mb"] for r in runs)),
                            "exit": runs[0]["code"],
                            "error": runs[0]["error"],
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    main()

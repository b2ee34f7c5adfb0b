"""A newcomer's first build: the default sample generated and built from scratch, and the real text build, with
the code before (`git archive REF`) and this tree in one run.

    python3 benchmarks/bench_first_build.py [--ref a2a5ca1] [--repeats 3] [--transcripts T.csv --labels L.csv]

1. `default_sample(CACHE)` into an empty cache (996 SYNTHETIC videos generated, then built: what the first
   `mis-bench run` waits for), with the time its build spent in each part;
2. `mis-bench build --transcripts T --labels L --out OUT` (the real text build; skipped when the files are absent:
   by default ../shared/data).

Every measurement runs in a fresh process with PYTHONPATH set to the old code's folder or to this tree, old and
new alternating; each figure is the median of `--repeats` rounds: wall time of the call (imports included), CPU
time (user + sys) and peak RSS of that process. Both versions' outputs are compared file by file (the build report
without its timing and paths): the table says whether they are byte-identical.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data"
ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
# Parts of a build timed inside the child (wrapped where the builder looks them up).
PARTS = {
    "mis_bench_dataset.synth.generator": ["generate_synthetic_release"],
    "mis_bench_dataset.builder.builder": ["build_dataset", "read_video", "_write_configs", "_report", "_finish"],
    "mis_bench_dataset.builder.stats": ["write_stats"],
}
VOLATILE = {"seconds", "out_dir", "release_dir", "labels_path", "transcripts_path"}


def child(kind: str, target: str, transcripts: str, labels: str) -> None:
    """Run one measurement in this process; print wall, CPU, peak RSS and the parts' wall times as JSON."""
    import functools
    import importlib

    started, cpu = time.perf_counter(), time.process_time()
    parts: dict[str, float] = {}
    for module_name, names in PARTS.items():
        module = importlib.import_module(module_name)
        for name in names:
            if not hasattr(module, name):
                continue

            def timed(fn, name=name):
                @functools.wraps(fn)
                def run(*args, **kwargs):
                    begin = time.perf_counter()
                    try:
                        return fn(*args, **kwargs)
                    finally:
                        parts[name] = parts.get(name, 0.0) + time.perf_counter() - begin

                return run

            setattr(module, name, timed(getattr(module, name)))
    if kind == "default_sample":
        from mis_bench_dataset.synth.sample import default_sample

        default_sample(target)
    else:
        from eval_scripts.cli import main

        code = main(["build", "--transcripts", transcripts, "--labels", labels, "--out", target])
        assert code == 0, code
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "wall_s": time.perf_counter() - started,
                "cpu_s": time.process_time() - cpu,
                "peak_rss_mb": usage.ru_maxrss / 1024,
                "parts_s": parts,
            }
        )
    )


def measure(code_dir: Path, kind: str, target: Path, transcripts: str, labels: str) -> dict:
    env = {**ENV, "PYTHONPATH": str(code_dir)}
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", kind, str(target), transcripts, labels]
    done = subprocess.run(argv, cwd=target.parent, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{code_dir}: {kind} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def old_tree(ref: str, into: Path) -> Path:
    """The code of `ref` (a commit or branch of this repository), unpacked with `git archive`."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def differing_files(a: Path, b: Path) -> list[str]:
    """Files whose bytes differ between two outputs (a build report compared without its timing and paths)."""
    names = sorted({p.relative_to(a).as_posix() for p in a.rglob("*") if p.is_file()})
    names_b = sorted({p.relative_to(b).as_posix() for p in b.rglob("*") if p.is_file()})
    if names != names_b:
        return sorted(set(names) ^ set(names_b))
    differ = []
    for name in names:
        x, y = (a / name).read_bytes(), (b / name).read_bytes()
        if x == y:
            continue
        if Path(name).name == "build_report.json":
            x, y = ({k: v for k, v in json.loads(t).items() if k not in VOLATILE} for t in (x, y))
            if x == y:
                continue
        differ.append(name)
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="a2a5ca1", help="the code before (a git ref; default: before the speed-up)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--transcripts", default=str(SHARED / "mis-bench-transcripts.csv"))
    parser.add_argument("--labels", default=str(SHARED / "authors" / "coding.csv"))
    parser.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child)
        return
    kinds = ["default_sample"] + (["real text build"] if Path(args.transcripts).is_file() else [])
    figures: dict[str, dict[str, list[dict]]] = {}
    identical: dict[str, list[str]] = {}
    with tempfile.TemporaryDirectory(prefix="bench_first_build_") as scratch:
        work = Path(scratch)
        (work / "old").mkdir()
        old = old_tree(args.ref, work / "old")
        for round_ in range(args.repeats):
            for name, code_dir in (("before", old), ("after", REPO)):
                for kind in kinds:
                    folder = work / f"{name}-{kind.split()[0]}-{round_}"
                    folder.mkdir()
                    target = folder / ("cache" if kind == "default_sample" else "b-real")
                    figure = measure(code_dir, kind, target, args.transcripts, args.labels)
                    figures.setdefault(kind, {}).setdefault(name, []).append(figure)
        for kind in kinds:
            stem = kind.split()[0]
            identical[kind] = differing_files(work / f"before-{stem}-0", work / f"after-{stem}-0")
    print(f"median of {args.repeats} rounds, before = {args.ref}; load average {os.getloadavg()[0]:.1f}")
    print("| what | before wall s | after wall s | speed-up | before CPU s | after CPU s | peak RSS MB before, after |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    result = {}
    for kind, by_code in figures.items():
        med = {
            code: {key: statistics.median(m[key] for m in runs) for key in ("wall_s", "cpu_s", "peak_rss_mb")}
            for code, runs in by_code.items()
        }
        parts = {
            code: {part: statistics.median(m["parts_s"].get(part, 0.0) for m in runs) for part in runs[0]["parts_s"]}
            for code, runs in by_code.items()
        }
        result[kind] = {"median": med, "parts_s": parts, "differing_files": identical[kind]}
        b, a = med["before"], med["after"]
        print(
            f"| {kind} | {b['wall_s']:.1f} | {a['wall_s']:.1f} | {b['wall_s'] / a['wall_s']:.2f}x "
            f"| {b['cpu_s']:.1f} | {a['cpu_s']:.1f} | {b['peak_rss_mb']:.0f}, {a['peak_rss_mb']:.0f} |"
        )
    for kind, data in result.items():
        parts = ", ".join(
            f"{part} {data['parts_s']['before'][part]:.1f} -> {data['parts_s']['after'].get(part, 0.0):.1f}"
            for part in data["parts_s"]["before"]
        )
        same = "byte-identical outputs" if not data["differing_files"] else f"DIFFERING: {data['differing_files']}"
        print(f"{kind}: {same}; wall s of its parts: {parts}")
    print(json.dumps({"ref": args.ref, "load_average": os.getloadavg(), **result}))


if __name__ == "__main__":
    main()

"""Speed of the report's figures, of `write_report` and of the build's statistics figures, against the code
before the figures were sped up (`--base`, the parent commit of the change), in one run.

The default job's five runs and gold scores (the SYNTHETIC default sample, 100 test videos; the sample is
generated first if the cache lacks it) and the sample build's `stats.json` are the inputs. Each tree, this
checkout and `git archive BASE` unpacked aside, is timed in its own worker process on the same inputs: the
build's two statistics figures (the correlation heatmap and the gold histograms, as a build writes them: the
first time in the process, then the mean of three more, as later builds in one process write them), every
figure of the report (the heatmap, the radar, and for each system's best configuration the scatter,
Bland-Altman, calibration and histogram grids, each built and saved as PNG), then `write_report` as the
default job calls it. Workers run --rounds times per tree, the trees alternating, and the best wall and the
best CPU time (user + sys, so a busy shared machine can be told apart) are kept; peak RSS is the workers'
largest. The first round also checks that both trees' figures show the same thing: panels, titles, axis
labels, limits, tick labels, legends, every histogram bar (bin, count, colour), and the PNGs' Title text with
the SYNTHETIC mark; and whether every PNG is the same, byte for byte. Then `mis-bench run` itself with each
tree (--job-rounds, alternating, warm cache).

    python3 benchmarks/bench_report_figures.py [--rounds 3] [--job-rounds 2] [--base a3f6604]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import pickle
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

PACKAGES = ("eval_scripts", "mis_bench_dataset", "mis_icc_metric", "raft_trainer")
SUFFIX = " (SYNTHETIC data)"


def _peak_rss_mb(who=resource.RUSAGE_SELF) -> float:
    return round(resource.getrusage(who).ru_maxrss / 1024, 0)


def _cpu(who=resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def _timed(func) -> dict:
    """Wall and CPU seconds of one call."""
    wall, cpu = time.perf_counter(), _cpu()
    func()
    return {"wall_s": time.perf_counter() - wall, "cpu_s": _cpu() - cpu}


def prepare_inputs(work: Path) -> Path:
    """The default job's results (in its order) and gold scores, pickled for the workers."""
    from eval_scripts.baselines.baseline_run import load_feature_rows
    from eval_scripts.jobs.default_job import run_default_job
    from mis_bench_dataset import default_sample
    from mis_bench_dataset.dataset.handle import BuiltDataset
    from mis_bench_dataset.dataset.loading import gold_references

    summary = run_default_job(out=work / "setup", say=lambda *_: None, closing_lines=False)
    results = [json.loads(Path(run["results"]).read_text()) for run in summary["runs"]]
    build = default_sample().build_dir
    references = gold_references(load_feature_rows(BuiltDataset.open(build), summary["split"]))
    stats = json.loads((build / "stats" / "stats.json").read_text(encoding="utf-8"))
    path = work / "inputs.pkl"
    inputs = {"results": results, "references": references, "n_videos": summary["n_videos"], "stats": stats}
    path.write_bytes(pickle.dumps(inputs))
    return path


def _bars(ax) -> list:
    """Every histogram bar of an axes as (left edge, count, colour), whether drawn as one patch per bin
    (`ax.hist`) or one outline per histogram (`ax.stairs`)."""
    from matplotlib.patches import Rectangle, StepPatch

    bars = []
    for patch in ax.patches:
        colour = tuple(round(float(c), 4) for c in patch.get_facecolor())
        if isinstance(patch, StepPatch):
            data = patch.get_data()
            bars += [(round(float(e), 2), float(v), colour) for e, v in zip(data.edges[:-1], data.values, strict=True)]
        elif isinstance(patch, Rectangle):
            bars.append((round(float(patch.get_x()), 2), float(patch.get_height()), colour))
    return sorted(bars)


def _shown(fig) -> dict:
    """What a figure shows a reader, drawn: its title, and per panel the texts, limits, ticks, legend, bars."""
    fig.canvas.draw()
    suptitle = getattr(fig, "_suptitle", None)
    panels = []
    for ax in fig.axes:
        legend = ax.get_legend()
        panels.append(
            {
                "title": ax.get_title(),
                "labels": [ax.get_xlabel(), ax.get_ylabel()],
                "limits": [round(float(v), 9) for v in (*ax.get_xlim(), *ax.get_ylim())],
                "ticks": [[t.get_text() for t in ax.get_xticklabels()], [t.get_text() for t in ax.get_yticklabels()]],
                "legend": [t.get_text() for t in legend.get_texts()] if legend else None,
                "bars": _bars(ax),
            }
        )
    return {"suptitle": suptitle.get_text() if suptitle else None, "panels": panels}


def _stats_figures(stats: dict, out: Path) -> dict:
    """The build's two statistics figures, timed as a build writes them: the first time in this process, then
    the mean of three more (later builds in one process, as the test suite runs them)."""
    from mis_bench_dataset.builder.stats_plots import write_figures

    first = _timed(lambda: write_figures(stats, out / "stats"))
    later = [_timed(lambda: write_figures(stats, out / "stats")) for _ in range(3)]
    return {
        "stats_first": first,
        "stats_later": {unit: sum(t[unit] for t in later) / len(later) for unit in ("wall_s", "cpu_s")},
    }


def _digests(folder: Path) -> dict:
    """Every PNG under `folder` (its path there -> SHA-256), to tell whether two trees wrote the same bytes."""
    pngs = sorted(folder.rglob("*.png"))
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest() for p in pngs}


def worker(inputs: Path, check: bool) -> dict:
    """Time this tree's figures and write_report once (the tree is whatever `eval_scripts` imports as); with
    `check`, also what each figure shows, the PNGs' Title texts and every PNG's bytes."""
    import matplotlib.pyplot as plt
    from PIL import Image

    from eval_scripts.report import ReportOptions, agreement_plots, plots, write_report
    from eval_scripts.report.table import run_views
    from eval_scripts.report.views import best_configurations, by_system
    from mis_bench_dataset.toolkit.defaults import DEFAULT_BOOTSTRAP, DEFAULT_SEED

    data = pickle.loads(inputs.read_bytes())
    results, references = data["results"], data["references"]
    runs = by_system(run_views(results))
    best = [entry.run for entry in best_configurations(runs)[0]]
    out = Path(tempfile.mkdtemp(prefix="figures-"))
    (out / "stats").mkdir()
    makers = {
        "heatmap": lambda: plots.heatmap_chart(runs, out / "heatmap.png", title="ICC(3,1) % by configuration" + SUFFIX),
        "radar": lambda: plots.radar_chart(best, out / "radar.png", title="Per-dimension ICC(3,1) %" + SUFFIX),
        "scatter": lambda: [
            plots.scatter_grid(r, references, out / f"scatter{i}.png", suffix=SUFFIX) for i, r in enumerate(best)
        ],
    }
    for kind in agreement_plots.PLOTS:
        makers[kind] = lambda kind=kind: [
            agreement_plots.write_agreement_plots(r, references, {kind: out / f"{kind}{i}.png"}, suffix=SUFFIX)
            for i, r in enumerate(best)
        ]
    makers["heatmap"]()  # warm: pyplot's import and font cache are not the figures' cost
    stats = _stats_figures(data["stats"], out)  # before the report's grids: the first 2 x 4 grid of the process
    measured = {kind: _timed(make) for kind, make in makers.items()}
    measured["write_report"] = _timed(
        lambda: write_report(
            results,
            out / "report",
            ReportOptions(
                title="MIS-Bench CPU baselines on the default sample",
                comparison_bootstrap=DEFAULT_BOOTSTRAP,
                seed=DEFAULT_SEED,
            ),
            references=references,
        )
    )
    done = {
        "measured": measured,
        "stats": stats,
        "peak_rss_mb": _peak_rss_mb(),
        "code": str(Path(plots.__file__).parents[2]),
    }
    if check:
        shown = {"heatmap": _shown(plots.heatmap_figure(runs)), "radar": _shown(plots.radar_figure(best))}
        for i, run in enumerate(best):
            shown[f"scatter {i + 1}"] = _shown(plots.scatter_figure(run, references, suffix=SUFFIX))
            for kind, (make, name) in agreement_plots.PLOTS.items():
                shown[f"{kind} {i + 1}"] = _shown(make(run, references, title=f"{name}: {run.label}{SUFFIX}"))
        plt.close("all")
        done["shown"] = shown
        done["png_titles"] = {p.name: Image.open(p).text.get("Title") for p in sorted((out / "report").glob("*.png"))}
        done["png_digests"] = _digests(out)
    return done


def _unpack_base(base: str, into: Path) -> Path:
    """The packages as they were at `base`, unpacked aside (no checkout of this worktree changes)."""
    into.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", base, *PACKAGES], check=True, capture_output=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    return into


def _run_worker(tree: Path, inputs: Path, check: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    script = [sys.executable, __file__, "--worker", str(inputs), *(["--check"] if check else [])]
    done = subprocess.run(script, env=env, check=True, capture_output=True, text=True, cwd=tree)
    return json.loads(done.stdout)


def _time_job(tree: Path, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cpu, started = _cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "eval_scripts.cli", "run", "--out", str(out)],
        env=env,
        cwd=tree,
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return {"wall_s": time.perf_counter() - started, "cpu_s": _cpu(resource.RUSAGE_CHILDREN) - cpu}


def _alternating(trees: dict, rounds: int, measure) -> dict[str, list]:
    """`measure(name, tree, round)` for each tree, `rounds` times, the order swapped every round (load that
    drifts during the run then favours neither tree)."""
    measured: dict[str, list] = {name: [] for name in trees}
    for round_ in range(rounds):
        for name in list(trees)[:: 1 if round_ % 2 == 0 else -1]:
            measured[name].append(measure(name, trees[name], round_))
    return measured


def _best(timings: list[dict], digits: int = 3) -> dict:
    """The best wall and the best CPU time of several (each taken on its own)."""
    return {unit: round(min(t[unit] for t in timings), digits) for unit in ("wall_s", "cpu_s")}


def _pair(before: list[dict], after: list[dict], digits: int = 3) -> dict:
    best = {"before": _best(before, digits), "after": _best(after, digits)}
    return best | {"ratio": {unit: round(best["before"][unit] / best["after"][unit], 2) for unit in best["after"]}}


def compare(args) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        inputs = prepare_inputs(work)  # also makes sure the sample is cached: the job timings below are warm
        trees = {"before": _unpack_base(args.base, work / "base"), "after": ROOT}
        load = os.getloadavg()[0]
        runs = _alternating(trees, args.rounds, lambda _, tree, round_: _run_worker(tree, inputs, round_ == 0))
        before, after = runs["before"], runs["after"]
        kinds = list(after[0]["measured"])
        figure_kinds = [kind for kind in kinds if kind != "write_report"]

        def total(done: dict) -> dict:
            return {unit: sum(done["measured"][kind][unit] for kind in figure_kinds) for unit in ("wall_s", "cpu_s")}

        figures = {
            "cpus": os.cpu_count(),
            "load_average_1min": round(load, 2),
            "base": args.base,
            "test_videos": pickle.loads(inputs.read_bytes())["n_videos"],
            "rounds": args.rounds,
            "code": {"before": before[0]["code"], "after": after[0]["code"]},  # where each worker's figures came from
            "figures": {
                kind: _pair([r["measured"][kind] for r in before], [r["measured"][kind] for r in after])
                for kind in figure_kinds
            },
            "figures_total": _pair([total(r) for r in before], [total(r) for r in after]),
            "write_report": _pair(
                [r["measured"]["write_report"] for r in before], [r["measured"]["write_report"] for r in after]
            ),
            "stats_figures": {
                kind: _pair([r["stats"][kind] for r in before], [r["stats"][kind] for r in after])
                for kind in ("stats_first", "stats_later")
            },
            "pngs": len(after[0]["png_titles"]),
            "peak_rss_mb": {
                "before": max(r["peak_rss_mb"] for r in before),
                "after": max(r["peak_rss_mb"] for r in after),
            },
            "same_figures_shown": before[0]["shown"] == after[0]["shown"],
            "same_png_titles": before[0]["png_titles"] == after[0]["png_titles"],
            "pngs_compared": len(after[0]["png_digests"]),
            "same_png_bytes": before[0]["png_digests"] == after[0]["png_digests"],
            "pngs_that_differ": sorted(
                name for name, digest in after[0]["png_digests"].items() if before[0]["png_digests"].get(name) != digest
            ),
            "png_titles_say_synthetic": all("SYNTHETIC" in (t or "") for t in after[0]["png_titles"].values()),
        }
        if args.job_rounds:
            jobs = _alternating(trees, args.job_rounds, lambda name, tree, i: _time_job(tree, work / f"job-{name}-{i}"))
            figures["mis_bench_run"] = _pair(jobs["before"], jobs["after"], digits=1) | {"rounds": args.job_rounds}
            figures["load_average_1min_end"] = round(os.getloadavg()[0], 2)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="worker processes per tree, best kept")
    parser.add_argument("--job-rounds", type=int, default=2, help="`mis-bench run`s per tree (0: none)")
    parser.add_argument("--base", default="a3f6604", help="the 'before' commit (default: %(default)s)")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)  # internal: time one tree on these inputs
    parser.add_argument("--check", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:  # the tree under test is on PYTHONPATH
        print(json.dumps(worker(args.worker, args.check)))
        return
    sys.path.insert(0, str(ROOT))
    print(json.dumps(compare(args), indent=1))


if __name__ == "__main__":
    main()

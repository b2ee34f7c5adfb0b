"""Speed of the submission schema check (`eval_scripts.formats.submission.find_problems`'s jsonschema part): the
code before (`git show REF`) against this tree, in one run.

Results documents of 100 videos x 8 dimensions (800 predictions, as `mis-bench run` writes for the test split):
a ridge baseline's (every prediction a distinct float, no raw response), a model run's (whole-point answers, a
distinct raw response each, 5% unparsed) and the same at 996 videos (7,968 predictions). CPU seconds per call
(best of --repeats, each of --calls calls), the ratio, peak Python-tracked memory of one call (tracemalloc), and
whether old and new give the same list of problems on the valid documents and on broken ones (a string, an
out-of-range number, a boolean, an extra key, a missing key, a bad date, a broken item in the middle).

    python3 benchmarks/bench_schema.py [--ref a3f6604] [--repeats 5] [--calls 10]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from _old_tree import module_at  # noqa: E402


def old_submission(ref: str, work: Path):
    """`submission.py` as it was at `ref`, importable beside this tree's (its imports are this tree's)."""
    module = module_at(ref, "eval_scripts/formats/submission.py", "old_submission", work)
    module.SCHEMA_PATH = REPO / "eval_scripts" / "formats" / "schemas" / "submission.schema.json"  # the same file
    return module


def document(n_videos: int, kind: str, seed: int = 0) -> dict:
    """A results document in the submission schema, as `mis-bench run` writes it."""
    import numpy as np

    from mis_bench_dataset.dimensions import DIMENSION_KEYS

    rng = np.random.default_rng(seed)
    rows = []
    for v in range(n_videos):
        for dim in DIMENSION_KEYS:
            value = float(np.clip(rng.normal(3.5, 0.6), 1.0, 5.0))
            if kind == "ridge":
                rows.append({"video_id": f"C{v:04d}_T1_S1", "dimension": dim, "prediction": value})
                continue
            answer = None if rng.random() < 0.05 else float(round(value))
            raw = f"Reasoning about video {v}, {dim} ... Score: {answer if answer is not None else 'unsure'}"
            rows.append({"video_id": f"C{v:04d}_T1_S1", "dimension": dim, "prediction": answer, "raw_response": raw})
    return {
        "schema_version": "1.1",
        "system": {"model": kind, "backend": "baseline", "decoding": {}, "package_versions": {"mis-bench": "0"}},
        "setting": {"modality": "text", "prompt_style": "none", "few_shot_k": 0, "input_source": "text"},
        "dataset": {"name": "bench", "fingerprint": "abc", "split": "test"},
        "predictions": rows,
        "scores": None,
        "parse_rates": {dim: 1.0 for dim in DIMENSION_KEYS},
        "created_at": "2026-01-01T00:00:00+00:00",
    }


def broken(valid: dict) -> list[dict]:
    """Documents with one schema problem each (and one with several)."""
    out = []
    middle = len(valid["predictions"]) // 2
    for key, value in (("prediction", "4"), ("prediction", 5.5), ("prediction", True), ("extra", 1)):
        doc = copy.deepcopy(valid)
        doc["predictions"][middle][key] = value
        out.append(doc)
    doc = copy.deepcopy(valid)
    del doc["predictions"][middle]["dimension"]
    out.append(doc)
    doc = copy.deepcopy(valid)
    doc["created_at"], doc["predictions"][0]["video_id"], doc["predictions"][-1] = "yesterday", "", 3
    out.append(doc)
    return out


def cpu_per_call(func, doc, repeats: int, calls: int) -> float:
    func(doc)  # the validator built, the schema read
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for _ in range(calls):
            func(doc)
        best = min(best, (time.process_time() - start) / calls)
    return best


def peak_mb(func, doc) -> float:
    tracemalloc.start()
    func(doc)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return round(peak / 2**20, 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ref", default="a3f6604", help="the code before (a git revision)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--calls", type=int, default=10)
    args = parser.parse_args()
    from eval_scripts.formats import submission as new

    with tempfile.TemporaryDirectory() as tmp:
        old = old_submission(args.ref, Path(tmp))
        figures = {"cpus": os.cpu_count(), "load_average_1min": round(os.getloadavg()[0], 2), "cases": []}
        for name, n_videos, kind in (
            ("ridge baseline, 800 predictions", 100, "ridge"),
            ("model run, 800 predictions", 100, "model"),
            ("model run, 7,968 predictions", 996, "model"),
        ):
            doc = document(n_videos, kind)
            row = {"case": name}
            for label, module in (("old", old), ("new", new)):
                row[f"{label}_ms"] = round(
                    1000 * cpu_per_call(module._schema_problems, doc, args.repeats, args.calls), 2
                )
            row["speedup_cpu"] = round(row["old_ms"] / row["new_ms"], 1)
            row["old_peak_mb"], row["new_peak_mb"] = (
                peak_mb(old._schema_problems, doc),
                peak_mb(new._schema_problems, doc),
            )
            cases = [doc, *broken(doc)]
            row["same_problems"] = all(old._schema_problems(d) == new._schema_problems(d) for d in cases)
            row["documents_compared"] = len(cases)
            print(json.dumps(row), flush=True)
            figures["cases"].append(row)
    print(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()

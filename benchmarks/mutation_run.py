"""A small mutation run over `mis_icc_metric` and `eval_scripts/leaderboard/scoring.py` (issue 38 item 7).

What it measures: whether the tests that cover a module notice when its code is changed a little. Each mutant
changes ONE place of one module (a comparison `<` <-> `<=`, `>` <-> `>=`, `==` <-> `!=`, `in` <-> `not in`; an
arithmetic `+` <-> `-`, `*` <-> `/`; a unary minus dropped; a number `n` -> `n + 1`, as mutmut does), is written
over the module (re-emitted by `ast.unparse`), and the module's covering test files run with `pytest -x`
(RUN_SLOW unset: the fast suite). A failing run kills the mutant; a run past the time limit counts as killed
(a loop that no longer ends); a green run is a survivor, printed with its line and change. The module's bytes
are restored after every mutant (and checked by hash at the end).

Why a script of its own and not mutmut: mutmut 3 copies the project into `mutants/` and runs the whole suite
to map coverage first, hours on two shared cores; this samples a few mutants per module (fixed seed) and runs
only the tests that cover the module. Usage, from the repository root:

    python3 benchmarks/mutation_run.py                       # 2 mutants per metric module, 8 for scoring.py
    python3 benchmarks/mutation_run.py --per-module 4 --seed 1 --json /tmp/mutants.json
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Module -> the test files that cover it (its unit tests; the CLI and harness tests that also reach it are left out
# to keep a run short).
COVERING_TESTS: dict[str, tuple[str, ...]] = {
    "mis_icc_metric/agreement_statistics.py": ("tests/test_metric_agreement.py", "tests/test_metric_halo.py"),
    "mis_icc_metric/bootstrap.py": ("tests/test_metric_icc.py", "tests/test_resampling.py"),
    "mis_icc_metric/calibration.py": ("tests/test_calibration.py",),
    "mis_icc_metric/calibration_checks.py": ("tests/test_calibration.py", "tests/test_calibrate_cli.py"),
    "mis_icc_metric/coverage.py": ("tests/test_coverage_rule.py",),
    "mis_icc_metric/estimates.py": ("tests/test_estimate.py",),
    "mis_icc_metric/groups.py": ("tests/test_metric_groups.py",),
    "mis_icc_metric/paired.py": ("tests/test_metric_scoring.py", "tests/test_resampling.py"),
    "mis_icc_metric/planning.py": ("tests/test_plan.py",),
    "mis_icc_metric/ppi.py": ("tests/test_ppi.py",),
    "mis_icc_metric/predictions_io.py": ("tests/test_metric_io.py",),
    "mis_icc_metric/raters.py": ("tests/test_metric_raters.py",),
    "mis_icc_metric/resampling.py": ("tests/test_resampling.py",),
    "mis_icc_metric/scoring.py": ("tests/test_metric_scoring.py", "tests/test_coverage_rule.py"),
    "mis_icc_metric/sensitivity.py": ("tests/test_perturbation_shift.py",),
    "mis_icc_metric/variance_table.py": ("tests/test_variance_sources.py",),
    "eval_scripts/leaderboard/scoring.py": ("tests/test_leaderboard_board.py", "tests/test_leaderboard_hostile.py"),
}
EXTRA_MUTANTS = {"eval_scripts/leaderboard/scoring.py": 8}  # the ranking module gets more than its share

COMPARE_SWAPS = {
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
}
ARITHMETIC_SWAPS = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
SYMBOLS = {
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "is",
    ast.IsNot: "is not",
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
}


def _docstring_ids(tree: ast.AST) -> set[int]:
    """The docstring constants (never mutated)."""
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                ids.add(id(first.value))
    return ids


def _annotation_ids(tree: ast.AST) -> set[int]:
    """Nodes inside annotations (not run under `from __future__ import annotations`)."""
    ids = set()
    for node in ast.walk(tree):
        annotations = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            annotations.append(node.annotation)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            annotations.append(node.returns)
        if isinstance(node, ast.AnnAssign):
            annotations.append(node.annotation)
        for annotation in annotations:
            ids |= {id(inner) for inner in ast.walk(annotation)}
    return ids


def candidates(tree: ast.AST) -> list[tuple[str, int, int]]:
    """(kind, node index in ast.walk order, operator index) of every place a mutant can change."""
    skip = _docstring_ids(tree) | _annotation_ids(tree)
    found = []
    for index, node in enumerate(ast.walk(tree)):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            found += [("compare", index, k) for k, op in enumerate(node.ops) if type(op) in COMPARE_SWAPS]
        elif isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC_SWAPS:
            found.append(("arithmetic", index, 0))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            found.append(("negation", index, 0))
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)
        ):
            found.append(("number", index, 0))
    return found


class _DropNegation(ast.NodeTransformer):
    def __init__(self, target: ast.AST) -> None:
        self.target = target

    def visit_UnaryOp(self, node: ast.UnaryOp) -> ast.AST:
        if node is self.target:
            return node.operand
        return self.generic_visit(node)


def mutate(source: str, place: tuple[str, int, int]) -> tuple[str, int, str]:
    """The mutated module's source, the line changed and what changed."""
    tree = ast.parse(source)
    kind, index, k = place
    node = list(ast.walk(tree))[index]
    line = node.lineno
    if kind == "compare":
        old = type(node.ops[k])
        node.ops[k] = COMPARE_SWAPS[old]()
        change = f"{SYMBOLS[old]} -> {SYMBOLS[COMPARE_SWAPS[old]]}"
    elif kind == "arithmetic":
        old = type(node.op)
        node.op = ARITHMETIC_SWAPS[old]()
        change = f"{SYMBOLS[old]} -> {SYMBOLS[ARITHMETIC_SWAPS[old]]}"
    elif kind == "negation":
        tree = _DropNegation(node).visit(tree)
        change = f"-({ast.unparse(node.operand)}) -> {ast.unparse(node.operand)}"
    else:
        change = f"{node.value!r} -> {node.value + 1!r}"
        node.value = node.value + 1
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n", line, change


def _pytest(tests: tuple[str, ...], timeout: float) -> tuple[str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("RUN_SLOW", None)
    started = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *tests],
            cwd=REPO,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
        )
        outcome = "survived" if done.returncode == 0 else "killed"
    except subprocess.TimeoutExpired:
        outcome = "timeout"
    return outcome, time.perf_counter() - started


def _refuse_uncommitted(modules: list[str]) -> None:
    """The run mutates the checkout's files in place (restored after each mutant): refuse to start on a module with
    uncommitted changes, so a run killed midway (SIGKILL skips the restore) leaves a mutant `git checkout` undoes."""
    changed = subprocess.run(
        ["git", "-C", str(REPO), "status", "--porcelain", "--", *modules], capture_output=True, text=True, check=True
    ).stdout.strip()
    if changed:
        raise SystemExit(
            f"mutation_run: commit or stash these first (a killed run is undone by git checkout):\n{changed}"
        )


def run(per_module: int, seed: int, modules: list[str]) -> dict:
    _refuse_uncommitted(modules)
    rng = random.Random(seed)
    results, started = [], time.perf_counter()
    for module in modules:
        path = REPO / module
        if not path.is_file():
            print(f"{module}: no such module (renamed? update COVERING_TESTS); skipped", flush=True)
            continue
        original = path.read_bytes()
        digest = hashlib.sha256(original).hexdigest()
        tests = COVERING_TESTS[module]
        baseline, seconds = _pytest(tests, timeout=900)
        if baseline != "survived":
            print(f"{module}: its tests fail unmutated ({baseline}); skipped", flush=True)
            continue
        places = candidates(ast.parse(original.decode("utf-8")))
        chosen = rng.sample(places, min(len(places), EXTRA_MUTANTS.get(module, per_module)))
        for place in chosen:
            source, line, change = mutate(original.decode("utf-8"), place)
            try:
                path.write_text(source, encoding="utf-8")
                outcome, took = _pytest(tests, timeout=max(60.0, 3 * seconds))
            finally:
                path.write_bytes(original)
            results.append({"module": module, "line": line, "kind": place[0], "change": change, "outcome": outcome})
            print(f"{outcome:8s} {module}:{line} {change} ({took:.0f} s)", flush=True)
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest, f"{module} was not restored"
    killed = sum(r["outcome"] != "survived" for r in results)
    return {
        "seed": seed,
        "per_module": per_module,
        "mutants": len(results),
        "killed": killed,
        "survived": len(results) - killed,
        "seconds": round(time.perf_counter() - started),
        "results": results,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-module", type=int, default=2, help="mutants per module (default: 2)")
    parser.add_argument("--seed", type=int, default=0, help="which mutants are drawn (default: 0)")
    parser.add_argument("--module", action="append", choices=sorted(COVERING_TESTS), help="only these modules")
    parser.add_argument("--json", type=Path, help="also write the results here")
    args = parser.parse_args()
    summary = run(args.per_module, args.seed, args.module or list(COVERING_TESTS))
    print(
        f"{summary['mutants']} mutants: {summary['killed']} killed, {summary['survived']} survived "
        f"({summary['seconds']} s)"
    )
    for result in summary["results"]:
        if result["outcome"] == "survived":
            print(f"  survived: {result['module']}:{result['line']} {result['change']}")
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

"""The layers hold: imports only go down, no module takes part in an import cycle, and the docs'
architecture page names every module."""

from __future__ import annotations

import ast
import functools
import re
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from structure import parameter_names  # noqa: E402 - the one statement of the parameter rule

LAYERS = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")  # ground first


@functools.cache
def _text(path: Path) -> str:
    """A module's source, read once per test session (the checks below walk the tree about 15 times)."""
    return path.read_text(encoding="utf-8")


_TREES: dict[str, ast.Module] = {}


def _parse(source: str, where: str = "<unknown>") -> ast.Module:
    """`ast.parse(source, where)`, once per source text (the checks only read the trees)."""
    tree = _TREES.get(source)
    if tree is None:
        tree = _TREES[source] = ast.parse(source, where)
    return tree


def _imported_packages(path: Path) -> set[tuple[str, int]]:
    """Top-level packages a module imports anywhere (module level or inside functions), with line numbers."""
    found = set()
    for node in ast.walk(_parse(_text(path), str(path))):
        if isinstance(node, ast.Import):
            found |= {(alias.name.split(".")[0], node.lineno) for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add((node.module.split(".")[0], node.lineno))
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add((node.args[0].value.split(".")[0], node.lineno))
    return found


@pytest.mark.parametrize("layer", LAYERS)
def test_no_module_imports_a_higher_layer(layer):
    higher = set(LAYERS[LAYERS.index(layer) + 1 :])
    violations = [
        f"{path.relative_to(REPO)}:{line} imports {package}"
        for path in sorted((REPO / layer).rglob("*.py"))
        for package, line in sorted(_imported_packages(path))
        if package in higher
    ]
    assert not violations, "imports that go up a layer:\n" + "\n".join(violations)


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _project_modules() -> dict[str, Path]:
    return {_module_name(path): path for layer in LAYERS for path in sorted((REPO / layer).rglob("*.py"))}


def _imported_modules(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules a module imports anywhere (lazily too); `from package import name` counts the
    submodule `package.name` when there is one, else the package itself."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(_parse(_text(path), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            targets = [node.args[0].value]
        for target in targets:
            while target and target not in modules:  # `import a.b.c` of a non-module name: its nearest module
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def import_graph() -> dict[str, set[str]]:
    """module -> the project modules it imports (within and across packages, lazy imports included)."""
    modules = _project_modules()
    return {name: _imported_modules(path, modules) for name, path in modules.items()}


def test_no_import_cycle():
    """Between modules, within a package and across packages. A package's `__init__` that re-exports its
    modules is a node like any other, so `a/__init__ -> a.b -> a` (a submodule importing its package's
    re-exports) is a cycle too."""
    try:
        order = list(TopologicalSorter(import_graph()).static_order())
    except CycleError as err:
        raise AssertionError(f"import cycle: {' -> '.join(err.args[1])}") from None
    assert (
        "mis_bench_dataset.dataset.handle" in order and "eval_scripts.harness.runner" in order
    )  # the graph is the tree


def test_the_cycle_check_finds_a_cycle():
    """The graph check itself: a cycle planted in a copy of the graph is found, with its modules."""
    graph = import_graph()
    assert "mis_bench_dataset.toolkit.errors" in graph["mis_bench_dataset.dataset.format"]  # edges are real imports
    graph["mis_bench_dataset.toolkit.errors"] = {
        *graph["mis_bench_dataset.toolkit.errors"],
        "mis_bench_dataset.dataset.format",
    }
    with pytest.raises(CycleError) as caught:
        list(TopologicalSorter(graph).static_order())
    assert {"mis_bench_dataset.toolkit.errors", "mis_bench_dataset.dataset.format"} <= set(caught.value.args[1])


def test_the_architecture_page_names_every_module():
    """Every module of every package and sub-package, and every sub-package (by name), is named in
    docs/architecture.md."""
    section = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    names = set()
    for layer in LAYERS:
        for path in (REPO / layer).rglob("*"):
            if path.is_dir() and (path / "__init__.py").is_file() and path != REPO / layer:
                names.add((layer, path.name))
            elif path.suffix == ".py" and not path.name.startswith("__"):
                names.add((layer, path.stem))
    missing = sorted(
        f"{layer}.{name}" for layer, name in names if not re.search(rf"[`.(]{re.escape(name)}[`.,)/ ]", section)
    )
    assert not missing, "modules docs/architecture.md does not name: " + ", ".join(missing)


MAX_FUNCTION_LINES = 80  # library functions stay short, argparse registration too (`run`'s options come from fields)


def test_no_library_function_is_longer_than_80_lines():
    too_long = []
    for layer in LAYERS:
        for path in sorted((REPO / layer).rglob("*.py")):
            for node in ast.walk(_parse(_text(path), str(path))):
                if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    continue
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    too_long.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} ({length} lines)")
    assert not too_long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(too_long)


MAX_PARAMETERS = 7  # past seven, the values that travel together become one object (a `Setting`, `ResamplingOptions`)


def _too_many_parameters(source: str, where: str) -> list[str]:
    """Each function of `source` that takes more than MAX_PARAMETERS parameters, keyword-only included."""
    return [
        f"{where}:{node.lineno} {node.name} ({len(parameters)} parameters)"
        for node in ast.walk(_parse(source, where))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and len(parameters := parameter_names(node)) > MAX_PARAMETERS
    ]


def test_no_library_function_takes_more_than_7_parameters():
    """A long call reads right only when the values that travel together travel as one object (a `Setting`,
    `ReportOptions`, `ResamplingOptions`) rather than a dozen loose values, keyword-only ones included."""
    found = [
        problem
        for layer in LAYERS
        for path in sorted((REPO / layer).rglob("*.py"))
        for problem in _too_many_parameters(_text(path), str(path.relative_to(REPO)))
    ]
    assert not found, f"functions over {MAX_PARAMETERS} parameters:\n" + "\n".join(found)


def test_the_parameter_check_finds_a_function_with_too_many_parameters():
    planted = (
        "def eight(a, b, c, d, e, f, g, h):\n    pass\n\n"
        "async def eight_async(a, /, b, c, d, e, f, g, h):\n    pass\n\n"
        "class C:\n    def seven(self, a, b, c, d, e, f, g):\n        pass\n\n"
        "    @classmethod\n    def also_seven(cls, a, b, c, d, e, f, g):\n        pass\n\n"
        "def keyword_only(a, b, c, d, e, f, g, *, h, i):\n    pass\n\n"
        "def starred(a, b, c, d, e, f, *args, **kwargs):\n    pass\n\n"
        "def pass_through(a, b, c, d, e, f, **kwargs):\n    pass\n"
    )
    assert _too_many_parameters(planted, "planted.py") == [
        "planted.py:1 eight (8 parameters)",
        "planted.py:4 eight_async (8 parameters)",
        "planted.py:15 keyword_only (9 parameters)",
        "planted.py:18 starred (8 parameters)",
    ]


# ----------------------------------------------------------------------------- the rooms of eval_scripts

# Each room imports only the rooms before it (and the lower layers); `cli` is the top and nothing imports it.
ROOMS = ("answers", "backends", "formats", "harness", "baselines", "report", "leaderboard", "jobs", "cli")
MAX_LOOSE_MODULES = 3


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if parts[0] == "eval_scripts" and len(parts) > 1 and parts[1] in ROOMS else None


def test_eval_scripts_has_rooms_and_at_most_three_loose_modules():
    package = REPO / "eval_scripts"
    loose = sorted(p.name for p in package.glob("*.py") if not p.name.startswith("__"))
    assert len(loose) <= MAX_LOOSE_MODULES, f"loose modules beside the rooms: {loose}"
    rooms = sorted(p.name for p in package.iterdir() if (p / "__init__.py").is_file())
    assert rooms == sorted(ROOMS), f"rooms on disk {rooms} != the declared ROOMS"


def _upward_arrows(graph: dict[str, set[str]]) -> list[str]:
    """The imports of a room from a room after it in ROOMS (or of the CLI from outside `cli/`)."""
    found = []
    for module, imported in graph.items():
        room = _room(module)
        for target in imported:
            other = _room(target)
            if room is not None and other is not None and ROOMS.index(other) > ROOMS.index(room):
                found.append(f"{module} ({room}) imports {target} ({other}), a room above it")
            elif other == "cli" and room != "cli":
                found.append(f"{module} imports {target}: only eval_scripts.cli may import eval_scripts.cli")
    return sorted(found)


def test_rooms_import_only_rooms_below_them_and_nothing_imports_the_cli():
    """The one-way arrows inside eval_scripts: a room imports itself and the rooms before it in ROOMS."""
    arrows = _upward_arrows(import_graph())
    assert not arrows, "\n".join(arrows)


@pytest.mark.parametrize(
    ("module", "target"),
    [
        ("eval_scripts.answers.expected_score", "eval_scripts.harness.runner"),
        ("eval_scripts.harness.runner", "eval_scripts.cli.run"),
    ],
)
def test_the_room_check_finds_an_arrow_that_runs_back_up(module, target):
    """The check itself: an upward import planted in a copy of the real graph is the one arrow it reports."""
    graph = import_graph()
    graph[module] = {*graph[module], target}
    (arrow,) = _upward_arrows(graph)
    assert arrow.startswith(f"{module} ") and target in arrow


@pytest.mark.parametrize("room", ROOMS)
def test_each_room_docstring_names_exactly_its_modules(room):
    """A room's `__init__` docstring lists each of its modules as a '- `name`: what it does' line."""
    folder = REPO / "eval_scripts" / room
    doc = ast.get_docstring(_parse(_text(folder / "__init__.py"))) or ""
    listed = set(re.findall(r"^- `(\w+)`:", doc, re.M))
    on_disk = {p.stem for p in folder.glob("*.py") if not p.name.startswith("__")}
    on_disk |= {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
    assert listed == on_disk, f"{room}/__init__.py lists {sorted(listed)}; the folder has {sorted(on_disk)}"


# ----------------------------------------------------------------------------- the rooms of the ground package

# `mis_bench_dataset`: the toolkit-wide helpers, then the benchmark's facts (its loose modules), then the rooms
# that read a release, read a build back, write a build, and generate a synthetic release.
GROUND_ORDER = ("toolkit", "facts", "release", "dataset", "builder", "synth")


def _ground_room(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "mis_bench_dataset" or len(parts) < 2:
        return None
    return parts[1] if parts[1] in GROUND_ORDER else "facts"


def _ground_arrows_up(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, imported in graph.items():
        room = _ground_room(module)
        for target in imported:
            other = _ground_room(target)
            if room is not None and other is not None and GROUND_ORDER.index(other) > GROUND_ORDER.index(room):
                found.append(f"{module} ({room}) imports {target} ({other}), a room above it")
    return sorted(found)


def test_the_ground_package_rooms_import_only_rooms_below_them():
    """Inside mis_bench_dataset imports go one way: toolkit <- facts <- release <- dataset <- builder <- synth."""
    package = REPO / "mis_bench_dataset"
    rooms = {p.name for p in package.iterdir() if (p / "__init__.py").is_file()}
    assert rooms == set(GROUND_ORDER) - {"facts"}, f"rooms on disk {sorted(rooms)} != GROUND_ORDER"
    arrows = _ground_arrows_up(import_graph())
    assert not arrows, "\n".join(arrows)


def test_the_ground_check_finds_an_arrow_that_runs_back_up():
    graph = import_graph()
    module, target = "mis_bench_dataset.release.fetch", "mis_bench_dataset.synth.sample"
    graph[module] = {*graph[module], target}
    (arrow,) = _ground_arrows_up(graph)
    assert arrow.startswith(f"{module} ") and target in arrow


@pytest.mark.parametrize("package", LAYERS)
def test_no_two_modules_of_one_package_share_a_name(package):
    """A module's name says which one it is: `cli/run.py` beside `baselines/run.py` would not."""
    seen: dict[str, list[str]] = {}
    for path in sorted((REPO / package).rglob("*.py")):
        if not path.name.startswith("__"):
            seen.setdefault(path.stem, []).append(str(path.relative_to(REPO)))
    twice = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not twice, f"module names used twice in {package}: {twice}"


# One helper per job (issue 38 item 6): every lock through `toolkit.atomic` (filelock), every bar through
# `toolkit.progress`.
LOCK_HELPER = "mis_bench_dataset/toolkit/atomic.py"
PROGRESS_HELPER = "mis_bench_dataset/toolkit/progress.py"


def _helper_bypasses(source: str, rel: str) -> list[str]:
    """`import fcntl` anywhere, `filelock` outside the lock helper, and `tqdm(...)` / `trange(...)` calls outside the
    progress helper, in one module (with line numbers)."""
    found = []
    for node in ast.walk(_parse(source, rel)):
        if isinstance(node, ast.Import | ast.ImportFrom):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for top in {name.split(".")[0] for name in names}:
                if top == "fcntl" or (top == "filelock" and rel != LOCK_HELPER):
                    found.append(f"{rel}:{node.lineno} imports {top}")
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("tqdm", "trange")
            and rel != PROGRESS_HELPER
        ):
            found.append(f"{rel}:{node.lineno} calls tqdm")
    return found


def test_no_fcntl_lock_and_no_tqdm_bar_outside_their_one_helper():
    bypasses = [
        hit
        for layer in LAYERS
        for path in sorted((REPO / layer).rglob("*.py"))
        for hit in _helper_bypasses(_text(path), path.relative_to(REPO).as_posix())
    ]
    assert not bypasses, f"locks go through {LOCK_HELPER}, bars through {PROGRESS_HELPER}:\n" + "\n".join(bypasses)


@pytest.mark.parametrize(
    "source",
    [
        "import fcntl\n",
        "def f():\n    from fcntl import flock\n",
        "import tqdm\ntqdm.tqdm(range(3))\n",
        "from tqdm import trange\ntrange(3)\n",
        "from filelock import FileLock\n",
    ],
)
def test_the_helper_check_finds_a_bypass(source):
    assert len(_helper_bypasses(source, "eval_scripts/probe.py")) == 1
    assert ("tqdm" in source or "trange" in source) is not bool(_helper_bypasses(source, PROGRESS_HELPER))
    assert ("filelock" in source) is not bool(_helper_bypasses(source, LOCK_HELPER))


def test_every_lazy_export_goes_through_the_shared_helper():
    """No package `__init__` writes its own PEP 562 `__getattr__`: `toolkit.lazy.lazy_exports` is the one."""
    own = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for layer in LAYERS
        for path in sorted((REPO / layer).rglob("__init__.py"))
        for node in _parse(_text(path)).body
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
    ]
    assert not own, "use mis_bench_dataset.toolkit.lazy.lazy_exports:\n" + "\n".join(own)


# One default per statistic option (issue 38 item 6): every resample count, CI level and statistics seed in a
# signature defaults to the named constant of `mis_bench_dataset.toolkit.defaults` (DEFAULT_BOOTSTRAP, the paper's
# 10,000; DEFAULT_CONFIDENCE; DEFAULT_SEED), never to a number of its own. Tests may pass fewer resamples.
STATISTIC_PARAMETERS = frozenset({"n_bootstrap", "n_resamples", "n_boot", "confidence"})
SEEDED_STATISTICS = ("mis_icc_metric/", "mis_bench_dataset/icc.py", "mis_bench_dataset/splits.py") + tuple(
    f"eval_scripts/{room}/" for room in ("leaderboard", "report", "jobs")
)


# The named defaults a statistic option may take: the one constant, or a name the paper's protocol gives it (its
# value is the constant's: `TABLE4_BOOTSTRAP = PAPER_BOOTSTRAP_RESAMPLES = DEFAULT_BOOTSTRAP`).
NAMED_STATISTIC_DEFAULTS = frozenset(
    {
        "DEFAULT_BOOTSTRAP",
        "DEFAULT_CONFIDENCE",
        "DEFAULT_SEED",
        "PAPER_BOOTSTRAP_RESAMPLES",
        "PAPER_BOOTSTRAP",
        "TABLE4_BOOTSTRAP",
        "PAPER_ROWS_SEED",
    }
)


def _default_values(tree: ast.AST):
    """(name, default, where) of every parameter default and every dataclass-style field default (`x: int = 3`,
    `x: int = field(default=3)`)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            positional = [*node.args.posonlyargs, *node.args.args]
            pairs = list(zip(positional[len(positional) - len(node.args.defaults) :], node.args.defaults, strict=True))
            pairs += [(arg, default) for arg, default in zip(node.args.kwonlyargs, node.args.kw_defaults, strict=True)]
            for arg, default in pairs:
                if default is not None:
                    yield arg.arg, default, f"{node.lineno} {node.name}"
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    value = item.value
                    if isinstance(value, ast.Call) and getattr(value.func, "id", "") == "field":
                        value = next((k.value for k in value.keywords if k.arg == "default"), None)
                    if value is not None:
                        yield item.target.id, value, f"{item.lineno} {node.name}"


def _literal_statistic_defaults(source: str, rel: str) -> list[str]:
    """Statistic options whose default is not one of `NAMED_STATISTIC_DEFAULTS` (a number, or a name of its own
    such as a module's `AUTHORS_BOOTSTRAP = 2_000`); `None` and `n_...=0` ("no CIs") are choices, not counts."""
    found = []
    for name, default, where in _default_values(_parse(source, rel)):
        statistic = name in STATISTIC_PARAMETERS or name == "comparison_bootstrap"
        if not statistic and not (name == "seed" and rel.startswith(SEEDED_STATISTICS)):
            continue
        if isinstance(default, ast.Constant) and (
            default.value is None or isinstance(default.value, bool) or (name.startswith("n_") and default.value == 0)
        ):
            continue
        named = default.attr if isinstance(default, ast.Attribute) else getattr(default, "id", None)
        if named not in NAMED_STATISTIC_DEFAULTS:
            found.append(f"{rel}:{where}({name}={ast.unparse(default)})")
    return found


def test_every_statistic_default_is_the_one_constant():
    literals = [
        hit
        for layer in LAYERS
        for path in sorted((REPO / layer).rglob("*.py"))
        for hit in _literal_statistic_defaults(_text(path), path.relative_to(REPO).as_posix())
    ]
    assert not literals, "use DEFAULT_BOOTSTRAP / DEFAULT_CONFIDENCE / DEFAULT_SEED:\n" + "\n".join(literals)


def test_the_default_check_finds_a_literal():
    source = "def plan(x, *, n_resamples: int = 2000, seed=0, confidence=0.9, n_bootstrap=0):\n    pass\n"
    assert [hit.split(" ", 1)[1] for hit in _literal_statistic_defaults(source, "mis_icc_metric/x.py")] == [
        "plan(n_resamples=2000)",
        "plan(seed=0)",
        "plan(confidence=0.9)",
    ]
    assert len(_literal_statistic_defaults(source, "raft_trainer/tiny.py")) == 2  # a model's seed is not a statistic's
    # a second default under a name of its own, and a dataclass field's, are found too; the constant is not
    second = (
        "AUTHORS_BOOTSTRAP = 2_000\ndef board(*, n_bootstrap=AUTHORS_BOOTSTRAP, confidence=DEFAULT_CONFIDENCE): ...\n"
    )
    fields = "class Options:\n    n_bootstrap: int = 2000\n    seed: int = field(default=0)\n    resample: str = 'x'\n"
    assert [hit.split(" ", 1)[1] for hit in _literal_statistic_defaults(second, "eval_scripts/leaderboard/a.py")] == [
        "board(n_bootstrap=AUTHORS_BOOTSTRAP)"
    ]
    assert [hit.split(" ", 1)[1] for hit in _literal_statistic_defaults(fields, "eval_scripts/report/o.py")] == [
        "Options(n_bootstrap=2000)",
        "Options(seed=0)",
    ]

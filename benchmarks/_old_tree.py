"""One module of the checkout as it was at a git ref, importable beside this tree's, for the benchmarks that time
old code against new in one process (its own imports resolve to this tree's modules)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]


def module_at(ref: str, path: str, name: str, work: Path | None = None) -> ModuleType:
    """`path` (relative to the checkout) as it was at `ref`, loaded as module `name` (a dotted name inside a
    package keeps its relative imports working) from a copy in `work` (a new temporary folder when None)."""
    source = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{ref}:{path}"], capture_output=True, text=True, check=True
    ).stdout
    copy = Path(work or tempfile.mkdtemp()) / Path(path).name
    copy.write_text(source)
    spec = importlib.util.spec_from_file_location(name, copy)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module

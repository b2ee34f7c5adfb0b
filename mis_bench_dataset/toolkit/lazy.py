"""One way to export names lazily: a package lists `name -> module` and its `__getattr__` imports on
first use, so `import package` (and `mis-bench --help`) stays light (PEP 562)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `names[name]` (a module path; a leading dot is
    relative to `package`) on first access and returns its attribute `name`.

    Examples:
        >>> getattr_ = lazy_exports("pkg", {"sqrt": "math"})
        >>> getattr_("sqrt")(9.0)
        3.0
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            return getattr(importlib.import_module(names[name], package), name)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    module = sys.modules.get(package)
    if module is not None:  # `dir(package)` (tab completion, `help()`) lists the lazy names too (PEP 562's __dir__)
        loaded = vars(module)
        module.__dir__ = lambda: sorted({*loaded, *names})
    return __getattr__

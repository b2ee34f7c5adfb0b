"""Where the `evaluate` module is, and loading it without the Hub.

evaluate 0.4.6 (`evaluate.loading.evaluation_module_factory`) resolves a path
argument in this order:
1. ``path`` ends with ``NAME.py`` and is a file -> that script;
2. ``path/NAME.py`` exists (NAME = last path component) -> that script; this is
   checked relative to the current working directory, so ``evaluate.load("mis_icc")``
   finds ``./mis_icc/mis_icc.py``, i.e. it works when the working directory is the
   ``mis_icc_metric/`` folder of this repository, and
   ``evaluate.load("mis_icc_metric/mis_icc")`` works from the repository root;
3. otherwise a bare name is a Hub id (``evaluate-metric/mis_icc`` ...), then the
   modules cache; offline and uncached this fails.
`metric_path()` gives the absolute folder so that the load works from anywhere.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["metric_path", "load"]


def metric_path() -> str:
    """Absolute path of the installed metric folder (``.../mis_icc_metric/mis_icc``)."""
    return str(Path(__file__).resolve().parent / "mis_icc")


def load(**kwargs):
    """``evaluate.load(metric_path(), **kwargs)``: the MIS-Bench metric, no network needed."""
    import evaluate

    return evaluate.load(metric_path(), **kwargs)

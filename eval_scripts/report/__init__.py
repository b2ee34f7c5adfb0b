"""Reports for one run or a set of runs, as the paper shows them: the Table 3 view (each system's best
configuration), the Figure 2 view (every configuration by dimension), the Table 4 / Figure 4 comparison,
MSE, parse and exclusion rates, and predicted-vs-gold scatters."""

from __future__ import annotations

__all__ = ["write_report", "RunView", "run_views"]


def __getattr__(name: str):
    # Lazy: the report's plotting and scoring imports are heavy; `mis-bench --help` needs none of them.
    if name == "write_report":
        from eval_scripts.report.build import write_report

        return write_report
    if name in ("RunView", "run_views"):
        from eval_scripts.report import table

        return getattr(table, name)
    raise AttributeError(f"module 'eval_scripts.report' has no attribute {name!r}")

"""Reports for one run or a set of runs: the Table-3-style ICC table, MSE, parse and
exclusion rates, a radar chart against the human ceiling, and predicted-vs-gold scatters."""

from eval_scripts.report.build import write_report
from eval_scripts.report.table import RunView, run_views

__all__ = ["write_report", "RunView", "run_views"]

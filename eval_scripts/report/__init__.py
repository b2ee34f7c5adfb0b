"""Reports for one run or a set of runs, as the paper shows them: the Table 3 view (each system's best
configuration), the Figure 2 view (every configuration by dimension), the Table 4 / Figure 4 comparison,
MSE, parse and exclusion rates, and predicted-vs-gold scatters.

- `about`: what a report was run on (the sample, or a build's gold source and split), for its title and top.
- `agreement`: the agreement tables beyond ICC(3,1), and the halo beside range use.
- `agreement_plots`: agreement figures of one run, per dimension.
- `writer`: write a report (Markdown, self-contained HTML, report.json, PNGs).
- `comparison`: the paper's Table 4 / Figure 4 view: systems on the same split.
- `crossval_view`: the cross-validation section: per fold seed, mean and range, beside the test split.
- `formatting`: number and text formatting shared by reports and the leaderboard page.
- `judge_card_html`: the HTML of `mis-bench trust`'s page ("can I use this judge?").
- `inputs`: what a report reads: results files, labels, rescoring.
- `options`: the report's user-facing choices (`ReportOptions`: title, reference, resampling, scatters,
  subgroups), light enough for `--help`.
- `plots`: figures: the radar with the human ceiling, configuration x dimension views.
- `sensitivity_view`: a judge under perturbations: the shift tables and the sensitivity figure.
- `subgroups`: agreement by time point, stimulus or clinician and at the therapist level, as tables and sentences.
- `stability`: each run's agreement with itself beside its agreement with the experts.
- `table`: report tables as cell grids, rendered to Markdown and HTML.
- `text_table`: a Table-3-like plain-text table for the terminal.
- `views`: the paper's views of many runs as data (Table 3, Figure 2).
"""

from __future__ import annotations

from mis_bench_dataset.toolkit.lazy import lazy_exports

__all__ = ["write_report", "ReportOptions", "RunView", "run_views"]


# Lazy: the report's plotting and scoring imports are heavy; `mis-bench --help` needs none of them.
__getattr__ = lazy_exports(
    __name__,
    {
        "write_report": "eval_scripts.report.writer",
        "ReportOptions": ".options",
        "RunView": ".table",
        "run_views": ".table",
    },
)

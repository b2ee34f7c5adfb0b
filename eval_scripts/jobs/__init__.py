"""Whole jobs the CLI starts with one call, with typed parameters (no argparse here).

- `calibration`: `mis-bench calibrate` on a build's splits, `--apply` of a saved calibrator, the real-data summary.
- `default_job`: `mis-bench run` with no model: CPU baselines, report and leaderboard (a build or the sample).
- `reproduction`: `mis-bench reproduce table4|table6` from the authors' public files.
- `perturb`: `mis-bench run --perturb`: shift tables of a model setting or of the text ridge, written.
- `report_job`: `mis-bench report`: results files in, the report folder out (`report_runs`).
- `judge_card`: `mis-bench trust`: one page answering "can I use this judge?" (verdict, number to cite, flags).
- `trust`: `mis-bench reproduce trust`: the docs page "How far to trust a judge", a list of sections.
- `ridge_column`: the text ridge beside Table 4, fitted on the authors' training rows, paired against MIS-RAFT.
"""

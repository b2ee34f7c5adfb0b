"""eval_scripts: the zero-shot harness (prompts, parser, backends, resumable runs), reports and leaderboard.

The public API is exactly `__all__`: import these names from the package
(`from eval_scripts import RunConfig, run_setting`); every other module is internal and may change.

Examples:
    >>> from eval_scripts import parse_score
    >>> parse_score("The score prediction is: 3.7")
    3.7
"""

from typing import TYPE_CHECKING

from mis_bench_dataset.toolkit.lazy import lazy_exports

# name -> the module that defines it. Lazy: the harness imports numpy and pyarrow; `mis-bench --help`
# imports this package and needs none of it.
_LAZY = {
    # one setting or a grid, end to end
    "RunConfig": ".harness.config",
    "Setting": "mis_bench_dataset.setting",
    "run_setting": ".harness.runner",
    "run_grid": ".harness.runner",
    "grid_configs": ".harness.runner",
    "RunResult": ".harness.execution",
    "GridEntry": ".harness.execution",
    # backends and one answer
    "get_backend": ".backends.base",
    "backend_names": ".backends.base",
    "backend_origins": ".backends.base",
    "Backend": ".backends.base",
    "backend_option": ".backends.backend_options",
    "Completion": ".backends.base",
    "DecodingConfig": ".backends.base",
    "BackendUnavailable": ".backends.base",
    "UnsupportedSetting": "mis_bench_dataset.setting_inputs",
    "Prompt": ".answers.prompts",
    "render_prompt": ".answers.prompts",
    "render_paper_prompt": ".answers.prompts",
    "parse_score": "mis_icc_metric.score_parser",
    "TokenChoice": ".answers.expected_score",
    "expected_from_tokens": ".answers.expected_score",
    "TRANSCRIPT_PERTURBATIONS": ".answers.perturbations",
    "PROMPT_PERTURBATIONS": ".answers.perturbations",
    "perturb_transcripts": ".answers.perturbations",
    "perturb_prompt": ".answers.perturbations",
    # baselines, reports, the leaderboard and juries
    "run_baseline": ".baselines.baseline_run",
    "BaselineBatch": ".baselines.baseline_run",
    "cross_validate": ".baselines.crossval",
    "write_report": ".report.writer",
    "report_runs": ".jobs.report_job",
    "run_agreement": ".harness.readout_agreement",
    "readouts_summary": ".harness.readout_agreement",
    "ReportDone": ".jobs.report_job",
    "ReportOptions": ".report.options",
    "build_leaderboard": ".leaderboard.scoring",
    "read_board_references": ".leaderboard.references",
    "BoardRules": ".leaderboard.scoring",
    "BoardReferences": ".leaderboard.references",
    "write_leaderboard": ".leaderboard.outputs",
    "run_jury": ".leaderboard.juries",
    "JuryRecipe": ".leaderboard.juries",
    "load_submission": ".formats.submission",
    "package_submission": ".formats.submission",
    "push_submission": ".formats.submission",
    "authors_leaderboard": ".leaderboard.authors",
    "write_authors_page": ".leaderboard.authors",
    "load_results": ".report.inputs",
    "rescore": ".report.inputs",
    # a run without live calls: what it would send, a provider's batch files out and in; the cache; re-parsing
    "dry_run": ".harness.offline_runs",
    "export_batch": ".harness.offline_runs",
    "import_batch": ".harness.offline_runs",
    "check_cache": ".harness.cache_maintenance",
    "merge_caches": ".harness.cache_maintenance",
    "reparse": ".harness.reparse",
    # whole jobs
    "run_default_job": ".jobs.default_job",
    "CrossValidationPlan": ".jobs.default_job",
    "calibrate": ".jobs.calibration",
    "CalibrationSplits": ".jobs.calibration",
    "apply_calibrator": ".jobs.calibration",
    "model_perturbations": ".jobs.perturb",
    "ridge_perturbations": ".jobs.perturb",
    "reproduce_table4": ".jobs.reproduction",
    "reproduce_table6": ".jobs.reproduction",
    "reproduce_trust_page": ".jobs.trust",
    # `mis-bench trust`: the judge's trust page (card)
    "trust_page": ".jobs.judge_card",
    "judge_card": ".jobs.judge_card",
}

if TYPE_CHECKING:  # the names of _LAZY, for type checkers and editors (written by benchmarks/front_door.py --write)
    from mis_bench_dataset.setting import Setting as Setting
    from mis_bench_dataset.setting_inputs import UnsupportedSetting as UnsupportedSetting
    from mis_icc_metric.score_parser import parse_score as parse_score

    from .answers.expected_score import TokenChoice as TokenChoice
    from .answers.expected_score import expected_from_tokens as expected_from_tokens
    from .answers.perturbations import PROMPT_PERTURBATIONS as PROMPT_PERTURBATIONS
    from .answers.perturbations import TRANSCRIPT_PERTURBATIONS as TRANSCRIPT_PERTURBATIONS
    from .answers.perturbations import perturb_prompt as perturb_prompt
    from .answers.perturbations import perturb_transcripts as perturb_transcripts
    from .answers.prompts import Prompt as Prompt
    from .answers.prompts import render_paper_prompt as render_paper_prompt
    from .answers.prompts import render_prompt as render_prompt
    from .backends.backend_options import backend_option as backend_option
    from .backends.base import Backend as Backend
    from .backends.base import BackendUnavailable as BackendUnavailable
    from .backends.base import Completion as Completion
    from .backends.base import DecodingConfig as DecodingConfig
    from .backends.base import backend_names as backend_names
    from .backends.base import backend_origins as backend_origins
    from .backends.base import get_backend as get_backend
    from .baselines.baseline_run import BaselineBatch as BaselineBatch
    from .baselines.baseline_run import run_baseline as run_baseline
    from .baselines.crossval import cross_validate as cross_validate
    from .formats.submission import load_submission as load_submission
    from .formats.submission import package_submission as package_submission
    from .formats.submission import push_submission as push_submission
    from .harness.cache_maintenance import check_cache as check_cache
    from .harness.cache_maintenance import merge_caches as merge_caches
    from .harness.config import RunConfig as RunConfig
    from .harness.execution import GridEntry as GridEntry
    from .harness.execution import RunResult as RunResult
    from .harness.offline_runs import dry_run as dry_run
    from .harness.offline_runs import export_batch as export_batch
    from .harness.offline_runs import import_batch as import_batch
    from .harness.readout_agreement import readouts_summary as readouts_summary
    from .harness.readout_agreement import run_agreement as run_agreement
    from .harness.reparse import reparse as reparse
    from .harness.runner import grid_configs as grid_configs
    from .harness.runner import run_grid as run_grid
    from .harness.runner import run_setting as run_setting
    from .jobs.calibration import CalibrationSplits as CalibrationSplits
    from .jobs.calibration import apply_calibrator as apply_calibrator
    from .jobs.calibration import calibrate as calibrate
    from .jobs.default_job import CrossValidationPlan as CrossValidationPlan
    from .jobs.default_job import run_default_job as run_default_job
    from .jobs.judge_card import judge_card as judge_card
    from .jobs.judge_card import trust_page as trust_page
    from .jobs.perturb import model_perturbations as model_perturbations
    from .jobs.perturb import ridge_perturbations as ridge_perturbations
    from .jobs.report_job import ReportDone as ReportDone
    from .jobs.report_job import report_runs as report_runs
    from .jobs.reproduction import reproduce_table4 as reproduce_table4
    from .jobs.reproduction import reproduce_table6 as reproduce_table6
    from .jobs.trust import reproduce_trust_page as reproduce_trust_page
    from .leaderboard.authors import authors_leaderboard as authors_leaderboard
    from .leaderboard.authors import write_authors_page as write_authors_page
    from .leaderboard.juries import JuryRecipe as JuryRecipe
    from .leaderboard.juries import run_jury as run_jury
    from .leaderboard.outputs import write_leaderboard as write_leaderboard
    from .leaderboard.references import BoardReferences as BoardReferences
    from .leaderboard.references import read_board_references as read_board_references
    from .leaderboard.scoring import BoardRules as BoardRules
    from .leaderboard.scoring import build_leaderboard as build_leaderboard
    from .report.inputs import load_results as load_results
    from .report.inputs import rescore as rescore
    from .report.options import ReportOptions as ReportOptions
    from .report.writer import write_report as write_report

__all__ = list(_LAZY)

__getattr__ = lazy_exports(__name__, _LAZY)

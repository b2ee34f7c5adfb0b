"""Truncated answers are reported apart from unparsed ones: report tables and JSON, the grid table, the leaderboard.

A real harness run (against the fake server, which cuts a known share of answers at the "token
limit") writes a schema-1.1 results file; a hand-made 1.0 file without outcomes sits next to it.
"""

from __future__ import annotations

import json
import threading

import pytest
from datasets import Dataset

from eval_scripts import GridEntry, ReportOptions, RunConfig, build_leaderboard, run_setting, write_report
from eval_scripts.backends.openai_backend import RetryPolicy
from eval_scripts.leaderboard import render_page
from eval_scripts.leaderboard.outputs import csv_rows
from eval_scripts.report.formatting import MISSING
from eval_scripts.report.table import rates_table, run_views
from eval_scripts.report.text_table import format_table
from mis_bench_dataset.dataset.loading import gold_references
from mis_icc_metric import ResamplingOptions

from _harness_helpers import scoring_rows
from _leaderboard_helpers import make_results

N_VIDEOS = 6


class CutSome:
    """Every third prompt (by digest) is answered "3." with finish_reason length; records which."""

    def __init__(self):
        self.cut, self.lock = set(), threading.Lock()

    def next(self, digest: str) -> str:
        if int(digest, 16) % 3:
            return "ok"
        with self.lock:
            self.cut.add(digest)
        return "truncated"


@pytest.fixture(scope="module")
def runs(tmp_path_factory, chat_server):
    rows = scoring_rows(N_VIDEOS)
    plan = CutSome()
    out = tmp_path_factory.mktemp("runs")
    with chat_server(plan) as server:
        options = dict(
            base_url=server.base_url,
            concurrency=4,
            retry=RetryPolicy(1, 0.001, 0.002, 5.0),
            api_key_env="MIS_BENCH_UNSET",
        )
        config = RunConfig(
            backend="openai", model="served/model", out=out, backend_options=options, n_bootstrap=50, progress=False
        )
        result = run_setting(config, scoring=Dataset.from_list(rows))
    truncated_results = json.loads(result.results_path.read_text())
    references = gold_references(rows)
    plain = make_results({key: 3.0 for key in references}, model="older/model", scores=truncated_results["scores"])
    return result, truncated_results, plain, references, len(plan.cut)


def test_the_run_counts_truncated_rows_apart(runs) -> None:
    result, results, _, _, n_cut = runs
    assert 0 < n_cut < N_VIDEOS * 8
    assert results["outcomes"]["overall"] == {
        "answered": N_VIDEOS * 8 - n_cut,
        "unparsed": 0,
        "truncated": n_cut,
        "failed": 0,
    }
    assert result.n_truncated == n_cut and result.n_unparsed == 0
    table = format_table([GridEntry("text direct", result)])
    header, row = table.splitlines()
    assert header.split()[-3:] == ["parsed", "truncated", "failed"]
    assert row.split()[-2:] == [str(n_cut), "0"]


def test_report_shows_truncated_unparsed_and_failed_apart(runs, tmp_path) -> None:
    _, results, plain, _, n_cut = runs
    table = rates_table(run_views([results, plain]))
    columns = {name: i for i, name in enumerate(table.header)}
    truncated_row, plain_row = table.rows
    assert [truncated_row[columns[k]] for k in ("Unparsed", "Truncated", "Failed")] == ["0", str(n_cut), "0"]
    assert [plain_row[columns[k]] for k in ("Unparsed", "Truncated", "Failed")] == [MISSING] * 3  # a 1.0 file
    files = write_report([results, plain], tmp_path / "report", ReportOptions(comparison_bootstrap=50, scatters="none"))
    data = json.loads(files.json.read_text())
    outcomes = {run["model"]: run["outcomes"] for run in data["configurations"]}
    assert outcomes == {"served/model": results["outcomes"]["overall"], "older/model": None}
    assert "| Unparsed | Truncated | Failed |" in files.markdown.read_text()


def test_leaderboard_shows_truncated_answers_as_the_run_recorded_them(runs, tmp_path) -> None:
    _, results, plain, references, n_cut = runs
    folder = tmp_path / "submissions"
    folder.mkdir()
    (folder / "a.json").write_text(json.dumps(results))
    (folder / "b.json").write_text(json.dumps(plain))
    board = build_leaderboard(folder, references, split="test", resampling=ResamplingOptions(n_bootstrap=50))
    assert board["rejected"] == []
    # Truncated answers are unanswered pairs: that entry is listed unranked, with the counts the run recorded.
    assert [entry["model"] for entry in board["unranked"]] == ["served/model"]
    by_model = {entry["model"]: entry for entry in [*board["entries"], *board["unranked"]]}
    assert by_model["served/model"]["outcomes"] == results["outcomes"]
    assert by_model["older/model"]["outcomes"] is None
    rows = {row["model"]: row for row in csv_rows(board)}
    assert rows["served/model"]["truncated"] == n_cut and rows["older/model"]["truncated"] is None
    per_dimension = {key: counts["truncated"] for key, counts in results["outcomes"]["dimensions"].items()}
    assert {key: rows["served/model"][f"{key}_truncated"] for key in per_dimension} == per_dimension
    page = render_page(board)
    assert '<th data-key="truncated" data-type="num">Truncated</th>' in page
    assert 'data-key="truncated" data-value=""' in page  # the ranked 1.0 file recorded no outcomes
    assert f"0 unparsed, {n_cut} truncated at the token limit, 0 failed requests" in page

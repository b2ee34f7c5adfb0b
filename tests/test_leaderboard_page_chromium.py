"""The leaderboard page in a real headless Chromium: it loads, sorts on click, the
numbers shown are the JSON's, and a row click opens its detail row.

A probe script is appended to a copy of the page; it clicks like a user and writes
what it saw into the DOM, which `chromium --dump-dom` returns. Skips when no
Chromium is installed (Debian: `apt-get install chromium`).
"""

from __future__ import annotations

import html as html_lib
import json
import re
import shutil
import subprocess

import pytest

from eval_scripts import build_leaderboard
from eval_scripts.leaderboard import render_page
from eval_scripts.report.formatting import pct
from mis_icc_metric import ResamplingOptions

from _leaderboard_helpers import make_references, make_results, noisy_predictions

BROWSER = next(
    (shutil.which(name) for name in ("chromium", "chromium-browser", "google-chrome") if shutil.which(name)), None
)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install chromium)"),
]

PROBE = r"""
<script>
(function () {
  const models = () => Array.from(document.querySelectorAll('#leaderboard tbody.entries tr.entry'))
    .map(row => row.querySelector('td[data-key="model"]').textContent);
  const header = key => document.querySelector('#leaderboard thead th[data-key="' + key + '"]');
  const seen = {initial: models()};
  header('model').click(); seen.model_first = models();
  header('model').click(); seen.model_second = models();
  header('empathy').click(); seen.empathy_first = models();
  seen.empathy_sort = header('empathy').getAttribute('aria-sort');
  header('empathy').click(); seen.empathy_second = models();
  header('rank').click(); seen.rank_first = models();
  const detail = document.getElementById('detail-e2');
  seen.detail_hidden_before = detail.hidden;
  document.querySelector('tr.entry[data-id="e2"] td[data-key="model"]').click();
  seen.detail_hidden_after = detail.hidden;
  seen.detail_follows_row = detail.previousElementSibling.dataset.id;
  seen.cells = Array.from(document.querySelectorAll('#leaderboard tbody.entries tr.entry')).map(row =>
    Object.fromEntries(Array.from(row.querySelectorAll('td'))
      .map(td => [td.dataset.key, [td.textContent, td.dataset.value, td.title]])));
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
})();
</script>
"""


def _run_in_chromium(page: str, tmp_path) -> dict:
    path = tmp_path / "page.html"
    path.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    command = [
        BROWSER,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        path.as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout, re.S)
    assert match, f"probe did not run; chromium rc={result.returncode} stderr={result.stderr[-2000:]}"
    return json.loads(html_lib.unescape(match.group(1)))


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    references = make_references()
    folder = tmp_path_factory.mktemp("subs")
    for seed, (model, noise) in enumerate([("zeta/good", 0.2), ("alpha/mid", 0.6), ("mu/poor", 1.2)]):
        results = make_results(noisy_predictions(references, noise, seed=seed + 40, none_rate=0.0), model=model)
        (folder / f"{model.replace('/', '_')}.json").write_text(json.dumps(results))
    return build_leaderboard(folder, references, resampling=ResamplingOptions(n_bootstrap=100, seed=0))


def test_page_loads_sorts_and_shows_the_json_numbers(board, tmp_path):
    seen = _run_in_chromium(render_page(board), tmp_path)
    ranked = [e["model"] for e in board["entries"]]
    assert seen["initial"] == ranked == ["zeta/good", "alpha/mid", "mu/poor"]
    assert seen["model_first"] == sorted(ranked)
    assert seen["model_second"] == sorted(ranked, reverse=True)
    by_empathy = sorted(board["entries"], key=lambda e: e["scores"]["dimensions"]["empathy"]["icc"], reverse=True)
    assert seen["empathy_first"] == [e["model"] for e in by_empathy]
    assert seen["empathy_sort"] == "descending"
    assert seen["empathy_second"] == [e["model"] for e in reversed(by_empathy)]
    assert seen["rank_first"] == ranked
    assert seen["detail_hidden_before"] is True and seen["detail_hidden_after"] is False
    assert seen["detail_follows_row"] == "e2"

    for cells, entry in zip(seen["cells"], board["entries"], strict=True):  # after the rank click: ranked order
        for key, block in entry["scores"]["dimensions"].items():
            text, raw, title = cells[key]
            assert float(raw) == block["icc"]  # exact: the page carries the JSON value
            assert text == pct(block["icc"])
            assert title == f"ICC {pct(block['icc'])}%, 95% CI [{pct(block['icc_ci'][0])}, {pct(block['icc_ci'][1])}]"
        assert float(cells["overall"][1]) == entry["scores"]["overall"]["icc"]
        assert cells["model"][0] == entry["model"]


LAYOUT_PROBE = r"""
<script>
(function () {
  const width = window.innerWidth;
  const table = document.getElementById('leaderboard');
  const clipped = cell => cell.scrollWidth > cell.clientWidth + 1;
  const seen = {
    width: width,
    page_scroll_width: document.documentElement.scrollWidth,
    table_right: table.getBoundingClientRect().right,
    headers: Array.from(table.querySelectorAll('thead th')).map(th => ({
      key: th.dataset.key, text: th.textContent, title: th.title,
      right: th.getBoundingClientRect().right, clipped: clipped(th)})),
    clipped_cells: Array.from(table.querySelectorAll('td')).filter(clipped).map(td => td.dataset.key || td.textContent),
    marked_synthetic: Array.from(table.querySelectorAll('td[data-key="model"]'))
      .filter(td => getComputedStyle(td, '::after').content.includes('SYNTHETIC')).map(td => td.textContent),
    notice: (document.getElementById('synthetic-notice') || {}).textContent || '',
    legend: (document.getElementById('legend') || {}).textContent || '',
    ranked: Array.from(table.querySelectorAll('tbody.entries tr.entry td[data-key="rank"]')).map(td => td.textContent),
    floor_rows: Array.from(table.querySelectorAll('tbody.reference tr.floor')).map(row =>
      [row.querySelector('td[data-key="rank"]').textContent, row.querySelector('td[data-key="model"]').textContent]),
  };
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
})();
</script>
"""


@pytest.fixture(scope="module")
def realistic_board(tmp_path_factory):
    """Long real-world names, every setting, few-shot prompts, truncated answers, the floor baseline, and a
    mix of synthetic and non-synthetic entries: what must fit a 1280 px window."""
    references = make_references()
    folder = tmp_path_factory.mktemp("realistic")
    systems = [
        ("Qwen/Qwen2.5-VL-7B-Instruct", "audio+video+text", "transformers", 0.3, True),
        ("meta-llama/Llama-3.3-70B-Instruct-Turbo-with-a-long-suffix", "video+text", "openai", 0.5, False),
        ("baseline/features-ridge", "audio+text", "baseline", 0.7, True),
        ("baseline/train-mean", "text", "baseline", None, True),
    ]
    for seed, (model, modality, backend, noise, synthetic) in enumerate(systems):
        predictions = (
            noisy_predictions(references, noise, seed=seed + 70)
            if noise is not None
            else {key: 3.5 for key in references}
        )
        results = make_results(predictions, model=model, modality=modality, prompt_style="cot")
        results["system"]["backend"] = backend
        results["dataset"]["synthetic"] = synthetic
        if seed == 0:
            results["setting"]["few_shot_k"] = 3
            # a trained model read by its expected score with 3 samples and a changed token budget
            results["system"].update(method="raft+ntl", backend_options={"dtype": "bfloat16"})
            results["system"]["decoding"].update(score_from="expected", samples=3, changed={"max_new_tokens": 64})
        (folder / f"{seed}.json").write_text(json.dumps(results))
    return build_leaderboard(folder, references, resampling=ResamplingOptions(n_bootstrap=50, seed=0))


def _layout_in_chromium(page: str, tmp_path, width: int) -> dict:
    path = tmp_path / "layout.html"
    path.write_text(page.replace("</body>", LAYOUT_PROBE + "</body>"), encoding="utf-8")
    command = [
        BROWSER,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        f"--window-size={width},900",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        path.as_uri(),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="probe">(.*?)</pre>', result.stdout, re.S)
    assert match, f"probe did not run; chromium rc={result.returncode} stderr={result.stderr[-2000:]}"
    return json.loads(html_lib.unescape(match.group(1)))


def test_every_column_fits_a_1280_px_window_with_a_legend_and_tooltips(realistic_board, tmp_path):
    seen = _layout_in_chromium(render_page(realistic_board), tmp_path, 1280)
    assert seen["width"] == 1280
    assert seen["page_scroll_width"] <= 1280 and seen["table_right"] <= 1280, seen
    keys = [h["key"] for h in seen["headers"]]
    assert keys[-3:] == ["excluded_rate", "truncated", "p_vs_leader"]  # the columns that were cut off
    assert all(h["right"] <= 1280 and not h["clipped"] for h in seen["headers"]), seen["headers"]
    assert seen["clipped_cells"] == []
    # Every abbreviation is spelt out on hover and in the legend.
    from mis_bench_dataset.dimensions import DIMENSIONS

    by_key = {h["key"]: h for h in seen["headers"]}
    for dim in DIMENSIONS:
        assert by_key[dim.key]["text"] == dim.abbreviation and by_key[dim.key]["title"] == dim.name
        assert f"{dim.abbreviation} = {dim.name}" in seen["legend"]


def test_the_synthetic_banner_counts_the_rows_marked_synthetic(realistic_board, tmp_path):
    seen = _layout_in_chromium(render_page(realistic_board), tmp_path, 1280)
    shown = [*realistic_board["entries"], *realistic_board["floors"]]
    synthetic = [e for e in shown if e["synthetic"]]
    assert 0 < len(synthetic) < len(shown)
    assert sorted(seen["marked_synthetic"]) == sorted(
        e["model"] + (f" · {e['method']}" if e.get("method") else "") + (" (floor)" if e["floor"] else "")
        for e in synthetic
    )
    assert f"{len(synthetic)} of {len(shown)} entries, marked SYNTHETIC" in seen["notice"]


def test_the_floor_baseline_is_shown_but_not_ranked(realistic_board, tmp_path):
    assert [e["model"] for e in realistic_board["floors"]] == ["baseline/train-mean"]
    assert realistic_board["floors"][0]["rank"] is None
    assert "baseline/train-mean" not in [e["model"] for e in realistic_board["entries"]]
    seen = _layout_in_chromium(render_page(realistic_board), tmp_path, 1280)
    assert seen["ranked"] == ["1", "2", "3"]
    assert seen["floor_rows"] == [["–", "baseline/train-mean (floor)"]]

"""The HTML report in a real headless Chromium at 1280 px: no table is wider than its box (so no column is
cut or needs scrolling) for a report with several systems with long names. Skips without Chromium."""

from __future__ import annotations

import html as html_lib
import json
import re
import subprocess

import pytest
from test_leaderboard_page_chromium import BROWSER

from eval_scripts import ReportOptions, write_report
from mis_bench_dataset.toolkit.jsonio import json_safe
from mis_icc_metric import ResamplingOptions, score_predictions

from _leaderboard_helpers import make_references, make_results, noisy_predictions

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(BROWSER is None, reason="no Chromium installed (apt-get install chromium)"),
]

PROBE = r"""
<script>
(function () {
  const seen = {
    width: window.innerWidth,
    page: document.documentElement.scrollWidth,
    tables: Array.from(document.querySelectorAll('.table-wrap')).map(box =>
      [box.previousElementSibling ? box.previousElementSibling.textContent : '', box.scrollWidth, box.clientWidth]),
  };
  const out = document.createElement('pre');
  out.id = 'probe';
  out.textContent = JSON.stringify(seen);
  document.body.appendChild(out);
})();
</script>
"""


def test_every_report_table_fits_a_1280_px_window(tmp_path):
    references = make_references()
    systems = [
        ("Qwen/Qwen2.5-VL-7B-Instruct", "audio+video+text", 0.3),
        ("meta-llama/Llama-3.3-70B-Instruct-Turbo-with-a-long-suffix", "video+text", 0.5),
        ("google/gemini-2.5-pro-preview-06-05", "audio+text", 0.6),
        ("baseline/features-ridge", "text", 0.7),
    ]
    results = []
    for seed, (model, modality, noise) in enumerate(systems):
        predictions = noisy_predictions(references, noise, seed=seed + 90, none_rate=0.03)
        scores = json_safe(
            score_predictions(predictions, references, resampling=ResamplingOptions(n_bootstrap=50, seed=0))
        )
        results.append(make_results(predictions, model=model, modality=modality, scores=scores))
    files = write_report(
        results, tmp_path / "report", ReportOptions(comparison_bootstrap=200, title="T"), references=references
    )
    page = files.html.read_text(encoding="utf-8").replace("</body>", PROBE + "</body>")
    probe_page = tmp_path / "probe.html"
    probe_page.write_text(page, encoding="utf-8")
    command = [
        BROWSER,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--window-size=1280,900",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        probe_page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert match, f"probe did not run; chromium rc={done.returncode} stderr={done.stderr[-2000:]}"
    seen = json.loads(html_lib.unescape(match.group(1)))
    assert seen["width"] == 1280 and seen["page"] <= 1280
    assert len(seen["tables"]) >= 5
    too_wide = [(caption, wide, box) for caption, wide, box in seen["tables"] if wide > box]
    assert not too_wide, too_wide

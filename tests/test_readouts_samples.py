"""Repeated samples: each row asked N times (cache keyed by sample index), every answer recorded, the mean
and median scored; resumable under SIGKILL; the judge's test-retest ICC(3,1) equal to pingouin's."""

from __future__ import annotations

import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts.harness.readout_agreement import icc_block, run_agreement, spread_summary
from eval_scripts.harness.response_cache import iter_records
from mis_icc_metric.reporting_floor import MIN_CI_VIDEOS

from _harness_helpers import chat_completion, prompt_text
from _independent import anova_icc, ftest_ci, pingouin_icc
from _run_args import run_args

REPO = Path(__file__).resolve().parents[1]


def seeded_reply(body: dict) -> tuple[int, dict]:
    """A judge whose answer moves with the request's seed: value(row) + 0.1 x (seed mod 3), capped at 5."""
    text = prompt_text(body)
    step = re.search(r"step (\d+)\.", text)
    base = 1.5 + (int(step.group(1)) % 20) / 10 if step else 3.0
    base += 0.3 * (len(text) % 5)
    value = min(5.0, base + 0.1 * (body["seed"] % 3))
    return 200, chat_completion(text, reply=f"{value:.1f}")


_args = partial(run_args, as_json=True, concurrency=2, flags=("--samples", "3", "--temperature", "0.7"))


@pytest.mark.slow
def test_samples_are_cached_and_a_sigkill_mid_run_loses_none(tmp_path, synthetic_build, chat_server) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    out = tmp_path / "runs"
    cache = out / "responses.cache.jsonl"
    with chat_server(delay_s=0.05, respond=seeded_reply) as server:
        args = [sys.executable, "-m", "eval_scripts.cli", *_args(synthetic_build, out, server.base_url)]
        victim = subprocess.Popen(args, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # kill it inside the second sample's pass
            if (
                cache.is_file()
                and sum(
                    json.loads(line).get("decoding", {}).get("sample") == 1
                    for line in cache.read_text().splitlines()
                    if line.endswith("}")
                )
                >= 3
            ):
                break
            if victim.poll() is not None:
                pytest.fail(f"run ended before it could be killed: {victim.stderr.read().decode()[-2000:]}")
            time.sleep(0.01)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait()
        answered_before_kill = sum(r["status"] == "ok" for r in iter_records(cache))
        seeds_before = {(b["messages"][-1]["content"][:80], b["seed"]) for b in server.bodies}

        resumed = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        summary = json.loads(resumed.stdout)
        rows = summary["rows"]
        assert answered_before_kill < 3 * rows, "the kill came too late to test resuming"
        assert summary["cached"] == answered_before_kill and summary["called"] == 3 * rows - answered_before_kill
        records = [r for r in iter_records(cache) if r["status"] == "ok"]
        keys = [r["key"] for r in records]
        assert len(keys) == len(set(keys)) == 3 * rows  # every (row, sample) once
        assert {r["decoding"].get("sample", 0) for r in records} == {0, 1, 2}
        assert {r["decoding"]["seed"] for r in records} == {0, 1, 2}
        assert len(seeds_before) <= len(server.bodies)

        requests = server.requests
        again = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        assert json.loads(again.stdout)["called"] == 0 and server.requests == requests

    run_dir = Path(summary["results"]).parent
    raw = [json.loads(line) for line in (run_dir / "raw_responses.jsonl").open()]
    readouts = json.loads((run_dir / "readouts.json").read_text())
    predictions = {
        (p["video_id"], p["dimension"]): p["prediction"]
        for p in map(json.loads, (run_dir / "predictions.jsonl").open())
    }
    assert len(raw) == 3 * rows and len(readouts["rows"]) == rows
    by_row: dict[tuple[str, str], list[float]] = {}
    for record in raw:
        by_row.setdefault((record["video_id"], record["dimension"]), [None] * 3)[record["sample"]] = record[
            "prediction"
        ]
    for row in readouts["rows"]:
        values = by_row[(row["video_id"], row["dimension"])]
        assert row["values"] == values
        assert row["prediction"] == predictions[(row["video_id"], row["dimension"])] == statistics.fmean(values)
        assert row["median"] == statistics.median(values) and row["spread"] == pytest.approx(max(values) - min(values))
    first, second = ([row["values"][k] for row in readouts["rows"]] for k in (0, 1))
    retest = readouts["agreement"]["test_retest"]
    assert retest["n"] == rows and retest["icc"] == pytest.approx(pingouin_icc(first, second), abs=1e-9)
    videos = {row["video_id"] for row in readouts["rows"]}
    if len(videos) >= MIN_CI_VIDEOS:
        assert retest["ci"] == pytest.approx(ftest_ci(first, second), abs=1e-9)
    else:  # the F-test CI counts videos, not rows (the one rule): below the floor it is withheld with the count
        assert retest["ci"] is None and f"{len(videos)} video(s)" in retest["withheld"]
    assert readouts["agreement"]["spread"]["share_differing"] > 0


_SCORE = st.one_of(st.none(), st.integers(min_value=10, max_value=50).map(lambda n: n / 10))


@settings(max_examples=60, deadline=None)
@given(pairs=st.lists(st.tuples(_SCORE, _SCORE), min_size=0, max_size=30))
def test_icc_blocks_leave_out_unscored_rows_and_equal_pingouin(pairs) -> None:
    block = icc_block(pairs)
    both = [(a, b) for a, b in pairs if a is not None and b is not None]
    assert block["n"] == len(both) and block["n_left_out"] == len(pairs) - len(both)
    if block["icc"] is not None:
        reference = pingouin_icc if len(both) >= 5 else anova_icc  # pingouin wants five items at least
        assert block["icc"] == pytest.approx(reference(*zip(*both, strict=True)), abs=1e-9)


def test_two_runs_agreement_and_the_spread_summary() -> None:
    first = {("a", "wau"): 3.0, ("b", "wau"): 4.0, ("c", "wau"): 2.0, ("d", "wau"): None, ("f", "wau"): 1.0}
    second = {("a", "wau"): 3.5, ("b", "wau"): 4.0, ("c", "wau"): 2.5, ("e", "wau"): 3.0, ("f", "wau"): None}
    block = run_agreement(first, second)
    assert block["n"] == 3 and block["n_left_out"] == 1 and block["n_only_one"] == 2
    assert block["icc"] == pytest.approx(anova_icc([3.0, 4.0, 2.0], [3.5, 4.0, 2.5]), abs=1e-12)
    summary = spread_summary([{"values": [3.0, 3.5, 4.0]}, {"values": [2.0, 2.0]}, {"values": [1.0, None]}])
    assert summary == {"rows": 2, "mean_sd": pytest.approx(0.25), "share_differing": 0.5, "max_range": 1.0}

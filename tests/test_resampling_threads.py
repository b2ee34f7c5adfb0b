"""The resampling work shared out over threads (issue 47): the same numbers to the bit whatever the threads, every
piece done once, a failure raised in the caller, and BLAS held to one thread from the first thread that resamples
to the last (each piece of work is computed whole by one thread and written to a place of its own)."""

from __future__ import annotations

import json
import threading
import time
import warnings

import numpy as np
import pytest
from threadpoolctl import threadpool_info

from mis_bench_dataset import STIMULI
from mis_icc_metric import ResamplingOptions, paired_comparison, resampling_threads, score_predictions
from mis_icc_metric.bootstrap import one_blas_thread
from mis_icc_metric.resampling_threads import in_background, share_out


def _clinician_scores(seed: int, step: float) -> tuple[dict, dict, dict]:
    """Judge A, judge B and gold for 30 clinicians x 6 videos x 8 dimensions; answers on a `step` grid (0.01:
    nearly continuous, many distinct pairs, so every block's ranks are computed in several pieces)."""
    from mis_bench_dataset import DIMENSION_KEYS

    rng = np.random.default_rng(seed)
    gold, a, b = {}, {}, {}
    for clinician in range(30):
        skill = rng.normal(0, 0.5)
        for index in range(6):
            video = f"CL{clinician:02d}_T{1 + index // len(STIMULI)}_{STIMULI[index % len(STIMULI)]}"
            for dimension in DIMENSION_KEYS:
                truth = float(np.clip(np.round(3 + skill + rng.normal(0, 0.5), 1), 1, 5))
                gold[video, dimension] = truth
                for judge in (a, b):
                    judge[video, dimension] = float(np.clip(np.round((truth + rng.normal(0, 0.6)) / step) * step, 1, 5))
    return a, b, gold


def _threads(monkeypatch, extra: int) -> None:
    monkeypatch.setattr(resampling_threads, "extra_threads", lambda: extra)


@pytest.mark.parametrize("step", [1.0, 0.01])
def test_a_score_is_the_same_to_the_bit_with_and_without_threads(monkeypatch, step):
    a, _, gold = _clinician_scores(seed=3, step=step)
    options = ResamplingOptions(n_bootstrap=600, seed=5)
    outputs = []
    for extra in (0, 1, 3):  # none, the 2-core machine's one, more threads than cores
        _threads(monkeypatch, extra)
        outputs.append(json.dumps(score_predictions(a, gold, resampling=options), sort_keys=True, default=str))
    assert outputs[0] == outputs[1] == outputs[2]
    assert '"design_effect"' in outputs[0] and '"spearman"' in outputs[0]  # the threaded parts were computed


def test_a_paired_comparison_is_the_same_to_the_bit_with_and_without_threads(monkeypatch):
    a, b, gold = _clinician_scores(seed=8, step=0.1)
    options = ResamplingOptions(n_bootstrap=400, seed=2)
    outputs = []
    for extra in (0, 1):
        _threads(monkeypatch, extra)
        outputs.append(json.dumps(paired_comparison(a, b, gold, resampling=options), sort_keys=True, default=str))
    assert outputs[0] == outputs[1]
    assert '"design_effect"' in outputs[0]


@pytest.mark.parametrize("extra", [0, 1, 3])
def test_share_out_does_every_item_once(monkeypatch, extra):
    _threads(monkeypatch, extra)
    done: list[int] = []
    lock = threading.Lock()
    threads = set()

    def work(item: int) -> None:
        time.sleep(0.001)  # long enough for a second thread to take items
        with lock:
            done.append(item)
            threads.add(threading.current_thread().name)

    share_out(range(200), work)
    assert sorted(done) == list(range(200))
    if extra == 0:
        assert threads == {threading.current_thread().name}


def test_share_out_raises_the_first_failure_in_the_caller_and_stops(monkeypatch):
    _threads(monkeypatch, 1)
    done: list[int] = []

    def work(item: int) -> None:
        if item == 5:
            raise ValueError("piece 5 failed")
        time.sleep(0.001)
        done.append(item)

    with pytest.raises(ValueError, match="piece 5 failed"):
        share_out(range(1000), work)
    assert len(done) < 999  # the rest was not computed after the failure


@pytest.mark.parametrize("extra", [0, 1])
def test_in_background_hands_back_the_result_or_the_exception(monkeypatch, extra):
    _threads(monkeypatch, extra)
    assert in_background(lambda: 6 * 7).result() == 42

    def fails() -> None:
        raise KeyError("no such block")

    with pytest.raises(KeyError, match="no such block"):
        in_background(fails).result()


def test_a_task_no_thread_has_taken_runs_on_the_caller_when_its_result_is_asked(monkeypatch):
    # The one thread is busy: the second task would wait behind the first; asked for, it runs on the caller, once.
    _threads(monkeypatch, 1)
    release, calls = threading.Event(), []
    busy = in_background(lambda: release.wait(20))

    def where() -> bool:
        calls.append(1)
        return threading.current_thread() is threading.main_thread()

    queued = in_background(where)
    try:
        assert queued.result() is True and queued.result() is True and calls == [1]
    finally:
        release.set()
    assert busy.result() is True

    def fails() -> None:
        calls.append(2)
        raise KeyError("no such block")

    release.clear()
    busy = in_background(lambda: release.wait(20))
    failing = in_background(fails)
    try:
        for _ in range(2):  # the same error at every ask, from one run
            with pytest.raises(KeyError, match="no such block"):
                failing.result()
    finally:
        release.set()
    assert calls == [1, 2] and busy.result() is True


def _blas_threads() -> set[int]:
    return {info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def test_one_blas_thread_holds_from_the_first_thread_in_to_the_last_out():
    # As a command uses it: the command's thread takes the limit first (`resampling_blas`), a resampling thread
    # enters beside it and is still working when the command's thread leaves: the limit holds until it is done,
    # the command's thread waits for it, and the limit is restored after.
    if not _blas_threads():
        pytest.skip("numpy here is linked to no BLAS threadpoolctl can see")
    before = _blas_threads()
    second_in = threading.Event()
    seen: dict[str, set[int]] = {}

    def second() -> None:
        with one_blas_thread():
            second_in.set()
            time.sleep(0.3)  # still inside when the first thread leaves
            seen["the second, last out"] = _blas_threads()

    worker = threading.Thread(target=second)
    with one_blas_thread(), one_blas_thread():  # nested in one thread (a chunk generator inside a command)
        worker.start()
        assert second_in.wait(timeout=30)
        seen["both inside"] = _blas_threads()
    assert seen == {"both inside": {1}, "the second, last out": {1}}  # the first waited for the second
    assert _blas_threads() == before  # restored once the last one left
    worker.join()


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="fork is POSIX")
def test_a_forked_child_gets_threads_of_its_own(monkeypatch):
    import os

    _threads(monkeypatch, 1)
    assert in_background(lambda: 1).result() == 1  # the parent's pool now exists
    pid = os.fork()
    if pid == 0:  # the child: the inherited pool has no threads; its task must still run on a thread of its own
        try:
            ran = threading.Event()

            def on_a_pool_thread() -> bool:
                ran.set()
                return threading.current_thread() is not threading.main_thread()

            handle = in_background(on_a_pool_thread)
            # (a task still queued at `result()` would run on the caller: waiting first tells the two apart)
            code = 0 if ran.wait(20) and handle.result() else 1
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize("extra", [0, 1, 3])
@pytest.mark.parametrize("undefined_share", [0.02, 2e-5])  # NaN in nearly every figure, or in a few
def test_percentiles_shared_out_equal_numpys_and_warn_of_nothing(monkeypatch, extra, undefined_share):
    # Many figures at once are shared out over the threads; an all-NaN figure stays NaN without a warning (a
    # warnings filter is process-wide: one thread's `catch_warnings` would unset another's). Figures with and
    # without undefined replicates take different paths: both are numpy's nanquantile to the bit.
    from mis_icc_metric import bootstrap

    monkeypatch.setattr(bootstrap, "extra_threads", lambda: extra)
    rng = np.random.default_rng(extra)
    samples = rng.normal(size=(5000, 21, 9))
    samples[rng.random(samples.shape) < undefined_share] = np.nan
    samples[:, 3, 4] = np.nan  # a statistic undefined in every resample
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ours = bootstrap.percentile_ci(samples, 0.9)
        one = bootstrap.percentile_ci(samples[:, 0, 0], 0.9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        alpha = (1 - 0.9) / 2
        numpys = np.moveaxis(np.nanquantile(samples, [alpha, 1 - alpha], axis=0), 0, -1)
    np.testing.assert_array_equal(ours, numpys)
    np.testing.assert_array_equal(one, numpys[0, 0])
    assert np.isnan(ours[3, 4]).all()
    assert np.isnan(bootstrap.percentile_ci(samples[:0], 0.9)).all()  # no replicates: every figure undefined
    assert bootstrap.percentile_ci(samples[:0], 0.9).shape == (21, 9, 2)


@pytest.mark.parametrize("method", ["isotonic", "linear"])
def test_a_calibration_summary_is_the_same_to_the_bit_with_and_without_threads(monkeypatch, method):
    # The summary's refits go chunk by chunk (small chunks here, so several), each chunk its own resamples.
    from mis_icc_metric import calibration_checks, calibration_summary, fit_calibrator

    monkeypatch.setattr(calibration_checks, "_CHUNK", {"linear": 37, "isotonic": 23})
    judge, _, gold = _clinician_scores(seed=11, step=0.1)
    role = {video: int(video[2:4]) % 3 for video, _ in gold}  # clinicians 0, 1, 2 mod 3: fit, calibrate, test
    parts = [
        ({k: v for k, v in judge.items() if role[k[0]] == r}, {k: v for k, v in gold.items() if role[k[0]] == r})
        for r in range(3)
    ]
    calibrator = fit_calibrator(*parts[0], *parts[1], method=method, coverage=0.8)
    outputs = []
    for extra in (0, 1, 3):
        _threads(monkeypatch, extra)
        summary = calibration_summary(
            calibrator, parts[0], parts[2], resampling=ResamplingOptions(n_bootstrap=200, seed=4)
        )
        outputs.append(json.dumps(summary, sort_keys=True, default=str))
    assert outputs[0] == outputs[1] == outputs[2]
    assert '"ci"' in outputs[0]


def test_share_out_asks_no_thread_for_a_single_piece(monkeypatch):
    # One figure's interval, one block's ranks: nothing to share, so no thread is woken (or made) for it.
    _threads(monkeypatch, 3)

    def no_pool():
        raise AssertionError("a thread was asked for a single piece")

    monkeypatch.setattr(resampling_threads, "_pool", no_pool)
    done: list[int] = []
    share_out([7], done.append)
    share_out([], done.append)
    assert done == [7]

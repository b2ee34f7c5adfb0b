"""A judge's agreement with itself: two readouts of one run, two samples, two runs (ICC(3,1)), and the spread per row.

Agreement with the experts says how good a judge is; agreement with itself says whether it can be
trusted at all: a model whose score of the same row changes from one sample (or run) to the next
measures noise. Each comparison is ICC(3,1) (`mis_icc_metric.icc3`, the benchmark's own form) over
the rows both sides scored, every (video, dimension) row one item, with its F-test 95% CI; rows
either side left unscored are left out and counted.

The per-row records are those a run writes to `readouts.json` (`eval_scripts.harness.runner`): `values`
(each sample's score, null when unread) and, for an expected-score run, `text_values` (each
sample's parsed text beside it).
"""

from __future__ import annotations

import json
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mis_icc_metric.resampling_options import ResamplingOptions

READOUTS_NAME = "readouts.json"
READOUTS_FORMAT_VERSION = "1.0"

Key = tuple[str, str]


def icc_block(
    pairs: Sequence[tuple[float | None, float | None]], videos: Sequence[str] | None = None
) -> dict[str, Any]:
    """ICC(3,1) with its 95% CI over the pairs where both values exist; `n` used, `n_left_out` not.

    The F-test CI takes the rows as independent; it follows the one rule of `mis_icc_metric.reporting_floor`
    (`videos`: each pair's video, so that the floor counts videos, not rows): below it, or of zero width, it is
    None and `withheld` says why."""
    from mis_icc_metric import icc3
    from mis_icc_metric.reporting_floor import Support, degenerate_reason, withhold_reason

    kept = [i for i, (a, b) in enumerate(pairs) if a is not None and b is not None]
    both = [pairs[i] for i in kept]
    block: dict[str, Any] = {"icc": None, "ci": None, "n": len(both), "n_left_out": len(pairs) - len(both)}
    if len(both) < 2:
        return block
    matrix = np.asarray(both, dtype=np.float64)
    result = icc3(matrix)
    if np.isfinite(result.icc):
        low, high = float(result.ci[0]), float(result.ci[1])
        n_videos = len({videos[i] for i in kept}) if videos is not None else len(both)
        reason = withhold_reason(Support(n_videos, None, "video")) or degenerate_reason(low, high)
        block.update(icc=float(result.icc), ci=None if reason else [low, high], withheld=reason)
    return block


def spread_summary(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Over rows with at least two scored samples: the mean standard deviation, the share whose samples
    differ, the largest range."""
    spreads, deviations = [], []
    for row in rows:
        read = [v for v in row.get("values") or () if v is not None]
        if len(read) > 1:
            spreads.append(max(read) - min(read))
            deviations.append(statistics.stdev(read))
    return {
        "rows": len(spreads),
        "mean_sd": statistics.fmean(deviations) if deviations else None,
        "share_differing": sum(s > 0 for s in spreads) / len(spreads) if spreads else None,
        "max_range": max(spreads) if spreads else None,
    }


# Why a test-retest of the scores is withheld where the readout does not depend on the sample: an expected score
# read from a score-first answer's first tokens (direct, paper) is the distribution given the prompt alone, the
# same for every sample, so its "agreement" would be 1 whatever the sampled texts said.
SAME_READOUT = (
    "the expected readout of a score-first answer is read from the prompt alone, the same for every sample: the "
    "samples' scores cannot disagree; see the text answers' test-retest"
)


def readout_agreement(rows: Sequence[Mapping[str, Any]], *, sample_dependent: bool = True) -> dict[str, Any]:
    """The self-agreement block of one run: text vs expected (first sample), sample 1 vs 2, spread per row.

    `sample_dependent` False (an expected readout of a score-first style): the scores' test-retest is withheld
    with its reason (`SAME_READOUT`) and the sampled texts' test-retest (`text_test_retest`) stands beside it."""
    block: dict[str, Any] = {}
    videos = [row.get("video_id") for row in rows] if all("video_id" in row for row in rows) else None
    if any(row.get("text_values") for row in rows):
        block["text_vs_expected"] = icc_block([(row["text_values"][0], row["values"][0]) for row in rows], videos)
    if any(len(row.get("values") or ()) > 1 for row in rows):
        if sample_dependent:
            block["test_retest"] = icc_block([(row["values"][0], row["values"][1]) for row in rows], videos)
            block["spread"] = spread_summary(rows)
        else:
            block["test_retest"] = {"icc": None, "ci": None, "n": 0, "n_left_out": len(rows), "withheld": SAME_READOUT}
            if any(row.get("text_values") for row in rows):
                kept = [row for row in rows if len(row.get("text_values") or ()) > 1]
                texts = [(row["text_values"][0], row["text_values"][1]) for row in kept]
                block["text_test_retest"] = icc_block(texts, None if videos is None else [r["video_id"] for r in kept])
    return block


def run_agreement(first: Mapping[Key, float | None], second: Mapping[Key, float | None]) -> dict[str, Any]:
    """Test-retest ICC(3,1) between two runs' predictions, over the rows both cover (`n_only_one`: the rest)."""
    common = sorted(set(first) & set(second))
    block = icc_block([(first[key], second[key]) for key in common], [video for video, _ in common])
    block["n_only_one"] = len(set(first) ^ set(second))
    return block


def read_readouts(run_dir: str | Path) -> dict[str, Any] | None:
    """The `readouts.json` of a run folder, or None when the run wrote none (one text readout, one sample)."""
    path = Path(run_dir) / READOUTS_NAME
    if not path.is_file():
        return None
    from mis_bench_dataset.toolkit.errors import DataError
    from mis_bench_dataset.toolkit.jsonio import JSONInputError, read_json

    try:
        data = read_json(path)
    except JSONInputError as err:
        raise DataError(f"not a readable readouts file: {err.reason}", where=str(path)) from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise DataError("not a readouts file (no `rows` list)", where=str(path), hint="rerun the run to rewrite it")
    return data


def readouts_json(payload: Mapping[str, Any]) -> str:
    from mis_bench_dataset.toolkit.jsonio import json_safe

    return json.dumps(json_safe(dict(payload)), indent=1, ensure_ascii=False, allow_nan=False) + "\n"


def _with_experts(values: Mapping[Key, float | None], references: Mapping[Key, float]) -> dict[str, Any]:
    from mis_icc_metric.scoring import score_predictions

    keys = [key for key in values if key in references]  # the rows this run covers
    scored = score_predictions(
        {k: values[k] for k in keys}, {k: references[k] for k in keys}, resampling=ResamplingOptions(n_bootstrap=0)
    )
    return {"overall_icc": scored["overall"]["icc"], "mean_icc": scored["mean_icc"]}


def readouts_summary(readouts: Mapping[str, Any], references: Mapping[Key, float] | None = None) -> dict[str, Any]:
    """What `mis-bench score` shows of a run's readouts: the stored self-agreement and, against the references,
    the agreement with the experts of the other readouts (the samples' median; an expected run's text readout)."""
    rows = readouts["rows"]
    summary: dict[str, Any] = {
        "score_from": readouts.get("score_from"),
        "samples": readouts.get("samples"),
        "agreement": readouts.get("agreement") or readout_agreement(rows),
    }
    if references:
        keyed = {(row["video_id"], row["dimension"]): row for row in rows}
        others: dict[str, dict[Key, float | None]] = {}
        if (readouts.get("samples") or 1) > 1:
            others["median"] = {key: row.get("median") for key, row in keyed.items()}
        if any(row.get("text_values") for row in rows):
            others["text"] = {
                key: statistics.fmean(read) if (read := [v for v in row["text_values"] if v is not None]) else None
                for key, row in keyed.items()
            }
        if any(key in references for key in keyed):
            summary["with_experts"] = {name: _with_experts(values, references) for name, values in others.items()}
    return summary

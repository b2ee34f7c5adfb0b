"""The text ridge under the transcript perturbations: fitted once on the train split's unperturbed transcripts,
asked again with each evaluated video's transcript perturbed (`answers.perturbations`), and the shift of every
score measured against its own unperturbed prediction (`mis_icc_metric.sensitivity`).

The ridge has no response cache: its unperturbed arm is recomputed (it is deterministic, the same numbers
`mis-bench run --dataset` writes). It reads no prompt, so the prompt perturbations do not apply to it.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from eval_scripts.answers.perturbations import DEFAULT_PERTURB_SEED, TRANSCRIPT_PERTURBATIONS, perturb_rows
from eval_scripts.baselines.baseline_run import load_feature_rows
from eval_scripts.baselines.models import make_baseline
from eval_scripts.baselines.on_the_fly import RIDGE_SETTING
from mis_bench_dataset.dataset.handle import BuiltDataset
from mis_bench_dataset.dataset.loading import gold_references
from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import UsageError
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

logger = logging.getLogger(__name__)

RIDGE_SYSTEM = "baseline/features-ridge (text)"


def _predict(model, rows: Sequence[dict]) -> dict[tuple[str, str], float]:
    predicted = model.predict(list(rows))
    return {
        (str(row["video_id"]), key): float(predicted[key][i]) for i, row in enumerate(rows) for key in DIMENSION_KEYS
    }


def check_transcript_perturbations(names: Sequence[str], judge: str = "the text ridge") -> None:
    """A prompt perturbation asked of a judge that reads no prompt: one usage line."""
    prompt = [n for n in names if n not in TRANSCRIPT_PERTURBATIONS]
    if prompt:
        raise UsageError(
            f"{prompt[0]} changes the prompt, and {judge} reads no prompt",
            where="--perturb",
            hint=f"give it transcript perturbations only ({', '.join(TRANSCRIPT_PERTURBATIONS)})",
        )


def ridge_sensitivity(
    dataset: str | Path | BuiltDataset,
    perturbations: Sequence[str],
    *,
    split: str = "test",
    perturb_seed: int = DEFAULT_PERTURB_SEED,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
) -> dict[str, Any]:
    """{perturbation: shift table} of the text ridge on `split` (see the module)."""
    from mis_icc_metric.sensitivity import perturbation_shift

    check_transcript_perturbations(perturbations)
    handle = BuiltDataset.of(dataset).require("features")
    train_rows = load_feature_rows(handle, "train")
    eval_rows = load_feature_rows(handle, split)
    references = gold_references(eval_rows)
    if not references:
        raise UsageError(f"split {split!r} has no gold", where="--split", hint="use a labelled split")
    model = make_baseline("features", RIDGE_SETTING).fit(train_rows)
    base = _predict(model, eval_rows)
    tables: dict[str, Any] = {}
    for name in perturbations:
        rows, record = perturb_rows(name, eval_rows, seed=perturb_seed)
        shifted = _predict(model, rows)
        table = perturbation_shift(
            base,
            shifted,
            references,
            resampling=resampling,
        )
        tables[name] = {"perturbation": record, **table}
        logger.info("text ridge, %s: mean |shift| %.3f", name, table["mean"]["mean_abs_shift"])
    return {
        "system": RIDGE_SYSTEM,
        "dataset": handle.record(split, ("scoring", "features")),
        "split": split,
        "n_videos": len({v for v, _ in references}),
        "perturb_seed": perturb_seed,
        "perturbations": tables,
    }

"""The paper's views of many runs as data: Table 3 (each system's best configuration, top three
per column) and Figure 2 (every configuration of every system by dimension).

A *system* is a model id (`system.model` of the results JSON; a baseline is a system too). A
*configuration* is one of its runs: modality x prompt style (x few-shot k). Values are raw
fractions; None where undefined.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import rankdata

from eval_scripts.report.table import RunView
from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.toolkit.numbers import is_number

SELECTION_RULE = (
    "For each system (model id), the configuration (modality x prompt style, and few-shot k when given) "
    "with the highest overall ICC: the ICC(3,1) of the per-video mean of the eight predicted scores against "
    "the mean of the eight gold scores, videos with any unparseable dimension excluded (paper Table 3). "
    "Ties on the overall ICC go to the higher mean of the dimension ICCs, then to the run given first; "
    "an undefined overall ICC never wins."
)
RANK_RULE = (
    "Top three per column across the systems' best configurations: 1st, 2nd, 3rd by the unrounded ICC; "
    "equal values share a rank and the next rank is skipped (1, 1, 3); undefined values and columns with "
    "fewer than two defined values get no rank. The train-mean floor baseline is shown but not ranked."
)
RANK_COLUMNS: tuple[str, ...] = (*DIMENSION_KEYS, "overall", "mean")
TOP_RANKS = 3


@dataclass(frozen=True)
class BestConfiguration:
    """One system's row of Table 3: the winning run and how many configurations it beat."""

    run: RunView
    n_configurations: int

    def values(self) -> dict[str, float | None]:
        """The ranked columns' values: the eight dimension ICCs, overall ICC, mean ICC."""
        values: dict[str, float | None] = {key: _defined(self.run.dim(key).get("icc")) for key in DIMENSION_KEYS}
        values["overall"] = _defined(self.run.overall.get("icc"))
        values["mean"] = _defined(self.run.mean_icc)
        return values

    def as_json(self) -> dict:
        """The `best_configuration` entry of report.json."""
        values = self.values()
        return {
            "model": self.run.model,
            "modality": self.run.modality,
            "prompt_style": self.run.prompt_style,
            "overall_icc": values["overall"],
            "dimensions": {key: values[key] for key in DIMENSION_KEYS},
        }


def _defined(value: object) -> float | None:
    return float(value) if is_number(value) else None


def systems(runs: Sequence[RunView]) -> dict[str, list[RunView]]:
    """Runs grouped by model id, systems and their runs in the order given."""
    grouped: dict[str, list[RunView]] = {}
    for run in runs:
        grouped.setdefault(run.model, []).append(run)
    return grouped


def _selection_key(position: int, run: RunView) -> tuple[float, float, int]:
    mean = _defined(run.mean_icc)
    return (-float(run.overall["icc"]), math.inf if mean is None else -mean, position)


def best_configurations(runs: Sequence[RunView]) -> tuple[list[BestConfiguration], list[str]]:
    """Table 3's selection (see SELECTION_RULE): one entry per system in the order given, and the
    systems left out because none of their configurations has a defined overall ICC."""
    chosen: list[BestConfiguration] = []
    undefined: list[str] = []
    for model, configurations in systems(runs).items():
        candidates = [(i, run) for i, run in enumerate(configurations) if is_number(run.overall.get("icc"))]
        if not candidates:
            undefined.append(model)
            continue
        _, best = min(candidates, key=lambda item: _selection_key(*item))
        chosen.append(BestConfiguration(best, len(configurations)))
    return chosen, undefined


def top_ranks(values: Sequence[float | None]) -> list[int | None]:
    """Competition ranks (1 = highest) of a column, kept only for ranks 1..3 (see RANK_RULE)."""
    defined = [i for i, v in enumerate(values) if v is not None and math.isfinite(v)]
    ranks: list[int | None] = [None] * len(values)
    if len(defined) < 2:
        return ranks
    order = rankdata([-float(values[i]) for i in defined], method="min")
    for i, rank in zip(defined, order, strict=True):
        if rank <= TOP_RANKS:
            ranks[i] = int(rank)
    return ranks


def rank_table(best: Sequence[BestConfiguration]) -> list[dict[str, int | None]]:
    """Per best configuration, column -> 1, 2, 3 or None (RANK_COLUMNS); the floor baseline gets None everywhere."""
    values = [{} if entry.run.floor else entry.values() for entry in best]
    columns = {column: top_ranks([row.get(column) for row in values]) for column in RANK_COLUMNS}
    return [{column: columns[column][r] for column in RANK_COLUMNS} for r in range(len(best))]


def configuration_matrix(runs: Sequence[RunView]) -> np.ndarray:
    """Figure 2's data: (runs x dimensions) ICC, NaN where undefined; rows grouped by system."""
    return np.array(
        [
            [
                np.nan if _defined(run.dim(key).get("icc")) is None else float(run.dim(key)["icc"])
                for key in DIMENSION_KEYS
            ]
            for run in runs
        ],
        dtype=float,
    ).reshape(len(runs), len(DIMENSION_KEYS))


def by_system(runs: Sequence[RunView]) -> list[RunView]:
    """The runs reordered so that each system's configurations are adjacent (systems in the order given)."""
    return [run for configurations in systems(runs).values() for run in configurations]

"""What a calibrator file must hold before it is applied: every field checked on load, one line naming the field.

A calibrator is a file the toolkit wrote and reads back (`calibration.Calibrator.load`); a hand edit or a
corrupted copy must not be applied as if it were sound (a coverage of 1.7 printed as "intervals at 170%",
negative half-widths giving a lower bound above the upper, a map scaled by 10 giving scores outside the scale).
The checks here are explicit rather than a JSON Schema so each refusal names the field and what is wrong with it:
coverage in (0, 1); the scale the toolkit's [1, 5]; dimensions known and unique; per dimension a map of the
calibrator's method that is monotone and inside the scale, a finite non-negative half-width, positive counts,
the no-judge yardstick; and the provenance `--apply` checks (build, splits, judge, videos, synthetic mark).

`mis-bench calibrate`'s choices and defaults are declared here too, in a module without numpy, so the command line
that offers them stays light.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from mis_bench_dataset.dimensions import DIMENSION_KEYS, SCORE_MAX, SCORE_MIN
from mis_bench_dataset.toolkit.errors import DataError

__all__ = [
    "CALIBRATION_METHODS",
    "DEFAULT_CALIBRATION_METHOD",
    "DEFAULT_CALIBRATION_SPLIT",
    "DEFAULT_COVERAGE",
    "DEFAULT_FIT_SPLIT",
    "PROVENANCE_FIELDS",
    "check_calibrator_json",
]

# `mis-bench calibrate`'s choices and defaults (the maps are `calibration`'s).
CALIBRATION_METHODS: tuple[str, ...] = ("isotonic", "linear")
DEFAULT_CALIBRATION_METHOD = "isotonic"
DEFAULT_COVERAGE = 0.9
DEFAULT_FIT_SPLIT = "train"
DEFAULT_CALIBRATION_SPLIT = "validation"

# What every calibrator records of where it came from (None where unknown: a library caller's own mapping).
PROVENANCE_FIELDS = ("build", "fit_split", "calibration_split", "judge", "videos", "synthetic")
_HINT = "recalibrate with mis-bench calibrate (a calibrator is not edited by hand)"
# A fitted value may sit a rounding error outside the scale (sklearn's thresholds are means of the gold).
_SLACK = 1e-9


class _Refusal(Exception):
    """One field's problem: its dotted name and what is wrong."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(name, problem)
        self.name, self.problem = name, problem


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _Refusal(name, f"is {value!r}, not a finite number")
    return float(value)


def _on_scale(value: float, name: str) -> None:
    if not SCORE_MIN - _SLACK <= value <= SCORE_MAX + _SLACK:
        raise _Refusal(name, f"is {value:g}, outside the scale [{SCORE_MIN:g}, {SCORE_MAX:g}]")


def _per_dimension(data: Mapping, field: str, dims: list[str]) -> dict:
    block = data.get(field)
    if not isinstance(block, dict):
        raise _Refusal(field, "is missing or not an object")
    missing = [d for d in dims if d not in block]
    if missing:
        raise _Refusal(field, f"has no entry for {missing[0]!r}")
    return block


def _check_map(params: Any, method: str, name: str) -> None:
    if not isinstance(params, dict) or params.get("method") != method:
        raise _Refusal(name, f"is not a {method} map (the calibrator's method)")
    if method == "linear":
        _number(params.get("slope"), f"{name}.slope")
        _number(params.get("intercept"), f"{name}.intercept")
        return
    xs, ys = params.get("x"), params.get("y")
    if not isinstance(xs, list) or not isinstance(ys, list) or not xs or len(xs) != len(ys):
        raise _Refusal(name, "needs lists x and y of one length, not empty")
    x = [_number(v, f"{name}.x") for v in xs]
    y = [_number(v, f"{name}.y") for v in ys]
    if any(b < a for a, b in zip(x, x[1:], strict=False)):
        raise _Refusal(f"{name}.x", "is not increasing")
    if any(b < a for a, b in zip(y, y[1:], strict=False)):
        raise _Refusal(f"{name}.y", "is not monotone (it decreases)")
    for value in y:
        _on_scale(value, f"{name}.y")


def _check_dimensions(data: Mapping) -> list[str]:
    dims = data.get("dimensions")
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) for d in dims):
        raise _Refusal("dimensions", "is missing or not a list of dimension keys")
    unknown = [d for d in dims if d not in DIMENSION_KEYS]
    if unknown:
        raise _Refusal("dimensions", f"names unknown dimension {unknown[0]!r}")
    if len(set(dims)) != len(dims):
        raise _Refusal("dimensions", "names a dimension twice")
    return dims


def _check_provenance(data: Mapping) -> None:
    provenance = data.get("provenance")
    if not isinstance(provenance, dict):
        raise _Refusal("provenance", "is missing or not an object")
    missing = [f for f in PROVENANCE_FIELDS if f not in provenance]
    if missing:
        raise _Refusal(f"provenance.{missing[0]}", "is missing")
    videos = provenance["videos"]
    for part in ("fit", "calibration"):
        seen = videos.get(part) if isinstance(videos, dict) else None
        if not isinstance(seen, list) or not all(isinstance(v, str) for v in seen):
            raise _Refusal(f"provenance.videos.{part}", "is missing or not a list of video ids")
    build = provenance["build"]
    if build is not None and not (isinstance(build, dict) and isinstance(build.get("fingerprints"), dict)):
        raise _Refusal("provenance.build", "is neither null nor an object with the build's fingerprints")
    if provenance["judge"] is not None and not isinstance(provenance["judge"], dict):
        raise _Refusal("provenance.judge", "is neither null nor an object")
    if provenance["synthetic"] is not None and not isinstance(provenance["synthetic"], bool):
        raise _Refusal("provenance.synthetic", "is neither true, false nor null")


def _check_fields(data: Mapping) -> None:
    method = data.get("method")
    if method not in CALIBRATION_METHODS:
        raise _Refusal("method", f"is {method!r}, not one of {', '.join(CALIBRATION_METHODS)}")
    coverage = _number(data.get("coverage"), "coverage")
    if not 0 < coverage < 1:
        raise _Refusal("coverage", f"is {coverage:g}; it must lie strictly between 0 and 1")
    scale = data.get("scale")
    if not isinstance(scale, list) or len(scale) != 2 or [_number(v, "scale") for v in scale] != [SCORE_MIN, SCORE_MAX]:
        raise _Refusal("scale", f"is {scale!r}; the toolkit's scale is [{SCORE_MIN:g}, {SCORE_MAX:g}]")
    dims = _check_dimensions(data)
    maps, half_widths = _per_dimension(data, "maps", dims), _per_dimension(data, "half_widths", dims)
    counts = {field: _per_dimension(data, field, dims) for field in ("n_fit", "n_calibration")}
    no_judge = _per_dimension(data, "no_judge", dims)
    for dim in dims:
        _check_map(maps[dim], method, f"maps.{dim}")
        if _number(half_widths[dim], f"half_widths.{dim}") < 0:
            raise _Refusal(f"half_widths.{dim}", f"is {half_widths[dim]:g}; a half-width is not negative")
        for field, block in counts.items():
            if isinstance(block[dim], bool) or not isinstance(block[dim], int) or block[dim] < 1:
                raise _Refusal(f"{field}.{dim}", f"is {block[dim]!r}, not a positive count")
        yardstick = no_judge[dim]
        if not isinstance(yardstick, dict):
            raise _Refusal(f"no_judge.{dim}", "is not an object")
        _on_scale(_number(yardstick.get("center"), f"no_judge.{dim}.center"), f"no_judge.{dim}.center")
        if _number(yardstick.get("half_width"), f"no_judge.{dim}.half_width") < 0:
            raise _Refusal(f"no_judge.{dim}.half_width", "is negative")
    _check_provenance(data)


def check_calibrator_json(data: Mapping[str, Any], where: str) -> None:
    """Refuse a calibrator whose fields are not what `mis-bench calibrate` writes: a DataError of one line naming
    the field (`calibrator field 'coverage' is 1.7; it must lie strictly between 0 and 1`)."""
    try:
        _check_fields(data)
    except _Refusal as refusal:
        raise DataError(f"calibrator field {refusal.name!r} {refusal.problem}", where=where, hint=_HINT) from None

"""Reading JSON a user or a server hands us, with limits: size, nesting depth, strictness.

A results file, a submission or a manifest is small and shallow (a results JSON nests 5
levels). A multi-gigabyte file or one nested ten thousand levels deep is a mistake or an
attack: it is refused with the reason before it can exhaust memory or the recursion limit.
NaN/Infinity and duplicate object keys are refused too (strict JSON), so what is read is
what every other JSON reader would read.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from pathlib import Path
from typing import Any

from mis_bench_dataset.toolkit.errors import DataError

DEFAULT_MAX_BYTES = 64 << 20
MAX_DEPTH = 64


class JSONInputError(DataError):
    """A JSON input that cannot be accepted; `reason` is the problem without the file name."""

    def __init__(self, source: str, reason: str) -> None:
        super().__init__(reason, where=source, hint="fix or replace the file")
        self.source = source
        self.reason = reason


def json_safe(value: object) -> object:
    """Strict-JSON-ready: NaN and infinities -> None (undefined statistics are null), numpy scalars and
    arrays -> Python, recursively; mapping keys kept. The one rule every JSON writer applies."""
    import numpy as np

    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value


def _reject_constant(token: str) -> Any:
    raise ValueError(f"{token} is not valid JSON (NaN and Infinity are not numbers in JSON; use null)")


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) < len(pairs):
        counts = Counter(key for key, _ in pairs)
        duplicated = sorted(key for key, count in counts.items() if count > 1)
        raise ValueError(f"duplicate JSON object key(s): {', '.join(map(repr, duplicated))}")
    return obj


def nesting_depth(text: str) -> int:
    """The deepest bracket nesting of a JSON text, counted without parsing (strings skipped)."""
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def loads_strict(
    data: bytes | str, source: str, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """Strict JSON from bytes or text, within `max_bytes` and `max_depth`."""
    if len(data) > max_bytes:
        raise JSONInputError(source, f"the file is {len(data):,} bytes, over the {max_bytes:,}-byte limit")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise JSONInputError(source, f"not UTF-8 text: {err}") from None
    depth = nesting_depth(data)
    if depth > max_depth:
        raise JSONInputError(source, f"JSON nested {depth} levels deep, over the limit of {max_depth}")
    try:
        return json.loads(data, parse_constant=_reject_constant, object_pairs_hook=_no_duplicate_keys)
    except json.JSONDecodeError as err:
        raise JSONInputError(source, f"malformed JSON at line {err.lineno} column {err.colno}: {err.msg}") from None
    except (ValueError, RecursionError) as err:
        raise JSONInputError(source, str(err)) from None


def read_json(path: str | Path, *, max_bytes: int = DEFAULT_MAX_BYTES, max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON from a file; the size is checked before the file is read."""
    path = Path(path)
    if path.is_dir():
        raise JSONInputError(str(path), "is a folder, not a JSON file")
    try:
        size = path.stat().st_size
    except OSError as err:
        raise JSONInputError(str(path), f"cannot read: {err.strerror or err}") from None
    if size > max_bytes:
        raise JSONInputError(str(path), f"the file is {size:,} bytes, over the {max_bytes:,}-byte limit")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise JSONInputError(str(path), f"cannot read: {err.strerror or err}") from None
    return loads_strict(data, str(path), max_bytes=max_bytes, max_depth=max_depth)

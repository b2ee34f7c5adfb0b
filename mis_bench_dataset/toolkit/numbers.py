"""The toolkit's number rules, defined once: half-up rounding, exact gold decimals, percent text.

- Scores are decimals with one place (paper §3.2): rounding is half up on the exact decimal
  text (`Decimal`), never on a binary float, so 2.45 becomes 2.5 as a person would round it.
- Gold scores are stored as float32 (Parquet / `datasets`); widening one to float64 goes
  through its shortest decimal repr, so a stored 3.7 is read as 3.7, not 3.700000047.
- ICC and rates are reported in percent with one decimal, as the paper's tables; an
  undefined value is shown as MISSING, never as "nan".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy is imported where it is used: `mis-bench --help` needs none of it
    import numpy as np

MISSING = "–"


def round_half_up(value: float | str | Decimal, places: int = 1) -> float:
    """Round half up (away from zero at .5) on the value's exact decimal text."""
    exact = value if isinstance(value, Decimal) else Decimal(value if isinstance(value, str) else repr(float(value)))
    return float(exact.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))


def round_half_up_array(values: np.ndarray, places: int = 1) -> np.ndarray:
    """`round_half_up` for an array of float64 values, element by element on their decimal repr.

    Vectorised shortcuts (`floor(x * 10 + 0.5)`) round 2.45 down to 2.4 because 2.45 * 10 is
    24.499999999999996 in binary; this follows the scalar rule exactly.
    """
    import numpy as np

    array = np.asarray(values, dtype=np.float64)
    # Scores take few distinct values (means of integer ratings): round each distinct value once.
    distinct, inverse = np.unique(array, return_inverse=True)
    rounded = np.array([round_half_up(v, places) for v in distinct.tolist()], dtype=np.float64)
    return rounded[inverse].reshape(array.shape)


def exact_decimal(value: float | np.floating) -> float:
    """A float32 value widened through its shortest repr (3.7, not 3.700000047); other floats as they are."""
    import numpy as np

    if isinstance(value, np.float32) and np.isfinite(value):
        return float(str(value))
    return float(value)


def gold_decimal(value: float | np.floating) -> float:
    """A gold score read from the dataset's float32 column, at its decimal, however it was widened on the way.

    `datasets` hands float32 values over as Python floats (3.700000047683716); narrowing back to
    float32 and taking the shortest repr recovers 3.7 exactly, for any score of up to 7 digits.
    """
    import numpy as np

    return exact_decimal(np.float32(value))


def is_number(value: object) -> bool:
    """A finite int or float (not bool): what can be printed as a figure."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def pct(value: float | None, digits: int = 1) -> str:
    """A raw fraction as percent text with `digits` decimals; MISSING when undefined."""
    return f"{100.0 * value:.{digits}f}" if is_number(value) else MISSING


def ci_pct(ci: Sequence[float | None] | None, digits: int = 1) -> str:
    """A [low, high] interval of fractions as "[a, b]" in percent; MISSING when undefined."""
    if not ci or len(ci) != 2 or not all(is_number(v) for v in ci):
        return MISSING
    return f"[{pct(ci[0], digits)}, {pct(ci[1], digits)}]"


def num(value: float | None, digits: int = 3) -> str:
    """A plain number with `digits` decimals; MISSING when undefined."""
    return f"{value:.{digits}f}" if is_number(value) else MISSING


def signed(value: float | None, digits: int = 2) -> str:
    """A difference in score points with its sign ("+0.25", "-1.04"); MISSING when undefined."""
    return f"{value:+.{digits}f}" if is_number(value) else MISSING

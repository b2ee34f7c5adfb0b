"""The number rules defined once in mis_bench_dataset.toolkit.numbers: half-up rounding, float32 widening, percents."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from mis_bench_dataset.toolkit.numbers import (
    MISSING,
    ci_pct,
    exact_decimal,
    gold_decimal,
    pct,
    round_half_up,
    round_half_up_array,
)


def test_ties_round_up_on_the_decimal_text_not_the_binary_value():
    # 2.45 is 2.4500000000000001776... and 1.005 is 1.00499999999999989... in binary.
    assert round_half_up(2.45) == 2.5 and round_half_up(2.449) == 2.4
    assert round_half_up(1.005, 2) == 1.01
    assert round(2.675, 2) == 2.67 and round_half_up(2.675, 2) == 2.68  # Python's round differs
    assert round_half_up("3.25") == 3.3 and round_half_up(Decimal("3.35")) == 3.4


@given(st.lists(st.integers(min_value=0, max_value=5000), min_size=1, max_size=50))
def test_the_array_rule_equals_the_scalar_rule(thousandths):
    values = np.array(thousandths, dtype=np.float64) / 1000
    expected = [float(Decimal(repr(v)).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)) for v in values.tolist()]
    assert round_half_up_array(values).tolist() == expected
    assert round_half_up_array(values.reshape(1, -1)).shape == (1, len(thousandths))


@given(st.integers(min_value=10, max_value=50))
def test_float32_scores_widen_to_their_decimal(tenths):
    stored = np.float32(tenths / 10)
    # Widening in binary is off for every score but the x.0 and x.5 ones, which float32 holds exactly.
    assert (float(stored) == tenths / 10) == (tenths % 5 == 0)
    assert exact_decimal(stored) == tenths / 10
    assert exact_decimal(3.7) == 3.7
    # What `datasets` hands over: the float32 already widened to a Python float.
    assert gold_decimal(float(stored)) == tenths / 10 and gold_decimal(tenths / 10) == tenths / 10


def test_percent_text_and_missing():
    assert pct(0.1234) == "12.3" and pct(-0.0004) == "-0.0"
    assert pct(None) == MISSING and pct(float("nan")) == MISSING and pct(True) == MISSING
    assert ci_pct([0.1, 0.25]) == "[10.0, 25.0]" and ci_pct([0.1, None]) == MISSING

"""The score parser g (paper eq. 2): tricky strings with known answers, and a fuzzer."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import eval_scripts
from eval_scripts import parse_score
from mis_icc_metric.score_parser import PARSE_STYLES

# (text, style, expected)
CASES: list[tuple[str, str, float | None]] = [
    # lone numbers
    ("3.5", "direct", 3.5),
    ("  4 ", "direct", 4.0),
    ("**3.7**", "direct", 3.7),
    ("3.5.", "direct", 3.5),
    ("`2.9`", "direct", 2.9),
    ("5", "direct", 5.0),
    ("1.0", "direct", 1.0),
    ("\uff13.\uff15", "direct", 3.5),  # full-width digits (NFKC)
    ("3.5\nThe therapist is fluent and warm.", "direct", 3.5),
    ("3.5\n4.0", "direct", None),  # two bare numbers: ambiguous
    ("The analysis is long.\n\n3.8", "cot", 3.8),
    ("The analysis is long.\n\n3.8", "direct", None),  # direct reads the first line only
    ("", "direct", None),
    ("   \n ", "cot", None),
    ("I cannot rate this video.", "direct", None),
    # rounding half up on the exact decimal text, never clipping
    ("3.45", "direct", 3.5),
    ("3.449", "direct", 3.4),
    ("2.25", "direct", 2.3),
    ("4.95", "direct", 5.0),
    ("1.05", "direct", 1.1),
    ("0.95", "direct", None),
    ("5.04", "direct", None),
    ("5.01", "direct", None),
    ("0", "direct", None),
    ("6", "direct", None),
    ("-1", "direct", None),
    ("Final score: -3", "cot", None),
    ("Final score: 7.5", "cot", None),
    # explicit final scores
    ("Final score: 3.4", "cot", 3.4),
    ("Final Score: **3.4**", "cot", 3.4),
    ("**Final score:** 4.2", "cot", 4.2),
    ("final score = 2.8", "cot", 2.8),
    ("Final score - 3.1", "cot", 3.1),
    ("### Final Score\n3.6", "cot", 3.6),
    ("Overall score: 4", "cot", 4.0),
    ("Final rating: 3.9/5", "cot", 3.9),
    ("Final answer: 3.2", "direct", 3.2),
    ("My final score is 3.3.", "cot", 3.3),
    ("Final score: 4.0 (out of 5)", "cot", 4.0),
    ("Final score: 4 out of 5.0", "cot", 4.0),
    # two different final scores are no answer; the last of several weaker mentions wins
    ("Final score: 2.0\nOn reflection...\nFinal score: 3.5", "cot", None),
    ("Final score: 3.5\nOn reflection...\nFinal score: 3.5", "cot", 3.5),
    ("A score of 2 seems low; a score of 4 seems high. Score: 3.2", "cot", 3.2),
    ("Score: 4.1 at first. Rated 3.9 on reflection.", "direct", 3.9),
    # an explicit final score beats later, weaker mentions
    ("Final score: 3.5\n(Score 4 would need more warmth.)", "cot", 3.5),
    ("Final score: 3.0. A 4/5 would need more hope.", "cot", 3.0),
    # JSON
    ('{"score": 3.5}', "direct", 3.5),
    ('```json\n{"dimension": "empathy", "score": 4.2}\n```', "direct", 4.2),
    ('{"final_score": "2.7", "reason": "..."}', "cot", 2.7),
    ("{'score': 3}", "direct", 3.0),
    ('{"score": 9}', "direct", None),
    # fractions of five
    ("4/5", "direct", 4.0),
    ("I'd say 3.5 / 5.", "direct", 3.5),
    ("It deserves 3 out of 5.", "direct", 3.0),
    ("The response earns 2.5 out of 5 for hope.", "cot", 2.5),
    # other scales are rejected, never rescaled
    ("8/10", "direct", None),
    ("Final score: 8/10", "cot", None),
    ("Final score: 4/10", "cot", None),
    ("Score: 7 out of 10", "direct", None),
    ("Final score: 70%", "cot", None),
    ("Final score: 4 (out of 10)", "cot", None),
    # ranges and alternatives are rejected
    ("3-4", "direct", None),
    ("3 - 4", "direct", None),
    ("Final score: 3-4", "cot", None),
    ("Final score: 3.5 or 4.0", "cot", None),
    ("Final score: 3 to 4", "cot", None),
    ("Score: 3\u20134", "direct", None),
    ("Somewhere between 3 and 4.", "direct", None),
    ("3.5 or 4", "direct", None),
    # plain score mentions
    ("Score: 3.5", "direct", 3.5),
    ("Score 3.5", "direct", 3.5),
    ("Score 4", "direct", 4.0),
    ("I would rate this response 3.8.", "direct", 3.8),
    ("Rating: 2.6", "direct", 2.6),
    ("I give it a score of 4.", "direct", 4.0),
    ("The score is 3.", "direct", 3.0),
    # scale notes are not answers
    ("Score (1-5): 3.5", "direct", 3.5),
    ("On a scale of 1 to 5, I would rate this 4.2.", "direct", 4.2),
    ("Final score (out of 5): 2.9", "cot", 2.9),
    ("On a 1-5 scale: 3", "direct", 3.0),
    # labels the parser does not know are not guessed at
    ("Empathy: 4.0 and fluency: 3.0", "direct", None),
    # rubric echoes are ignored
    ("Score 3: A moderate level of verbal fluency.", "cot", None),
    (
        "Score 3: A moderate level of verbal fluency.\nScore 4: The response is fluent.\n"
        "The therapist matches Score 4 best.\nFinal score: 3.9",
        "cot",
        3.9,
    ),
    ("Score 5. The participant is at great ease.\n\n3.6", "cot", 3.6),
    ("Score 2 describes choppy speech; here it is not.\nScore: 4.3", "cot", 4.3),
    # the `paper` style: the completion MIS-RAFT trains, a bare score, the rubric's "Score:" line completed
    ("3.4", "paper", 3.4),
    ("The score prediction is: 3.4", "paper", 3.4),
    ("Score: 3.4", "paper", 3.4),
    (" 4.0\n", "paper", 4.0),
    ("The score prediction is: 3.45", "paper", 3.5),
    ("The score prediction is: 4", "paper", 4.0),
    ("The score prediction is: 3.4<|im_end|>", "paper", 3.4),
    ("The score prediction is: 3.4\nThe therapist is warm.", "paper", 3.4),
    ("The Score Prediction is 2.9.", "paper", 2.9),
    ("The score prediction is: 3.4", "cot", 3.4),
    ("The score prediction is:", "paper", None),  # cut off at the token limit
    ("The score prediction is: 8/10", "paper", None),
    ("The score prediction is: 3 to 4", "paper", None),
    ("The score prediction is: 6.0", "paper", None),
    ("The score prediction is: -3.4", "paper", None),
    ("Score 3: A moderate level of verbal fluency.", "paper", None),
    ("The analysis is long.\n\n3.8", "paper", None),  # like direct, a lone number must come first
    # reasoning blocks
    ("<think>Maybe 2, maybe 5.</think>3.5", "direct", 3.5),
    ("<think>Final score: 2.0</think>\nFinal score: 4.4", "cot", 4.4),
    ("<think>Let me weigh it... 4 or 5", "direct", None),  # unclosed
    ("Final score: 3.0 <think>", "cot", None),
    ("so it is about four.</think>\n4.0", "direct", 4.0),  # pre-filled opening tag
    ("<THINKING>x</THINKING> Score: 2.2", "direct", 2.2),
    ("<reasoning>hmm 1/5</reasoning>\n**3.3**", "direct", 3.3),
]


@pytest.mark.parametrize(("text", "style", "expected"), CASES)
def test_known_answers(text: str, style: str, expected: float | None) -> None:
    assert parse_score(text, style) == expected


def test_reexported_from_package() -> None:
    assert eval_scripts.parse_score is parse_score


def test_non_strings_are_unparsed() -> None:
    assert parse_score(None, "direct") is None
    assert parse_score(3.5, "direct") is None  # type: ignore[arg-type]
    assert parse_score(b"3.5", "cot") is None  # type: ignore[arg-type]


def test_every_prompt_style_has_its_parser_rules() -> None:
    from mis_bench_dataset.dimensions import PROMPT_STYLES

    assert PARSE_STYLES == PROMPT_STYLES and "paper" in PARSE_STYLES


def test_unknown_style_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown prompt style 'fewshot'"):
        parse_score("3.5", "fewshot")


def _one_decimal_in_range(value: float | None) -> bool:
    if value is None:
        return True
    return 1.0 <= value <= 5.0 and Decimal(repr(value)) == Decimal(repr(value)).quantize(Decimal("0.1"))


_FRAGMENTS = st.sampled_from(
    [
        "Final score:",
        "Overall score",
        "score",
        "Score 3:",
        "rating",
        "/5",
        "/10",
        " out of 5",
        " out of 10",
        "<think>",
        "</think>",
        "**",
        "\n",
        " ",
        "-",
        "\u2013",
        " or ",
        " to ",
        "%",
        '{"score": ',
        "}",
        ".",
        "0",
        "1",
        "3",
        "4.5",
        "5",
        "9",
        "2.25",
        "-1",
        "\uff14",
        "\u0663",
    ]
)
_FUZZ_TEXT = st.one_of(st.text(max_size=200), st.lists(_FRAGMENTS, max_size=25).map("".join))


@settings(max_examples=600, deadline=None)
@given(text=_FUZZ_TEXT, style=st.sampled_from(PARSE_STYLES))
def test_fuzz_never_raises_and_stays_in_range(text: str, style: str) -> None:
    first = parse_score(text, style)
    assert _one_decimal_in_range(first)
    assert parse_score(text, style) == first  # deterministic


@settings(max_examples=300, deadline=None)
@given(tenths=st.integers(min_value=10, max_value=50), style=st.sampled_from(PARSE_STYLES))
def test_every_valid_score_round_trips_in_each_answer_format(tenths: int, style: str) -> None:
    value = tenths / 10
    answer = f"{value:.1f}"
    formats = [
        answer,
        f"Final score: {answer}",
        f"The therapist shows warmth.\nFinal score: {answer}",
        json.dumps({"score": value}),
        f"{answer}/5",
        f"The score prediction is: {answer}",
    ]
    for text in formats:
        assert parse_score(text, style) == value, text


@settings(max_examples=300, deadline=None)
@given(
    raw=st.decimals(min_value=-10, max_value=20, places=3, allow_nan=False, allow_infinity=False),
    style=st.sampled_from(PARSE_STYLES),
)
def test_out_of_range_is_rejected_and_in_range_rounds_half_up(raw: Decimal, style: str) -> None:
    text = f"Final score: {raw}"
    parsed = parse_score(text, style)
    if raw < 1 or raw > 5:
        assert parsed is None
    else:
        expected = float(raw.quantize(Decimal("0.1"), rounding="ROUND_HALF_UP"))
        assert parsed == expected


@settings(max_examples=200, deadline=None)
@given(
    low=st.integers(min_value=1, max_value=5),
    high=st.integers(min_value=1, max_value=5),
    joiner=st.sampled_from(["-", " - ", "\u2013", " to ", " or "]),
)
def test_ranges_are_never_read_as_one_score(low: int, high: int, joiner: str) -> None:
    for text in (f"{low}{joiner}{high}", f"Final score: {low}{joiner}{high}"):
        assert parse_score(text, "direct") is None


@settings(max_examples=100, deadline=None)
@given(
    numerator=st.integers(min_value=1, max_value=10),
    denominator=st.sampled_from([4, 7, 10, 100]),
)
def test_other_scales_are_rejected(numerator: int, denominator: int) -> None:
    assert parse_score(f"Final score: {numerator}/{denominator}", "cot") is None
    assert parse_score(f"{numerator}/{denominator}", "direct") is None

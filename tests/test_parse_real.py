"""The parser on real-shaped text: what fine-tuned judges write (conclusions, rubric quotes, runaway
digits, loops cut by the token limit), the faults of issue 17 (signs, exponents, decimal commas, other
scales), the toolkit's own prompts echoed back, and the authors' hand-labelled answers."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eval_scripts import parse_score, render_paper_prompt, render_prompt
from mis_bench_dataset import DIMENSION_KEYS, RUBRIC
from mis_bench_dataset.toolkit.numbers import round_half_up
from mis_icc_metric.score_parser import MAX_NUMBER_DIGITS, PARSE_STYLES, parse_details

# Written in the shape of real answers (not copied from any file); the same in every style.
REAL_SHAPED: list[tuple[str, float | None]] = [
    # conclusions in the forms fine-tuned judges write
    ("The therapist validates the client's frustration. Therefore, the therapist scores a 2.00.", 2.0),
    ("The therapist stays calm throughout. Therefore, the therapist scores 4.", 4.0),
    ("No attempt at collaboration is visible. Therefore, the therapist scores at level 1.", 1.0),
    ("The response is hopeful and concrete. Therefore, the therapist's response is rated as Score 5.", 5.0),
    ("The response is ordinary. Therefore, the response is coded as Score 3.", 3.0),
    ("The therapist is warm and curious. Therefore, the response meets the criteria for Score 4.", 4.0),
    ("Warmth is clear. Therefore, the response meets the criteria for a score of 4.00.", 4.0),
    ("The therapist names the rupture directly. Therefore, the therapist receives a score of 4.50.", 4.5),
    ("The therapist is neutral. Therefore, the therapist gets a score of 2.625.", 2.6),
    ("The therapist is neutral. Therefore, the therapist earns a score of 3.25.", 3.3),
    ("The therapist is neutral. Therefore, ... 3.375", 3.4),
    ("The client is heard. Therefore, the therapist's response is 3.375.", 3.4),
    ("Therefore, the therapist scores a 3.375.", 3.4),
    ("The therapist's tone is flat. So the therapist gets a score of 1.00.", 1.0),
    ("The therapist's response is rated at Score 2.", 2.0),
    ("Therefore, the therapist's response is at Score 3.", 3.0),
    ("Therefore, the score is 4.", 4.0),
    ("So the overall score is 2.5.", 2.5),
    ("Taken together, I would rate this response 3.6.", 3.6),
    ("I'd give it a 2.5 on this dimension.", 2.5),
    ("I\u2019d give it a 2.5 on this dimension.", 2.5),
    ("The therapist scores a 5 for this dimension.", 5.0),
    ("Thus, the therapist deserves a rating of 3.", 3.0),
    ("The therapist is given a score of 4.", 4.0),
    ("The therapist's response would be rated as a 3.", 3.0),
    ("Therefore, the therapist receives the highest score of 5.", 5.0),
    ("A rating of 3 would be appropriate.", 3.0),
    # one conclusion repeated is one score; two different ones are none
    ("Therefore, the therapist scores 3.375. Looking again, the therapist scores 3.375.", 3.4),
    (
        "Therefore, he gets a score of 2.25. The rubric says the score 2 is the lowest that applies. "
        "Therefore, he gets a score of 2.25.",
        2.3,
    ),
    ("Therefore, the therapist scores 2. On reflection, the therapist scores 4.", None),
    ("Therefore, the therapist receives a score of 3.375 and the therapist receives a score of 3.4.", 3.4),
    ("Therefore, the therapist scores 3. Therefore, the therapist scores 3333333333333333333333.", None),
    # bounds and negations are not conclusions
    (
        "The therapist does not earn a score higher than 2.5. According to the rubric, the therapist "
        "receives a score of 2.5.",
        2.5,
    ),
    (
        "The response is not coded as a \u201c5\u201d because no pathway is named. Therefore, the response "
        "is coded as Score 4.",
        4.0,
    ),
    ("The therapist does not receive a score of 5.", None),
    ("Therefore, the response is not a 5.", None),
    # numbers quoted from the rubric or the instructions are never the answer
    ("There is more emotion than in ordinary speech, but it is not as focused as the maximum rating of 5.", None),
    (
        'However, a "5" should not be rated if the affect is demeaning (in which case a "3" would be the '
        "maximum rating possible).",
        None,
    ),
    ("Some effort to collaborate is made but not as strong as a \u201c5\u201d.", None),
    ("Give a rating of 1 if the response indicates a clear disregard of the other's experience.", None),
    ('In order to receive a "5" the participant must infer something not explicitly stated.', None),
    ("For a response to be coded as a \u201c5\u201d there needs to be an allusion to agency.", None),
    ("A score of 5 requires a compassionate attempt to relate to the client.", None),
    ("The lowest score of 1 applies to obvious disrespect.", None),
    ("Score 1: The participant has great difficulty verbalizing a response.", None),
    ("Score 5. The participant is at great ease and communicates ideas with no anxiety.", None),
    ("Levels 1-2 describe anxious speech; levels 4-5 fluent speech.", None),
    ("The response falls between Score 3 and Score 4.", None),
    ("If the therapist had named the rupture, the score would be 4.", None),
    ("The scores 4 and 5 differ only in intensity.", None),
    ("The patient gets 3 sessions a week.", None),
    ("Overall, the therapist shows warmth toward the client in session 2.", None),
    ("The maximum rating of 5 is not reached. Therefore, the therapist scores 4.", 4.0),
    ("Score: 3.5 (between Score 3 and Score 4)", 3.5),
    # runaway digit strings are not numbers
    ("Therefore, the therapist receives a score of 3375454444444444444444444444444444444", None),
    ("Therefore, the therapist scores a 3.375.375.375.375", None),
    ("Therefore, the therapist scores a 3.3755555555555555555555555555", None),
    ("So the score is 44555", None),
    ("Therefore, the therapist gets a score of 2.5789473684210527.", 2.6),
    ("3.375.375", None),
    ("2222222222222222222222222222", None),
    # out of [1, 5] stays null, never clipped
    ("Therefore, the therapist receives a score of 5.0625", None),
    ("Therefore, the therapist scores 33.375.", None),
    ("Therefore, the therapist receives a score of 0.875.", None),
    ("5.5", None),
    # a text cut off before its conclusion
    ("The therapist uses prosody to convey emotion. The therapist uses prosody to convey emotion. The", None),
    ("A score of 4 seems right at first, but the therapist then interrupts the client and", None),
    ("Therefore, the therapist's response is ordinary. Therefore", None),
    ("Therefore, the therapist receives a score of 4. The therapist uses prosody to", 4.0),
    # no score stated
    ("Therefore, the therapist scores high in this category.", None),
    ("Therefore, the therapist's response is not rated high in terms of warmth.", None),
]

# Issue 17: explicit signs, exponents, decimal commas, other scales anywhere in the value's sentence.
FAULTS: list[tuple[str, float | None]] = [
    ("Score: +3.5", None),
    ("Score: 1e308", None),
    ("Score: 2.5e0", None),
    ("Score: 2.5 points out of 10", None),
    ("Score: 3,5", None),
    ("Score: 3 (on a scale of 1-10)", None),
    ("Score: 3 on a 10-point scale", None),
    ("Final score: 7 (0-100)", None),
    ("Score: 4 /10", None),
    ("Rating: 4 of 5 points", None),
    ("Score: 80 percent", None),
    ("Score: 4th level", None),
    ("Score: \u00be", None),
    ("Final score: 3, 4", None),
    ("Score: 3. (On a scale of 1-10.)", 3.0),  # another sentence
    ("Score: 3. (on a scale of 1-10)", None),  # the same one
    ("Score: 3 (on a scale of 1-5)", 3.0),
    ("Score: 3 on a 5-point scale", 3.0),
]


@pytest.mark.parametrize("style", PARSE_STYLES)
@pytest.mark.parametrize(("text", "expected"), REAL_SHAPED + FAULTS)
def test_real_shaped_answers(text: str, expected: float | None, style: str) -> None:
    assert parse_score(text, style) == expected


@pytest.mark.parametrize("style", ["direct", "paper"])
def test_a_score_first_answer_keeps_its_score_when_the_explanation_is_cut_off(style: str) -> None:
    assert parse_score("3.4\nThe therapist is warm and curious, and she asks the client what would help and", style)
    assert parse_score("Score: 3.4\nThe therapist is warm and curious, and she asks the client what would", style)
    assert parse_score("Score: 3.4\nThe therapist is warm and curious, and she asks the client what", "cot") is None


def test_details_say_which_rule_decided_and_why_a_text_has_none() -> None:
    text = "The therapist is neutral. Therefore, the therapist scores a 3.375."
    result = parse_details(text, "paper")
    assert (result.value, result.rule, result.reason) == (3.4, "conclusion", None)
    assert text[result.start : result.end] == "3.375"
    assert parse_details("Therefore, the therapist scores 2. Later, the therapist scores 4.", "cot").reason == (
        "different final scores stated (2, 4)"
    )
    assert parse_details("Score: 44575555555555555555555", "cot").reason == "runaway digit string"
    assert parse_details("Score: 5.06", "cot").reason == "out of range"
    assert parse_details("<think>maybe 4", "cot").reason == "unfinished reasoning block"


def test_the_value_is_located_in_the_original_text_through_normalisation_and_blanking() -> None:
    text = "<think>\u00e9l\u00e8ve \uff14?</think>\u201cScore\u201d (1\u20135): \uff13.\uff15 \u2014 fair."
    result = parse_details(text, "cot")
    assert result.value == 3.5 and text[result.start : result.end] == "\uff13.\uff15"


@pytest.mark.parametrize("dimension", DIMENSION_KEYS)
def test_the_rubric_and_the_prompts_echoed_back_are_never_an_answer(dimension: str) -> None:
    rubric = RUBRIC[dimension]
    row = {"video_id": "AB0101_T1_Jessica", "dimension": dimension, "transcript": "I hear you. Let us work on it."}
    texts = [rubric.criterion, rubric.level_lines(". "), rubric.level_lines(": "), *rubric.scores]
    texts += [render_prompt(row, "text", style) for style in ("direct", "cot")]
    paper = render_paper_prompt(row, "text")
    texts += [paper.system, paper.user]
    for text in texts:
        for style in PARSE_STYLES:
            assert parse_score(text, style) is None, (style, text[:200])
            assert parse_score(text + "\n\nTherefore, the therapist scores a 3.", style) == 3.0, text[:200]


def test_every_hand_labelled_real_answer(authors_answers) -> None:
    """The authors' real answers: every labelled text right, and never a number where the label is null."""
    assert len(authors_answers) >= 100
    wrong = []
    for index, item in enumerate(authors_answers):
        for style in PARSE_STYLES:
            got = parse_score(item["text"], style)
            if got != item["score"]:
                wrong.append((index, style, item["score"], got, item["text"][-120:]))
    assert wrong == []


# -- property tests: the forms, generated ---------------------------------------------------------------

_SUBJECTS = st.sampled_from(["the therapist", "the clinician", "the participant", "the therapist's response"])
_CONCLUSIONS = st.sampled_from(
    [
        "Therefore, {s} scores a {v}.",
        "Therefore, {s} scores {v}.",
        "Therefore, {s} receives a score of {v}.",
        "So {s} gets a score of {v}.",
        "Therefore, {s} is rated as Score {v}.",
        "Therefore, {s} is coded as Score {v}.",
        "Therefore, {s} meets the criteria for a score of {v}.",
        "Therefore, the score is {v}.",
        "Therefore, ... {v}",
        "Final score: {v}",
        "I would rate this response {v}.",
    ]
)
_QUOTES_OF_THE_RUBRIC = st.sampled_from(
    [
        "There is more emotion than in ordinary speech, but it is not as focused as the maximum rating of 5.",
        'A "5" should not be rated if the affect is hostile (in which case a "3" would be the maximum).',
        "Score 1: The participant has great difficulty verbalizing a response.",
        "Score 5. The participant is at great ease.",
        "Some effort to collaborate is made but not as strong as a \u201c5\u201d.",
        "Give a rating of 1 if the response shows a clear disregard of the client.",
        "A score of 4 requires specific actions that build collaboration.",
        "The therapist does not receive a score higher than 2.",
        "",
    ]
)
_DECIMALS = st.decimals(min_value=Decimal("0.5"), max_value=Decimal("6"), places=3, allow_nan=False)


def _text_of(value: Decimal, places: int) -> str:
    return f"{value:.{places}f}"


@settings(max_examples=400, deadline=None)
@given(
    template=_CONCLUSIONS,
    subject=_SUBJECTS,
    quotes=st.lists(_QUOTES_OF_THE_RUBRIC, max_size=3),
    value=_DECIMALS,
    places=st.sampled_from([0, 1, 2, 3]),
    style=st.sampled_from(PARSE_STYLES),
)
def test_a_conclusion_after_rubric_quotes_is_read_and_rounded_half_up(template, subject, quotes, value, places, style):
    number = _text_of(value, places)
    text = " ".join([*quotes, template.format(s=subject, v=number)])
    expected = round_half_up(Decimal(number)) if Decimal(1) <= Decimal(number) <= Decimal(5) else None
    assert parse_score(text, style) == expected, text


@settings(max_examples=200, deadline=None)
@given(
    template=_CONCLUSIONS,
    first=st.integers(min_value=10, max_value=50),
    second=st.integers(min_value=10, max_value=50),
    style=st.sampled_from(PARSE_STYLES),
)
def test_two_final_scores_are_one_answer_only_when_they_agree(template, first, second, style):
    if template.startswith("Therefore, ...") or template.startswith("Final"):
        template = "Therefore, {s} scores {v}."
    a, b = (template.format(s="the therapist", v=f"{n / 10:.1f}") for n in (first, second))
    assert parse_score(f"{a} Looking again. {b}", style) == (first / 10 if first == second else None)


_EXTRA_DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=40)


@settings(max_examples=300, deadline=None)
@given(
    template=_CONCLUSIONS,
    head=st.integers(min_value=1, max_value=5),
    repeats=st.lists(_EXTRA_DIGITS, min_size=2, max_size=4),
    style=st.sampled_from(PARSE_STYLES),
)
def test_runaway_digit_strings_are_not_numbers(template, head, repeats, style):
    second_points = f"{head}." + ".".join(repeats)  # 3.375.375 ...
    long_digits = f"{head}" + "".join(repeats) * MAX_NUMBER_DIGITS  # 44575555555 ...
    long_fraction = f"{head}." + "".join(repeats) * MAX_NUMBER_DIGITS  # 3.3755555555 ...
    for number in (second_points, long_digits, long_fraction):
        text = template.format(s="the therapist", v=number)
        assert parse_score(text, style) is None, text


_FILLER = st.sampled_from(["", " for warmth", " overall", " (moderate)", " given the pauses"])
_OTHER_SCALES = st.sampled_from(
    [
        "{v} out of {n}",
        "{v}/{n}",
        "{v} points",
        "{v} points out of {n}",
        "{v}{f} (on a scale of 1-{n})",
        "{v}{f}, on a scale of 1 to {n}",
        "{v}{f} on a {n}-point scale",
        "{v}%",
        "{v} percent",
    ]
)


@settings(max_examples=400, deadline=None)
@given(
    label=st.sampled_from(["Score: ", "Final score: ", "Rating: ", "Therefore, the therapist receives a score of "]),
    form=_OTHER_SCALES,
    value=st.integers(min_value=10, max_value=50),
    denominator=st.integers(min_value=6, max_value=100),
    filler=_FILLER,
    style=st.sampled_from(PARSE_STYLES),
)
def test_another_scale_anywhere_in_the_sentence_is_none(label, form, value, denominator, filler, style):
    text = label + form.format(v=f"{value / 10:.1f}", n=denominator, f=filler)
    assert parse_score(text, style) is None, text


@settings(max_examples=300, deadline=None)
@given(
    label=st.sampled_from(["Score: ", "Final score: ", "Therefore, the therapist scores "]),
    integer=st.integers(min_value=1, max_value=5),
    fraction=st.integers(min_value=0, max_value=9),
    form=st.sampled_from(
        ["+{i}.{f}", "\u2212{i}.{f}", "-{i}.{f}", "{i},{f}", "{i}.{f}e{e}", "{i}e{e}", "{i}.{f}E-{e}"]
    ),
    exponent=st.integers(min_value=0, max_value=400),
    style=st.sampled_from(PARSE_STYLES),
)
def test_signs_exponents_and_decimal_commas_are_none(label, integer, fraction, form, exponent, style):
    text = label + form.format(i=integer, f=fraction, e=exponent)
    assert parse_score(text, style) is None, text

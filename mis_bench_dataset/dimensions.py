"""The benchmark's domain facts, in one place: dimensions, rubric (paper Table 5),
human ceiling (Table 2) and gold-score statistics (Table 6).

Every other module imports these; nothing else spells a dimension key or a
paper number. Texts are copied verbatim from the paper, including the one
rubric line the paper itself truncates (Persuasiveness, score 2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mis_bench_dataset.toolkit.options import bounded_int, non_negative_int, option


@dataclass(frozen=True)
class Dimension:
    """One FIS dimension: stable key (column name of the original labels file),
    display name, and the paper's abbreviation."""

    key: str
    name: str
    abbreviation: str


@dataclass(frozen=True)
class Rubric:
    """A dimension's criterion and its five score descriptions (index 0 = score 1)."""

    criterion: str
    scores: tuple[str, str, str, str, str]

    def description(self, score: int) -> str:
        if score not in SCORE_LEVELS:
            raise ValueError(f"rubric score must be one of {SCORE_LEVELS}, got {score!r}")
        return self.scores[score - 1]

    def level_lines(self, separator: str = ": ") -> str:
        """The five levels as prompts show them, one line each: `Score 1: ...` (or `Score 1. ...`)."""
        return "\n".join(f"Score {level}{separator}{self.description(level)}" for level in SCORE_LEVELS)


@dataclass(frozen=True)
class Ceiling:
    """Human single-rater ICC(3,1) among the raters (Table 2), as fractions."""

    icc: float
    ci_low: float
    ci_high: float


@dataclass(frozen=True)
class GoldStats:
    """Gold-score summary of the 996 videos (Table 6)."""

    mean: float
    std: float
    min: float
    max: float


SCORE_MIN = 1.0
"""The lowest score of the scale (gold and predictions lie in [1, 5], one decimal)."""
SCORE_MAX = 5.0
"""The highest score of the scale."""
SCORE_MIDPOINT = 3.0
SCORE_LEVELS = (1, 2, 3, 4, 5)
# The paper's zero-shot grid (section 4.1): four modality settings x two prompt styles.
MODALITY_SETTINGS: tuple[str, ...] = ("text", "audio+text", "video+text", "audio+video+text")
ZERO_SHOT_PROMPT_STYLES: tuple[str, ...] = ("direct", "cot")
# The authors' MIS-RAFT protocol behind Table 4 (mis_bench_dataset.protocol), beside the grid's two styles.
PAPER_PROMPT_STYLE = "paper"
LONE_NUMBER_LINES: tuple[str, ...] = ("first", "last")
# How a row's score is read (`mis-bench run --score-from`): the parser on the answer's text, or the
# probability-weighted score from the model's distribution over the score's digits (docs/readouts.md).
SCORE_TEXT = "text"
SCORE_EXPECTED = "expected"
# The one output of a regression head (`mis-bench train --head regression`): no text, no digits.
SCORE_REGRESSION = "regression"
SCORE_READOUTS: tuple[str, ...] = (SCORE_TEXT, SCORE_EXPECTED, SCORE_REGRESSION)


@dataclass(frozen=True)
class PromptStyle:
    """One prompt style's defaults, in the one table every reader takes them from: the backends' answer token
    limit, the dry-run estimate's expected answer length, the parser's reading of a bare-number answer and the
    command line's help text. A style missing here is missing everywhere (`PROMPT_STYLES` is this table's keys).

    `readout_max_new_tokens` holds the token limit of a readout other than the text answer (e.g. an
    expected-score readout from the first tokens' probabilities) by readout name; a readout not in it uses
    `max_new_tokens`.
    """

    name: str
    help: str
    max_new_tokens: int
    expected_completion_tokens: int
    lone_number_line: str  # where a bare-number answer stands (parser tier D): "first" or "last" line
    readout_max_new_tokens: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if self.lone_number_line not in LONE_NUMBER_LINES:
            raise ValueError(f"prompt style {self.name!r}: lone_number_line must be one of {LONE_NUMBER_LINES}")
        unknown = set(self.readout_max_new_tokens) - set(SCORE_READOUTS)
        if unknown:
            raise ValueError(f"prompt style {self.name!r}: unknown readouts {sorted(unknown)}; use {SCORE_READOUTS}")
        limits = [self.max_new_tokens, self.expected_completion_tokens, *self.readout_max_new_tokens.values()]
        if any(not isinstance(n, int) or n < 1 for n in limits):
            raise ValueError(f"prompt style {self.name!r}: token counts must be positive integers, got {limits}")

    @property
    def score_first(self) -> bool:
        """Whether an answer starts with its score (a bare number stands on its first line): an expected-score
        readout then reads the score from the answer's first tokens."""
        return self.lone_number_line == "first"

    def max_tokens(self, score_from: str | None = None) -> int:
        """The answer token limit of the readout `score_from` (None: the text answer)."""
        if score_from is None:
            return self.max_new_tokens
        return self.readout_max_new_tokens.get(score_from, self.max_new_tokens)


PROMPT_STYLE_TABLE: dict[str, PromptStyle] = {
    style.name: style
    for style in (
        # A direct answer is a score ("3.5", a few tokens); 32 leaves room for a short preamble.
        PromptStyle(
            "direct",
            help="our template, the score only (Table 3's grid)",
            max_new_tokens=32,
            expected_completion_tokens=8,
            lone_number_line="first",
            # An expected-score request reads the score's first tokens: "3", ".", "5" and the end of sequence.
            readout_max_new_tokens=MappingProxyType({SCORE_EXPECTED: 4}),
        ),
        # A CoT answer is a paragraph of analysis ending with its score.
        PromptStyle(
            "cot",
            help="our template, an analysis then 'Final score: x.y' (Table 3's grid)",
            max_new_tokens=1024,
            expected_completion_tokens=400,
            lone_number_line="last",
        ),
        # The authors' inference: greedy, MAX_NEW_TOKENS = 16 (MIS-RAFT/pipeline_inference.py); a score or
        # "The score prediction is: x.y".
        PromptStyle(
            PAPER_PROMPT_STYLE,
            help="the authors' MIS-RAFT protocol behind Table 4: a system message, then fixed sections",
            max_new_tokens=16,
            expected_completion_tokens=8,
            lone_number_line="first",
            readout_max_new_tokens=MappingProxyType({SCORE_EXPECTED: 4}),
        ),
    )
}
PROMPT_STYLES: tuple[str, ...] = tuple(PROMPT_STYLE_TABLE)


def prompt_style(name: str) -> PromptStyle:
    """The defaults of prompt style `name`; an unknown name is a ValueError listing the styles."""
    try:
        return PROMPT_STYLE_TABLE[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown prompt style {name!r}; expected one of {', '.join(PROMPT_STYLES)}") from None


N_VIDEOS = 996
# Bootstrap resamples behind the paper's 95% percentile CIs (Table 4 caption).
PAPER_BOOTSTRAP_RESAMPLES = 10_000
# The one default resample count of every entry point (CLI, Python API, default job, baselines, metric): the paper's.
DEFAULT_BOOTSTRAP = PAPER_BOOTSTRAP_RESAMPLES
# The index matrix and the replicates grow with resamples x videos; this cap keeps a full
# 996-video bootstrap under about 1 GiB (the paper uses 10,000 resamples).
MAX_BOOTSTRAP = 200_000
# How a bootstrap resamples (mis_icc_metric.resampling): "video" draws videos as if independent (the paper's
# protocol, which `reproduce` keeps); "clinician" draws clinicians with all their videos, the honest default of
# the toolkit's own outputs: 996 videos come from 78 clinicians, and a video CI is about 1.7x too narrow there.
RESAMPLE_UNITS: tuple[str, ...] = ("video", "clinician")
DEFAULT_RESAMPLE = "clinician"
PAPER_RESAMPLE = "video"
# The one mark every output of synthetic data carries (terminal lines, figure titles, leaderboard rows), defined
# here, in the ground layer, so the trainer's outputs and the build's figures use the same words as the CLI's.
SYNTHETIC_MARK = "SYNTHETIC"
SYNTHETIC_LINE = f"{SYNTHETIC_MARK} data: these numbers say nothing about any model on MIS-Bench."
# What every statistic about a judge is for (the paper's ethics statement): said once, by every output that has one.
RESEARCH_USE = (
    "for research on judges (how far a model's scores agree with the experts'), not for therapist supervision, "
    "training, hiring or patient-facing evaluation (the paper's ethics statement)"
)
# `mis-bench calibrate`'s choices and defaults (mis_icc_metric.calibration), here so the command line stays light.
CALIBRATION_METHODS: tuple[str, ...] = ("isotonic", "linear")
DEFAULT_CALIBRATION_METHOD = "isotonic"
DEFAULT_COVERAGE = 0.9
DEFAULT_FIT_SPLIT = "train"
DEFAULT_CALIBRATION_SPLIT = "validation"
# The one default level of every CI the toolkit reports (the paper's 95%).
DEFAULT_CONFIDENCE = 0.95
# The one default random seed of every entry point (the bootstrap's, the sampling's, the baselines' fits).
DEFAULT_SEED = 0


# One spelling, default and help per concept shared by several commands (tests/test_cli_options.py checks).
def bootstrap_option(
    *,
    minimum: int = 0,
    what: str = "bootstrap resamples for the ICC CIs",
    flag: str = "--bootstrap",
    default: int = DEFAULT_BOOTSTRAP,
    section: str = "main",
) -> dict[str, Any]:
    """`--bootstrap N`: the resample count, `DEFAULT_BOOTSTRAP` (the paper's 10,000) unless a command says why not."""
    text = (
        f"{what}, {minimum} to {MAX_BOOTSTRAP:,}"
        + (" (0: no CIs)" if minimum == 0 else "")
        + f" (default: {default:,}"
        + (", the paper's)" if default == PAPER_BOOTSTRAP_RESAMPLES else ")")
    )
    dest = flag.lstrip("-").replace("-", "_")
    return option(text, flag=flag, dest=dest, type=bounded_int(minimum, MAX_BOOTSTRAP), metavar="N", section=section)


def resample_option(*, default: str = DEFAULT_RESAMPLE, section: str = "main") -> dict[str, Any]:
    """`--resample video|clinician`: what one bootstrap draw resamples (every CI and paired test of the command)."""
    return option(
        "what each bootstrap resample draws: 'clinician' (all of a clinician's videos together: the clustered,"
        " honest CI) or 'video' (videos as if independent: the paper's protocol)"
        f" (default: {default})",
        flag="--resample",
        choices=RESAMPLE_UNITS,
        section=section,
    )


def seed_option(what: str = "bootstrap seed", *, section: str = "main") -> dict[str, Any]:
    """`--seed S`: the one random seed of a command (what it seeds is said per command)."""
    return option(
        f"{what} (default: {DEFAULT_SEED})", flag="--seed", type=non_negative_int, metavar="S", section=section
    )


N_FULLY_RATED = 625
MEAN_DURATION_SECONDS = 62.42

DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("verbal_fluency", "Verbal Fluency", "VF"),
    Dimension("hope_and_pe", "Hope & Positive Expectations", "H/PE"),
    Dimension("persuasiveness", "Persuasiveness", "Per."),
    Dimension("emotional_expression", "Emotional Expression", "Emo."),
    Dimension("wau", "Warmth, Acceptance, & Understanding", "WAU"),
    Dimension("empathy", "Empathy", "Emp."),
    Dimension("abc", "Alliance Bond Capacity", "ABC"),
    Dimension("arrr", "Alliance Rupture-Repair Responsiveness", "ARRR"),
)
"""The eight FIS dimensions in the paper's order: key, name and the paper's abbreviation."""
DIMENSION_KEYS: tuple[str, ...] = tuple(d.key for d in DIMENSIONS)
"""The eight dimension keys (`verbal_fluency`, ..., `arrr`), the column names of every file."""
DIMENSION_BY_KEY: dict[str, Dimension] = {d.key: d for d in DIMENSIONS}
"""Each dimension by its key."""
# The paper's abbreviations spelt out: the legend under every table that uses them (reports, leaderboard).
ABBREVIATION_NAMES: dict[str, str] = {d.abbreviation: d.name for d in DIMENSIONS}
ABBREVIATION_LEGEND: str = "Dimensions: " + "; ".join(f"{d.abbreviation} = {d.name}" for d in DIMENSIONS) + "."

# Table 2 (percent in the paper; fractions here).
HUMAN_CEILING: dict[str, Ceiling] = {
    "verbal_fluency": Ceiling(0.64, 0.61, 0.68),
    "hope_and_pe": Ceiling(0.53, 0.49, 0.58),
    "persuasiveness": Ceiling(0.54, 0.49, 0.58),
    "emotional_expression": Ceiling(0.51, 0.46, 0.55),
    "wau": Ceiling(0.50, 0.45, 0.54),
    "empathy": Ceiling(0.43, 0.38, 0.48),
    "abc": Ceiling(0.51, 0.46, 0.55),
    "arrr": Ceiling(0.53, 0.48, 0.57),
}
"""Table 2: the human ceiling per dimension key, the raters' single-rater ICC(3,1) and its CI, as fractions."""
# The mean of the eight, the ceiling's counterpart of a system's mean ICC.
HUMAN_CEILING_MEAN: float = sum(c.icc for c in HUMAN_CEILING.values()) / len(HUMAN_CEILING)

# Table 6.
GOLD_STATS: dict[str, GoldStats] = {
    "verbal_fluency": GoldStats(3.658, 0.493, 1.0, 5.0),
    "hope_and_pe": GoldStats(3.420, 0.394, 2.0, 4.3),
    "persuasiveness": GoldStats(3.613, 0.454, 1.3, 5.0),
    "emotional_expression": GoldStats(3.627, 0.426, 2.0, 5.0),
    "wau": GoldStats(3.607, 0.443, 1.3, 5.0),
    "empathy": GoldStats(3.534, 0.414, 2.2, 4.7),
    "abc": GoldStats(3.564, 0.478, 1.3, 5.0),
    "arrr": GoldStats(3.433, 0.585, 1.0, 5.0),
}
"""Table 6: the gold scores' mean, SD, minimum and maximum per dimension key."""

RUBRIC: dict[str, Rubric] = {
    "verbal_fluency": Rubric(
        criterion=(
            "Verbal Fluency. This item is a rating of the extent to which the participant is verbally capable and "
            "at-ease in communicating. The response is delivered in a relaxed manner and without significant signs of "
            "anxiety (e.g., broken speech, extended and awkward pauses, and clarity in communication). However, the "
            "content of what is said is not rated, but rather how it is spoken."
        ),
        scores=(
            "The participant has great difficulty verbalizing a response (e.g., obviously anxious, sounds shaky "
            "or timid), reflecting a clear avoidance or anxiety. The participant may lack confidence and is "
            "clearly uncertain or even difficult to follow.",
            "Fluency is disrupted by the participant’s anxiety and avoidance of verbal expression. The respondent "
            "may be obviously anxious and struggling to formulate a response. At times, the communication may be "
            "choppy, even halting. [Note: In some rare instances a response could represent an avoidance of the "
            "interpersonal situation through anxious rambling. It would need to be clear that the participant’s "
            "ramblings are the result of anxiety over communicating with another].",
            "A moderate level of verbal fluency indicates that the participant’s response is conversational and "
            "mostly easy to follow.",
            "The response is fluent, and there is little that is difficult to follow.",
            "The participant is at great ease and communicates ideas with no anxiety, reflecting a desire to "
            '"approach" the other. The verbal quality of the response may have a "melodic," rhythmical quality '
            "and is easy to follow; the response is fluent.",
        ),
    ),
    "hope_and_pe": Rubric(
        criterion=(
            "Hope & Positive Expectations. This item rates expressions of hope, optimism, and positive expectations "
            "for change. Staats (1989, 2001) defines hope as the interaction between wishes and expectations. The "
            "interpersonal skills needed for hope involve facilitating a) personal agency and b) building the "
            "pathways needed for attaining desired goals and expectations (Steed, 2002). Hope is related to "
            "persuasiveness and collaboration in the sense that hope and positive expectations are often built "
            "through offering a rationale, friendliness, and enthusiasm. As defined here, hope focuses more on "
            "building client agency for actions that will facilitate meeting the client’s goals whereas persuasion is "
            "based more on a plausible explanation (which may or may not include hope)."
        ),
        scores=(
            "The participant’s response is hopeless or is even pessimistic. For example, the participant may "
            "address only issues or concerns beyond the control of the other or subtly suggests that the other "
            "cannot change or improve his/her problems.",
            "The participant responds with some hopelessness, including subtle expressions of feeling unable to "
            "help the client.",
            "The response is ordinary OR the optimism of the response is not discernible. There may be some "
            "hopefulness expressed, but with little confidence or reason for being hopeful.",
            "A general sense of optimism about the client’s situation is detected. Specifically, the "
            "participant’s response is directed toward building the client’s agency OR facilitating the building "
            "of pathways to meet the client’s goals.",
            "The participant’s response expresses clear hope about the client’s future and/or positive "
            "expectations about therapeutic work. In addition, for a response to be coded as a “5” there needs to "
            "be an allusion to building the client’s agency as well as how the client might participate or do "
            "something that will help move toward his/her desired goals (i.e., pathways).",
        ),
    ),
    "persuasiveness": Rubric(
        criterion=(
            "Persuasiveness. Persuasiveness is the capacity to induce the other to accept a view that may be "
            "different from his or her own view. It involves that ability to convey a clear, organized understanding "
            "about the meaning of the other’s source of distress. Persuasiveness implies an ability to communicate "
            "what Jerome Frank called a “believable myth.” This capacity implies that the persuasive therapist must "
            "be convincing in communicating this belief-system. Rating Notes: For rating purposes, the response does "
            "not necessarily need to convey an entire world view, but a point of view that is implied to be at least "
            "slightly different from the client in the video clip. High ratings require that the participant provide "
            "a clear belief in a point of view or rationale. It is necessary that the rationale be relevant to the "
            "other’s problems and at least somewhat novel to the other’s experience. For this item, the rater should "
            "disregard personal beliefs about the validity of the participant’s rationale, but instead rate the "
            'extent to which the participant might persuade another (i.e., ability to "sell" their rationale).'
        ),
        scores=(
            "The participant’s response is unorganized, incoherent, and difficult to follow. The participant may "
            "also not know what to say.",
            "The participant is unpersuasive. Unpersuasive responses may be characterized by either",
            "The participant’s response conveys little sense of persuasiveness.",
            "The participant speaks persuasively. The rationale may be more implicit and it is even possible that "
            "the rationale, though present, may be unclear, superficial, or marginally relevant to the other’s "
            "problems.",
            "The participant is highly persuasive. Persuasive persons may speak with great confidence, certainty, "
            "and authority. Advice may or may not be given, but the participant must offer some rationale or "
            "re-framing of the other’s experience.",
        ),
    ),
    "emotional_expression": Rubric(
        criterion=(
            "Emotional Expression. This item rates the energy and emotion in the participant’s response. This item "
            "rates the extent to which the participant’s response is delivered with effective expressions of emotion."
        ),
        scores=(
            "The participant speaks with little or no affect and may be dull or boring (e.g., speaking in a near "
            "monotone voice and without intensity).",
            "The participant may display some sense of interest or curiosity, but the response is not emotionally "
            "engaging. Prosody is somewhat less than typical to casual conversation.",
            "The participant has prosody, but it is the amount of emotion that one might find in ordinary "
            "conversation.",
            "The participant is emotionally expressive at a moderate level. There is more emotion than found in "
            "ordinary speech, but it is not as focused in its delivery as the maximum rating of 5.",
            "There is affect and prosody in the participant’s voice. The response is delivered in a highly "
            "emotional and engaging manner. The primary criterion is that the vocal expression conveys emotion. "
            "There may be a more focused delivery of emotional intonations to emphasize meanings that influence "
            "other processes (e.g. persuasion). The participant may even be somewhat provocative or challenging "
            'in delivering an emotion-based response toward the client in the video clip. However, a "5" should '
            'not be rated if the affect is primarily demeaning or hostile toward the other (in which case a "3" '
            "would be the maximum rating possible).",
        ),
    ),
    "wau": Rubric(
        criterion=(
            "Warmth, Acceptance, & Understanding. This item is a rating of the ability of the participant to care for "
            "and accept the other. Therapist behaviors/attitudes that might indicate an absence of acceptance and "
            "understanding include: a judgmental attitude, condescension, rudeness, disapproval, guilt-induction, "
            "exasperation, or annoyance. Often it will be necessary to avoid rating what the participant is doing "
            "(e.g., giving advice), but rate how it is being done. Note that accepting does not necessarily mean "
            "approval, but rather a caring attitude and determination to help the other."
        ),
        scores=(
            "The participant has an obvious lack of respect, acceptance, or warmth for the other (e.g., clearly "
            "pejorative comments, judgmental attitude, condescension, disapproval, guilt induction, blaming the "
            "other).",
            "The participant conveys a subtle lack of respect, acceptance, or concern of the other (e.g., "
            "sarcasm, exasperation, annoyance).",
            'There is an "ordinary" level of courtesy and warmth in the response OR the participant’s opinion of '
            "the other may not be clearly discernable from the response.",
            "The participant’s response is genuinely nonjudgmental and gently explores the other’s thoughts, "
            "feelings, alternatives for dealing with future situations, etc. The participant appears concerned "
            "for and respectful of the client.",
            "The participant expresses clear and obvious warmth, concern and acceptance. The participant may, for "
            "example, make a compassionate attempt to relate to the other’s experience.",
        ),
    ),
    "empathy": Rubric(
        criterion=(
            "Empathy. The capacity to respond with an expressed understanding of the subjective experience of the "
            "client. The response must also convey an accurate understanding of the thoughts and emotions expressed "
            "in the video clip. Therefore, it is especially important that the rater have an accurate understanding "
            "of the client’s experiences in the video clips."
        ),
        scores=(
            "Participant clearly distorts the other’s experience. That is, the participant misidentifies a "
            "significant component of the other’s complaints, beliefs, emotions, etc. Give a rating of 1 if the "
            "response indicates a clear disregard of the other’s experience.",
            "Participant does not communicate an awareness or understanding of the other’s experience, and/or "
            "there are minor distortions of the other’s experience. Some aspects of the participant’s response "
            "may be irrelevant to the other’s concerns (when clearly not an attempt to change the other’s focus).",
            "Participant is generally accurate about the other’s experience but only perceives the more obvious "
            "aspects of the other’s experience or concerns.",
            "Participant comments accurately on the other’s experience but not to the extent required to receive "
            'a “5" rating. The distinction between the 4 and 5 ratings are matters of intensity.',
            "Participant alludes to the client’s experience so that it is clear that he/she has not only "
            "listened, but obtained an exceptional comprehension of what the other is experiencing. In order to "
            'receive a "5" the participant must infer something about the other’s experience that is not '
            "explicitly stated by the other but is clearly identifiable in the client’s nonverbal expression.",
        ),
    ),
    "abc": Rubric(
        criterion=(
            "Alliance Bond Capacity. This item rates the participant’s capacity to provide a collaborative "
            "environment, one in which there is recognition of the need to work with the client jointly on problems."
        ),
        scores=(
            "The participant actively undermines a mutual collaboration. The participant may respond in a way "
            'that is over-involved or reactive (e.g., moralistic lecturing, "preaching" to the other, assuming '
            "all responsibility). The rupture may also involve withdrawal or under-involvement in the "
            "participant’s response (e.g., putting all the responsibility for change on the other).",
            "The participant may slightly undermine the building of a collaborative atmosphere, although it may "
            "be unintentional or superficial.",
            "The participant neither undermines nor attempts to enhance a collaborative effort.",
            "Some effort to collaborate is made but not as strong as a “5” (e.g., subtle invitations to engage in "
            "working with the client).",
            "Specific actions on the part of the participant help create a collaborative atmosphere. There should "
            'be a sense that the participant is attempting to work with the other to create a "we-ness" that is '
            "implied in the participant’s behavior (e.g., participant checks with the other by asking questions "
            'about the "fit" of interpretations, conclusions, goals, etc.).',
        ),
    ),
    "arrr": Rubric(
        criterion=(
            "Alliance Rupture-Repair Responsiveness. Background: Each client in video clips is expressing an "
            "interpersonal issue that involves the patient-therapist relationship. Each video clip places the "
            "participant in the middle of alliance rupture episodes. Further, these rupture episodes take place at "
            "different locations within the interpersonal circle, which requires interpersonal flexibility for the "
            "therapist. The interpersonal problem with the client-therapist relationship threatens the development of "
            "the alliance. This item rates the extent to which the therapist appears responsive to the interpersonal "
            "issue. In some cases, the problem is clearly stated as when Suzie angrily berates the therapist for "
            "being ineffective. In other cases, the problem is more implicit such as when Lauren idealizes the "
            "therapist to the extent of leaving herself overly vulnerable to disappointment."
        ),
        scores=(
            "Participant reacts to the interpersonal tension in a way that is nonproductive or in a way that "
            "likely exacerbates the rupture (e.g., responding negatively to a hostile client; responding to a "
            "controlling client with counter-control). Low scores also may be given when the participant fails to "
            "respond to the interpersonal issue involved in a way that indicates that the participant is avoiding "
            "the interpersonal issue or the relationship altogether.",
            "Participant addresses an issue to discuss that it is tangentially related to the interpersonal issue "
            "presented, but directs the discussion away from the present relationship situation.",
            "There may be more casual recognition of the interpersonal situation, but the response does not draw "
            "for further discussion of the issue or the relationship.",
            "Participant recognizes the other’s interpersonal issue, and may discuss this further in more general "
            "terms (or discuss some secondary element of the other’s issue or the relationship).",
            "Participant makes attempts to repair the interpersonal issue by engaging the client in a direct "
            "discussion of the immediate moment-to-moment interaction. This may include how specific relational "
            "messages are being expressed by the client in the video clip. Optimal responses will include "
            "attempts to not only allude to the interpersonal tension, but make some attempt to repair that "
            "interpersonal issue.",
        ),
    ),
}
"""The paper's rubric (Table 5) per dimension key: the criterion and the anchor text of each score 1-5."""


def resolve_dimension(label: str) -> str:
    """Map a key, display name or paper abbreviation (case-insensitive) to the key."""
    wanted = label.strip().casefold()
    for dim in DIMENSIONS:
        if wanted in (dim.key.casefold(), dim.name.casefold(), dim.abbreviation.casefold()):
            return dim.key
    raise KeyError(
        f"unknown FIS dimension {label!r}; expected one of {', '.join(DIMENSION_KEYS)} "
        "(or their display names / paper abbreviations)"
    )

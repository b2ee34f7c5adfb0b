"""The benchmark's domain facts, in one place: dimensions, rubric (paper Table 5),
human ceiling (Table 2) and gold-score statistics (Table 6).

Every other module imports these; nothing else spells a dimension key or a
paper number. The rubric's texts are package data (`paper_rubric.json`, read once), copied
verbatim from the paper, including the one line the paper itself truncates (Persuasiveness, score 2).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from types import MappingProxyType


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
# The toolkit's own prompt asking for the score alone (the trainer words it as a chat; `mis_bench_dataset.setting`).
DIRECT_PROMPT_STYLE = "direct"
COT_PROMPT_STYLE = "cot"
ZERO_SHOT_PROMPT_STYLES: tuple[str, ...] = (DIRECT_PROMPT_STYLE, COT_PROMPT_STYLE)
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
            DIRECT_PROMPT_STYLE,
            help="our template, the score only (Table 3's grid)",
            max_new_tokens=32,
            expected_completion_tokens=8,
            lone_number_line="first",
            # An expected-score request reads the score's first tokens: "3", ".", "5" and the end of sequence.
            readout_max_new_tokens=MappingProxyType({SCORE_EXPECTED: 4}),
        ),
        # A CoT answer is a paragraph of analysis ending with its score.
        PromptStyle(
            COT_PROMPT_STYLE,
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


# Earlier names of a prompt style, accepted wherever a style is read and recorded under the style's name: the
# trainer called its own score-only prompt `toolkit` before the harness and the trainer shared one vocabulary.
PROMPT_STYLE_ALIASES: dict[str, str] = {"toolkit": DIRECT_PROMPT_STYLE}


def canonical_prompt_style(name: str) -> str:
    """The style `name` stands for (`toolkit` -> `direct`); an unknown name is a ValueError listing the styles."""
    style = PROMPT_STYLE_ALIASES.get(name, name) if isinstance(name, str) else name
    if style not in PROMPT_STYLE_TABLE:
        known = ", ".join((*PROMPT_STYLES, *PROMPT_STYLE_ALIASES))
        raise ValueError(f"unknown prompt style {name!r}; expected one of {known}")
    return style


def prompt_style(name: str) -> PromptStyle:
    """The defaults of prompt style `name` (an alias reads as its style); an unknown name is a ValueError listing
    the styles."""
    return PROMPT_STYLE_TABLE[canonical_prompt_style(name)]


N_VIDEOS = 996
# The clinicians those videos come from: the most a plan (`mis-bench plan --clinicians`) may ask for by default.
N_CLINICIANS = 78
# The videos per clinician a planned study is assumed to have (`mis-bench plan --videos-per-clinician`): the
# benchmark's 996 / 78 = 12.8, not a pilot's own ratio (a 10% pilot has about 1.8).
DEFAULT_VIDEOS_PER_CLINICIAN = N_VIDEOS / N_CLINICIANS
# Bootstrap resamples behind the paper's 95% percentile CIs (Table 4 caption); the toolkit's default count
# (`toolkit.defaults.DEFAULT_BOOTSTRAP`) is this number.
PAPER_BOOTSTRAP_RESAMPLES = 10_000


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
# The paper's abbreviations spelt out (the legend under every table that uses them: `wording.ABBREVIATION_LEGEND`).
ABBREVIATION_NAMES: dict[str, str] = {d.abbreviation: d.name for d in DIMENSIONS}

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

RUBRIC_FILE = "paper_rubric.json"  # package data beside this module (setup.cfg: options.package_data)


@functools.cache
def load_rubric() -> Mapping[str, Rubric]:
    """Table 5 as the package ships it (`paper_rubric.json`), read once per process, in `DIMENSION_KEYS` order."""
    data = json.loads(resources.files(__package__).joinpath(RUBRIC_FILE).read_text(encoding="utf-8"))
    table = data["dimensions"]
    if tuple(table) != DIMENSION_KEYS:
        raise ValueError(f"{RUBRIC_FILE} holds dimensions {list(table)}, not {list(DIMENSION_KEYS)}")
    return MappingProxyType(
        {key: Rubric(criterion=entry["criterion"], scores=tuple(entry["scores"])) for key, entry in table.items()}
    )


class _RubricTable(Mapping[str, Rubric]):
    """`RUBRIC[key]`: the rubric read from the package data on first use (`mis-bench --help` reads none of it)."""

    def __getitem__(self, key: str) -> Rubric:
        return load_rubric()[key]

    def __iter__(self):
        return iter(load_rubric())

    def __len__(self) -> int:
        return len(load_rubric())

    def __repr__(self) -> str:
        return f"RUBRIC({dict(load_rubric())!r})"


# Paper Table 5: each dimension's criterion and five score descriptions, verbatim.
RUBRIC: Mapping[str, Rubric] = _RubricTable()
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

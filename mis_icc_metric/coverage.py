"""The coverage rule: which (video, dimension) pairs are evaluated, and what that covers.

A prediction file need not ask every pair of the references: the authors' Table 4 files
answer 797 of the 7,968 gold pairs (one filled cell per pair they asked). So:

- the pairs evaluated are the ones the predictions name (`missing="not-asked"`, the
  default); a named pair with an empty or null prediction is asked and unparsed; a pair
  absent from the predictions was not asked and is not evaluated;
- parse rates are over the asked pairs;
- the overall score (the mean of a video's eight predicted scores vs the mean of its eight
  gold scores, paper Table 3) uses only videos with all eight dimensions asked; when no
  video has them, there is no overall score and `overall_reason` says why.

`missing="unparsed"` (every gold pair is asked; an absent one counts as unparsed) and
`missing="error"` (an absent gold pair is an error) keep the stricter readings. A
prediction for a pair without gold is always an error (`scoring.align`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from mis_bench_dataset.dimensions import DIMENSION_KEYS
from mis_bench_dataset.toolkit.errors import DataError

Key = tuple[str, str]
NOT_ASKED = "not-asked"
MISSING_POLICIES: tuple[str, ...] = (NOT_ASKED, "unparsed", "error")
DEFAULT_MISSING = NOT_ASKED


@dataclass(frozen=True)
class Coverage:
    """How much of the references a set of predictions asks."""

    policy: str
    n_gold_pairs: int
    n_asked_pairs: int
    n_gold_videos: int
    n_asked_videos: int
    n_fully_asked_videos: int  # videos with all eight dimensions asked (and gold)
    max_dimensions_per_video: int
    asked_per_dimension: dict[str, int]

    def to_dict(self) -> dict:
        return {
            "policy": self.policy,
            "n_gold_pairs": self.n_gold_pairs,
            "n_asked_pairs": self.n_asked_pairs,
            "n_gold_videos": self.n_gold_videos,
            "n_asked_videos": self.n_asked_videos,
            "n_fully_asked_videos": self.n_fully_asked_videos,
            "max_dimensions_per_video": self.max_dimensions_per_video,
            "asked_per_dimension": dict(self.asked_per_dimension),
            "sentence": self.sentence(),
        }

    def sentence(self) -> str:
        """`797 of 7,968 gold pairs predicted (589 of 996 videos, 0 with all eight dimensions)`."""
        text = (
            f"{self.n_asked_pairs:,} of {self.n_gold_pairs:,} gold pairs predicted "
            f"({self.n_asked_videos:,} of {self.n_gold_videos:,} videos, "
            f"{self.n_fully_asked_videos:,} with all eight dimensions)"
        )
        if self.policy == NOT_ASKED and self.n_asked_pairs < self.n_gold_pairs:
            text += "; the other pairs were not asked and are not evaluated"
        elif self.policy == "unparsed" and self.n_asked_pairs < self.n_gold_pairs:
            text += "; the other gold pairs count as unparsed"
        return text


def coverage_of(asked: set[Key] | Mapping[Key, object], references: Mapping[Key, object], policy: str) -> Coverage:
    """The coverage of `asked` (pairs, or a predictions mapping) over the gold pairs of `references`."""
    gold = set(references)
    hit = gold.intersection(asked)
    per_video: dict[str, int] = {}
    for video, _ in hit:
        per_video[video] = per_video.get(video, 0) + 1
    return Coverage(
        policy=policy,
        n_gold_pairs=len(gold),
        n_asked_pairs=len(hit),
        n_gold_videos=len({video for video, _ in gold}),
        n_asked_videos=len(per_video),
        n_fully_asked_videos=sum(n == len(DIMENSION_KEYS) for n in per_video.values()),
        max_dimensions_per_video=max(per_video.values(), default=0),
        asked_per_dimension={key: sum(1 for _, d in hit if d == key) for key in DIMENSION_KEYS},
    )


def check_policy(missing: str) -> None:
    if missing not in MISSING_POLICIES:
        raise DataError(f"missing must be one of {', '.join(map(repr, MISSING_POLICIES))}, got {missing!r}")


def evaluated_references(
    predictions: Mapping[Key, object], references: Mapping[Key, object], missing: str = DEFAULT_MISSING
) -> tuple[dict[Key, object], str, Coverage]:
    """(references to evaluate, the `missing` rule `scoring.align` applies to them, the coverage).

    Under "not-asked" the references are cut to the pairs the predictions name, so every
    remaining gold pair has a prediction entry; the other policies keep every gold pair.
    """
    check_policy(missing)
    if not isinstance(references, Mapping) or not isinstance(predictions, Mapping):
        raise TypeError("predictions and references must be mappings (video_id, dimension) -> score")
    _check_reference_keys(references)
    coverage = coverage_of(predictions, references, missing)
    if missing != NOT_ASKED:
        return dict(references), missing, coverage
    if references and not predictions:
        raise DataError("no predictions: nothing to evaluate")
    if references and not coverage.n_asked_pairs:
        shown = ", ".join(repr(key) for key in sorted(predictions, key=str)[:5])
        raise DataError(f"{len(predictions)} prediction(s) have no reference (none names a gold pair), e.g. {shown}")
    return {key: value for key, value in references.items() if key in predictions}, "error", coverage


def _check_reference_keys(references: Mapping[Key, object]) -> None:
    """Every reference key is a (video, dimension key) pair, asked or not (a typo is never just 'not asked')."""
    for key in references:
        if not (isinstance(key, tuple) and len(key) == 2):
            raise DataError(f"reference key {key!r} is not a (video_id, dimension) pair")
        if key[1] not in DIMENSION_KEYS:
            raise DataError(
                f"reference {key!r}: unknown dimension key {key[1]!r}; expected one of {', '.join(DIMENSION_KEYS)}"
            )


def paired_references(
    predictions_a: Mapping[Key, object],
    predictions_b: Mapping[Key, object],
    references: Mapping[Key, object],
    missing: str = DEFAULT_MISSING,
) -> tuple[dict[Key, object], str, Coverage, Coverage]:
    """The references two systems are compared on: the pairs either asked ("not-asked"), each
    system's unasked pairs there counting as not parsed, so the pairs both parsed are compared."""
    check_policy(missing)
    _check_reference_keys(references)
    cover_a = coverage_of(predictions_a, references, missing)
    cover_b = coverage_of(predictions_b, references, missing)
    if missing != NOT_ASKED:
        return dict(references), missing, cover_a, cover_b
    asked = set(predictions_a) | set(predictions_b)
    return {k: v for k, v in references.items() if k in asked}, "unparsed", cover_a, cover_b


def overall_reason(dimensions: list[str], n_fully_asked: int, max_per_video: int, policy: str) -> str | None:
    """Why there is no overall score (None when some video has all eight dimensions evaluated)."""
    if n_fully_asked:
        return None
    absent = [key for key in DIMENSION_KEYS if key not in dimensions]
    if absent:
        return (
            f"no overall score: the evaluated pairs have no {', '.join(absent)} at all, and the overall score "
            "averages a video's eight dimensions"
        )
    what = "asked" if policy == NOT_ASKED else "with gold"
    return (
        f"no overall score: no video has all eight dimensions {what} (at most {max_per_video} per video); "
        "the overall score averages a video's eight dimensions"
    )

"""One identity per entry, and only entries that answer the whole split are ranked.

Submissions are screened in the order the board received them (`requests.Request`; ties by file name):

- names: NFKC-normalised and compared with look-alikes and case folded (`text_safety.name_key`); a name
  with invisible or format characters (U+200B, U+2060, bidi marks, ...) is refused;
- `baseline/*` names and the floor role are the toolkit's own baselines': only the operator's files
  (account None) or `trusted_accounts` with the `baseline` backend may use them;
- a name already on the board is refused unless it is its submitter's update (the same account); on a
  local folder every file is the operator's, so the same name in the same setting is one entry;
- identical predictions under two names: the later is flagged as a duplicate, the earlier keeps the rank;
- near-copies: predictions that, in every dimension, correlate with an earlier ranked entry's at
  `NEAR_COPY_CORRELATION` or beyond (an affine copy: a shifted or rescaled one, or one with a little noise added;
  ICC(3,1) ignores a constant offset, so a shifted copy would tie its original) are listed unranked as a near-copy
  of that entry, unless they are its submitter's own update of it;
- coverage: an entry is ranked only when it answers every (video, dimension) pair of the split with a
  score; a parse failure is an unanswered pair, never dropped (a model must not choose which videos count);
- on a hidden-label board an account gets one ranked submission per day (`RANK_INTERVAL`);
- an account's later submission of the same entry (name and setting) supersedes its earlier one.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eval_scripts.formats.results import BASELINE_BACKEND, is_floor_baseline, options_label
from eval_scripts.leaderboard.received import Request
from mis_bench_dataset.toolkit.text_safety import invisible_characters, name_key, normal_name, safe_text

RESERVED_PREFIX = "baseline/"
# Pearson correlation, in every dimension, from which two entries' predictions are one entry's (near-)copy. Two
# different models of the same family agree far less (the authors' three Table 4 systems, pairwise per dimension:
# -0.14 to 0.80); rounding a rescaled copy to one decimal costs it less than 0.005.
NEAR_COPY_CORRELATION = 0.99
RANK_INTERVAL = _dt.timedelta(days=1)
_DAY = RANK_INTERVAL
_FAR = _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
_SHOWN_NAME = 120  # characters of a submitted name a reason repeats


@dataclass
class Candidate:
    """An accepted (valid) submission on its way to a rank."""

    file: str
    results: dict[str, Any]
    predictions: dict[tuple[str, str], float | None]
    request: Request
    key: str = field(init=False)

    def __post_init__(self) -> None:
        self.key = name_key(self.results["system"]["model"])

    @property
    def setting(self) -> tuple:
        s = self.results["setting"]
        # the run's options too (`3 samples`, `max-tokens 2`): a rerun with other options is another entry
        return (s["modality"], s["prompt_style"], s["few_shot_k"], s["input_source"], self.options)

    @property
    def options(self) -> str:
        """What tells this run from another of the same model and setting (`formats.results.options_label`)."""
        return safe_text(" · ".join(options_label(self.results["system"])), 500)

    @property
    def shown_name(self) -> str:
        return repr(safe_text(normal_name(self.results["system"]["model"]), _SHOWN_NAME))


@dataclass
class Screened:
    ranked: list[Candidate]  # to score and rank (floors included: scoring sets them apart)
    unranked: list[dict[str, Any]]
    rejected: list[dict[str, Any]]


def is_trusted(request: Request, trusted_accounts: Collection[str]) -> bool:
    return request.account is None or request.account in trusted_accounts


def _reserved_problem(sub: Candidate, trusted_accounts: Collection[str]) -> str | None:
    system = sub.results["system"]
    if not (sub.key.startswith(name_key(RESERVED_PREFIX)) or is_floor_baseline(system)):
        return None
    if is_trusted(sub.request, trusted_accounts) and system.get("backend") == BASELINE_BACKEND:
        return None
    return (
        f"the name {sub.shown_name} is reserved: `baseline/*` names and the floor role belong to the toolkit's "
        "own baselines, which the board's operator adds; choose another name"
    )


def _name_problems(order: list[Candidate], trusted_accounts: Collection[str]) -> dict[str, str]:
    """file -> why its name is refused, for the names that are."""
    problems: dict[str, str] = {}
    owners: dict[str, Candidate] = {}
    operator_settings: dict[tuple, Candidate] = {}
    for sub in order:
        invisible = invisible_characters(sub.results["system"]["model"])
        if invisible:
            problems[sub.file] = (
                f"the model name holds invisible or format characters ({', '.join(invisible[:5])}), which would "
                "let two names that look the same be two entries; remove them"
            )
            continue
        reserved = _reserved_problem(sub, trusted_accounts)
        if reserved:
            problems[sub.file] = reserved
            continue
        owner = owners.setdefault(sub.key, sub)
        account = sub.request.account
        if account is None and owner.request.account is None:
            owner = operator_settings.setdefault((sub.key, sub.setting), sub)
        elif account is not None and account == owner.request.account:
            owner = sub  # the same submitter's update
        if owner is not sub:
            problems[sub.file] = (
                f"the name {sub.shown_name} is already on the board ({safe_text(owner.file, 120)}, received "
                "earlier) and looks the same after normalising (case, look-alike letters, full-width forms); "
                "an entry may take a name only as its own submitter's update; choose another name"
            )
    return problems


def predictions_digest(predictions: Mapping[tuple[str, str], float | None]) -> str:
    """A hash of the predictions alone (not the name or the setting): equal digests are duplicates."""
    rows = sorted((video, dim, value) for (video, dim), value in predictions.items())
    return hashlib.sha256(json.dumps(rows).encode("utf-8")).hexdigest()


def _dimension_columns(
    predictions: Mapping[tuple[str, str], Any], keys: list[tuple[str, str]]
) -> dict[str, np.ndarray]:
    """dimension -> the predictions on `keys` of that dimension, in the keys' order (a fully answered entry)."""
    columns: dict[str, list[float]] = {}
    for key in keys:
        columns.setdefault(key[1], []).append(float(predictions[key]))
    return {dim: np.asarray(values) for dim, values in columns.items()}


def copy_correlation(first: Mapping[str, np.ndarray], second: Mapping[str, np.ndarray]) -> float:
    """The smallest per-dimension Pearson correlation of two entries' predictions (1.0 where both are constant on
    a dimension, 0.0 where one is): how nearly `second` is an affine copy of `first`."""
    lowest = 1.0
    for dim, a in first.items():
        b = second[dim]
        spread_a, spread_b = float(np.std(a)), float(np.std(b))
        if spread_a == 0.0 or spread_b == 0.0:
            lowest = min(lowest, 1.0 if spread_a == spread_b else 0.0)
            continue
        lowest = min(lowest, float(np.corrcoef(a, b)[0, 1]))
    return lowest


def _near_copy_of(sub: Candidate, kept: list[Candidate], columns: dict[str, dict[str, np.ndarray]]) -> Candidate | None:
    """The earlier ranked entry `sub` nearly copies (its own submitter's update of the same entry excepted; the
    floor baseline, constant by design, is never a copy of an entry)."""
    if is_floor_baseline(sub.results["system"]):
        return None
    for earlier in kept:
        update = sub.request.account == earlier.request.account and (sub.key, sub.setting) == (
            earlier.key,
            earlier.setting,
        )
        if not update and copy_correlation(columns[earlier.file], columns[sub.file]) >= NEAR_COPY_CORRELATION:
            return earlier
    return None


def answered(predictions: Mapping[tuple[str, str], Any], references: Mapping[tuple[str, str], Any]) -> int:
    """How many gold pairs the predictions answer with a score (a null is a parse failure: unanswered)."""
    return sum(predictions.get(key) is not None for key in references)


def unranked_entry(sub: Candidate, references: Mapping, reason: str, **extra: Any) -> dict[str, Any]:
    """An entry listed without a rank or any figure: who, what setting, its coverage and why."""
    system, setting = sub.results["system"], sub.results["setting"]
    n_answered = answered(sub.predictions, references)
    return {
        "file": safe_text(sub.file, 200),
        "model": safe_text(normal_name(system["model"])),
        "backend": safe_text(system["backend"]),
        "modality": setting["modality"],
        "prompt_style": setting["prompt_style"],
        "few_shot_k": setting["few_shot_k"],
        "input_source": safe_text(setting["input_source"]),
        "options": sub.options,
        **sub.request.to_dict(),
        "n_answered": n_answered,
        "n_pairs": len(references),
        "answered_rate": round(n_answered / len(references), 3) if references else None,
        "reason": reason,
        # Why pairs have no score, as the run recorded it (schema 1.1, checked to add up): null without.
        "outcomes": sub.results.get("outcomes"),
        "duplicate_of": None,
        "near_copy_of": None,
        **extra,
    }


def screen(
    candidates: list[Candidate],
    references: Mapping[tuple[str, str], Any],
    *,
    hidden: bool,
    trusted_accounts: Collection[str] = (),
) -> Screened:
    """Sort the accepted submissions into ranked candidates, unranked entries and refused names."""
    order = sorted(candidates, key=lambda s: (s.request.received_at, s.file))
    problems = _name_problems(order, trusted_accounts)
    rejected = [{"file": safe_text(s.file, 200), "reasons": [problems[s.file]]} for s in order if s.file in problems]
    unranked: list[dict[str, Any]] = []
    first_with: dict[str, Candidate] = {}
    last_counted: dict[str, _dt.datetime] = {}
    kept: list[Candidate] = []
    keys = sorted(references)
    columns: dict[str, dict[str, np.ndarray]] = {}
    for sub in (s for s in order if s.file not in problems):
        original = first_with.setdefault(predictions_digest(sub.predictions), sub)
        account = sub.request.account
        if original is not sub:
            reason = (
                f"the same predictions as {safe_text(original.file, 120)} ({original.shown_name}), received "
                "earlier: a duplicate; the earlier submission keeps the rank"
            )
            unranked.append(unranked_entry(sub, references, reason, duplicate_of=safe_text(original.file, 200)))
        elif answered(sub.predictions, references) < len(references):
            reason = (
                "does not answer the whole split: only entries with a score for every video and dimension are "
                "ranked (a parse failure counts as unanswered); answer every pair to be ranked"
            )
            unranked.append(unranked_entry(sub, references, reason))
        elif (
            hidden and account is not None and sub.request.received_at - last_counted.get(account, _FAR) < RANK_INTERVAL
        ):
            reason = f"the account {account!r} had a ranked submission less than a day earlier (one a day)"
            unranked.append(unranked_entry(sub, references, reason))
        elif (copied := _near_copy_of(sub, kept, _with_columns(columns, sub, keys))) is not None:
            reason = (
                f"a near-copy of {safe_text(copied.file, 120)} ({copied.shown_name}), received earlier: in every "
                f"dimension its predictions correlate with that entry's at {NEAR_COPY_CORRELATION} or more (a shifted,"
                " rescaled or slightly noised copy; ICC(3,1) ignores a constant offset); the earlier entry keeps the "
                "rank"
            )
            unranked.append(unranked_entry(sub, references, reason, near_copy_of=safe_text(copied.file, 200)))
        else:
            if account is not None:
                last_counted[account] = sub.request.received_at
            kept.append(sub)
    return Screened(_latest_per_entry(kept, references, unranked), unranked, rejected)


def _with_columns(columns: dict[str, dict[str, np.ndarray]], sub: Candidate, keys: list) -> dict:
    """`columns` with `sub`'s per-dimension predictions added (each fully answered entry's, built once)."""
    columns.setdefault(sub.file, _dimension_columns(sub.predictions, keys))
    return columns


def _latest_per_entry(kept: list[Candidate], references: Mapping, unranked: list[dict[str, Any]]) -> list[Candidate]:
    """An account's later submission of one entry (name and setting) supersedes its earlier ones."""
    latest: dict[tuple, Candidate] = {}
    for sub in kept:  # in received order
        if sub.request.account is not None:
            latest[(sub.request.account, sub.key, sub.setting)] = sub
    ranked = []
    for sub in kept:
        newer = latest.get((sub.request.account, sub.key, sub.setting), sub)
        if newer is sub:
            ranked.append(sub)
        else:
            reason = f"superseded by {safe_text(newer.file, 120)}, its submitter's later submission of this entry"
            unranked.append(unranked_entry(sub, references, reason))
    return ranked

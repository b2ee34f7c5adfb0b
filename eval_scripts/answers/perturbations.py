"""Perturbations: documented, seeded changes to a judge's input that should not change its score.

Two kinds. A *transcript* perturbation rewrites the therapist's transcript (so it applies to every judge that
reads transcripts, the text baselines included); a *prompt* perturbation rewrites the request around it (the
rubric's wording or order, the instruction, where the system message goes), so it applies to model judges only.

Every random choice is drawn from ``numpy.random.default_rng([seed, <the video id's sha256>])``: a video's
perturbed transcript depends only on the seed, the video and (for `add-fillers`) the corpus rate, never on the
row order or on which other rows are run, so the same seed gives byte-identical prompts.

The two rubric paraphrases (`templates/paraphrases/rubric_a.json`, `rubric_b.json`) were written for the toolkit
(not the authors' wording) and are pinned by sha256 (`PARAPHRASE_SHA256`): a changed file is refused, as a changed
template would change every cache key of a run.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache
from typing import TYPE_CHECKING

from eval_scripts.answers.prompts import TEMPLATE_DIR, Prompt
from mis_bench_dataset.dimensions import RUBRIC, SCORE_LEVELS
from mis_bench_dataset.toolkit.errors import DataError, UsageError

if TYPE_CHECKING:
    import numpy as np

PARAPHRASE_DIR = TEMPLATE_DIR / "paraphrases"
PARAPHRASE_SHA256 = {
    "a": "a62d0f2de35e1ed99b7f7ca8418e9bf78deba8aca9128f469eda901192b4d0c4",
    "b": "b34f70496de52a84b737b2ccebab035033b0c9f00b1dfa48ff312f8ab8173e27",
}
DEFAULT_PERTURB_SEED = 0
# Simulated recognition errors: the word error rate Miner et al. (npj Digital Medicine 2020) measured for
# psychotherapy speech, half deletions and half substitutions.
ASR_ERROR_RATE = 0.25
# Hesitation fillers and the two discourse fillers the transcripts use most (measured on the 996 real ones).
FILLER_WORDS = ("um", "uh", "hmm", "mm", "er", "erm", "ah", "uhm", "umm")
FILLER_PHRASES = ("you know", "i mean")
_FILLER_RE = re.compile(
    r"(?:,\s*)?\b(?:" + "|".join(p.replace(" ", r"\s+") for p in FILLER_PHRASES) + r"|"
    r"(?:" + "|".join(FILLER_WORDS) + r"))\b[,.]?",
    re.IGNORECASE,
)
_REPEAT_RE = re.compile(r"\b(\w+)(?:[\s,]+\1\b)+", re.IGNORECASE)  # "I I", "the, the": a repeated word
_FALSE_START_RE = re.compile(r"\b\w+-\s+(?=\w)")  # "wh- what": a cut-off word before the next
_WORD_RE = re.compile(r"\S+")
# Neutral padding in the therapist's register: what a therapist says that carries no skill on any dimension.
NEUTRAL_SENTENCES = (
    "Okay.",
    "So, let me just say that again.",
    "I'm listening.",
    "Let me take a moment here.",
    "Right, okay.",
    "I want to make sure I say this the way I mean it.",
    "Give me a second.",
    "So, yes.",
)
PAD_FRACTION = 0.5  # neutral words added, as a share of the transcript's own


@dataclass(frozen=True)
class Perturbation:
    """One named change, its kind and what it does (the harness page shows an example of each)."""

    name: str
    kind: str  # "transcript" | "prompt"
    description: str


PERTURBATIONS: dict[str, Perturbation] = {
    p.name: p
    for p in (
        Perturbation(
            "no-fillers",
            "transcript",
            "fillers (um, uh, hmm, you know, I mean, ...), repeated words and cut-off false starts removed",
        ),
        Perturbation(
            "add-fillers",
            "transcript",
            "fillers inserted between words at the corpus' own rate (fillers per word, measured on the run's "
            "transcripts), so the filler rate doubles",
        ),
        Perturbation(
            "asr-errors",
            "transcript",
            f"simulated recognition errors: each word dropped with probability {ASR_ERROR_RATE / 2:g} or replaced by "
            f"another word of the same transcript with probability {ASR_ERROR_RATE / 2:g} (word error rate "
            f"{ASR_ERROR_RATE:g})",
        ),
        Perturbation("first-half", "transcript", "only the first half of the transcript's words"),
        Perturbation(
            "padded",
            "transcript",
            f"neutral sentences of the therapist's register appended, {PAD_FRACTION:g} times the transcript's word "
            "count (the length changes, the content does not)",
        ),
        Perturbation(
            "rubric-paraphrase-a", "prompt", "the rubric (criterion and five levels) in the toolkit's paraphrase A"
        ),
        Perturbation(
            "rubric-paraphrase-b", "prompt", "the rubric (criterion and five levels) in the toolkit's paraphrase B"
        ),
        Perturbation("rubric-reversed", "prompt", "the five score levels listed from 5 down to 1"),
        Perturbation("instruction-reworded", "prompt", "the answer instruction said in other words"),
        Perturbation(
            "system-in-user",
            "prompt",
            "the system message moved to the start of the user turn (the `paper` style; the others have none)",
        ),
    )
}
TRANSCRIPT_PERTURBATIONS = tuple(n for n, p in PERTURBATIONS.items() if p.kind == "transcript")
"""The names of the perturbations that change a transcript (`perturb_transcripts`)."""
PROMPT_PERTURBATIONS = tuple(n for n, p in PERTURBATIONS.items() if p.kind == "prompt")
"""The names of the perturbations that change a rendered prompt (`perturb_prompt`)."""
PARAPHRASE_PERTURBATIONS = ("rubric-paraphrase-a", "rubric-paraphrase-b")
# The answer instructions of the templates and the protocol, and their rewording.
INSTRUCTION_REWORDING = {
    "Output only the numeric score and nothing else.": "Reply with the score alone: one number, no other text.",
    "Then give your score on the last line, in exactly this format:": (
        "End with one line holding your score, written exactly like this:"
    ),
    "Answer with a numerical score between 1 and 5 with one decimal place, and nothing else; base it on the "
    "score rubric.": "Give one number from 1 to 5 with one decimal place, based on the score rubric, and no other "
    "text.",
}


def parse_perturbations(text: str | Iterable[str], *, where: str = "--perturb") -> tuple[str, ...]:
    """Names from `a,b` (or a list), in the order given, each once; an unknown name is a one-line usage error."""
    names = [n.strip() for n in (text.split(",") if isinstance(text, str) else text) if n.strip()]
    if not names:
        raise UsageError("no perturbation named", where=where, hint=f"use one or more of {', '.join(PERTURBATIONS)}")
    unknown = [n for n in names if n not in PERTURBATIONS]
    if unknown:
        raise UsageError(
            f"unknown perturbation {unknown[0]!r}", where=where, hint=f"use one or more of {', '.join(PERTURBATIONS)}"
        )
    return tuple(dict.fromkeys(names))


def rng_for(seed: int, video_id: str) -> np.random.Generator:
    """The one random stream of a video under a seed: independent of row order and of the other rows."""
    import numpy as np

    digest = int.from_bytes(hashlib.sha256(video_id.encode("utf-8")).digest()[:8], "big")
    return np.random.default_rng([seed, digest])


def _tidy(text: str) -> str:
    text = re.sub(r"\s+([,.?!])", r"\1", text)
    text = re.sub(r"([,.?!])(?:\s*,)+", r"\1", text)
    text = re.sub(r"^[,\s]+", "", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def remove_fillers(text: str) -> str:
    """The transcript without fillers, repeated words and cut-off false starts."""
    text = _FILLER_RE.sub("", text)
    text = _FALSE_START_RE.sub("", text)
    text = _REPEAT_RE.sub(r"\1", text)
    return _tidy(text)


def count_fillers(text: str) -> int:
    return len(_FILLER_RE.findall(text))


def filler_rate(transcripts: Iterable[str]) -> float:
    """Fillers per word over a corpus (each transcript once): the rate `add-fillers` inserts at."""
    fillers = words = 0
    for text in transcripts:
        fillers += count_fillers(text)
        words += len(_WORD_RE.findall(text))
    return fillers / words if words else 0.0


def add_fillers(text: str, rate: float, rng: np.random.Generator) -> str:
    """A filler before each word with probability `rate` (the corpus' own rate), drawn from the filler list."""
    words = _WORD_RE.findall(text)
    inserted = rng.random(len(words)) < rate
    choices = rng.integers(0, 4, len(words))
    fillers = ("um,", "uh,", "you know,", "I mean,")
    return " ".join(
        f"{fillers[c]} {w}" if hit else w for w, hit, c in zip(words, inserted.tolist(), choices.tolist(), strict=True)
    )


def asr_errors(text: str, rate: float, rng: np.random.Generator) -> str:
    """Each word dropped with probability rate/2 or replaced by another word of the transcript with rate/2."""
    words = _WORD_RE.findall(text)
    if not words:
        return text
    draw = rng.random(len(words))
    substitutes = rng.integers(0, len(words), len(words))
    out = []
    for word, u, s in zip(words, draw.tolist(), substitutes.tolist(), strict=True):
        if u < rate / 2:
            continue
        out.append(words[s] if u < rate else word)
    return " ".join(out)


def first_half(text: str) -> str:
    words = _WORD_RE.findall(text)
    return " ".join(words[: max(1, (len(words) + 1) // 2)])


def pad_neutral(text: str, rng: np.random.Generator) -> str:
    """The transcript followed by neutral sentences worth `PAD_FRACTION` of its word count."""
    target = int(round(PAD_FRACTION * len(_WORD_RE.findall(text))))
    added: list[str] = []
    count = 0
    order = rng.integers(0, len(NEUTRAL_SENTENCES), max(1, target))
    for index in order.tolist():
        if count >= target:
            break
        added.append(NEUTRAL_SENTENCES[index])
        count += len(NEUTRAL_SENTENCES[index].split())
    return (text.rstrip() + " " + " ".join(added)).strip()


def perturb_transcript(name: str, text: str, video_id: str, *, seed: int, rate: float | None = None) -> str:
    """One transcript under a transcript perturbation (`rate`: the corpus' filler rate, for `add-fillers`)."""
    if name == "no-fillers":
        return remove_fillers(text)
    if name == "first-half":
        return first_half(text)
    rng = rng_for(seed, video_id)
    if name == "add-fillers":
        if rate is None:
            raise ValueError("add-fillers needs the corpus' filler rate")
        return add_fillers(text, rate, rng)
    if name == "asr-errors":
        return asr_errors(text, ASR_ERROR_RATE, rng)
    if name == "padded":
        return pad_neutral(text, rng)
    raise ValueError(f"{name!r} is not a transcript perturbation")


def perturb_transcripts(
    name: str, transcripts: Mapping[str, str], *, seed: int = DEFAULT_PERTURB_SEED
) -> tuple[dict[str, str], dict]:
    """video_id -> perturbed transcript, and the record of what was done (the measured filler rate included)."""
    rate = filler_rate(transcripts.values()) if name == "add-fillers" else None
    changed = {v: perturb_transcript(name, t, v, seed=seed, rate=rate) for v, t in transcripts.items()}
    return changed, perturbation_record(name, seed, filler_rate=rate)


def perturbation_record(name: str, seed: int, **extra) -> dict:
    """What a perturbed arm records (results, cache keys): name, kind, seed, what it does, and its inputs."""
    p = PERTURBATIONS[name]
    record = {"name": name, "kind": p.kind, "seed": seed, "description": p.description}
    if name in PARAPHRASE_PERTURBATIONS:
        record["paraphrase_sha256"] = PARAPHRASE_SHA256[name[-1]]
    record.update({k: v for k, v in extra.items() if v is not None})
    return record


# ------------------------------------------------------------------------------------------------ prompts


@cache
def load_paraphrase(variant: str) -> dict[str, dict]:
    """Paraphrase `variant` ("a" | "b"), refused unless its bytes are the pinned ones."""
    path = PARAPHRASE_DIR / f"rubric_{variant}.json"
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != PARAPHRASE_SHA256[variant]:
        raise DataError(
            f"rubric paraphrase {variant} has sha256 {digest}, not the pinned {PARAPHRASE_SHA256[variant]}",
            where=str(path),
            hint="restore the file (a changed paraphrase is a new perturbation: give it a new name and hash)",
        )
    return json.loads(data)


def _level_blocks(dimension: str) -> list[tuple[str, list[str]]]:
    """The rubric's level block as each prompt style writes it, with its lines."""
    rubric = RUBRIC[dimension]
    return [(rubric.level_lines(sep), rubric.level_lines(sep).split("\n")) for sep in (". ", ": ")]


def _replace_once(text: str, old: str, new: str, what: str) -> str:
    if old not in text:
        raise UsageError(
            f"the prompt does not contain {what}",
            where="--perturb",
            hint="this perturbation applies to the toolkit's own templates (direct, cot, paper)",
        )
    return text.replace(old, new, 1)


def _paraphrased(text: str, dimension: str, variant: str) -> str:
    rubric, para = RUBRIC[dimension], load_paraphrase(variant)[dimension]
    text = _replace_once(text, rubric.criterion, para["criterion"], "the rubric's criterion")
    for level, new in zip(SCORE_LEVELS, para["levels"], strict=True):
        text = _replace_once(text, rubric.description(level), new, f"the rubric's level {level}")
    return text


def _reversed_levels(text: str, dimension: str) -> str:
    for block, lines in _level_blocks(dimension):
        if block in text:
            return text.replace(block, "\n".join(reversed(lines)), 1)
    raise UsageError("the prompt does not contain the rubric's five levels", where="--perturb")


def _reworded(text: str) -> str:
    found = [old for old in INSTRUCTION_REWORDING if old in text]
    if not found:
        raise UsageError(
            "the prompt has no answer instruction the toolkit knows how to reword",
            where="--perturb",
            hint="instruction-reworded applies to the direct, cot and paper templates",
        )
    for old in found:
        text = text.replace(old, INSTRUCTION_REWORDING[old])
    return text


def perturb_prompt(name: str, prompt: Prompt) -> Prompt:
    """One request under a prompt perturbation (deterministic: no random draw)."""
    if name in PARAPHRASE_PERTURBATIONS:
        return replace(prompt, text=_paraphrased(prompt.text, prompt.dimension, name[-1]))
    if name == "rubric-reversed":
        return replace(prompt, text=_reversed_levels(prompt.text, prompt.dimension))
    if name == "instruction-reworded":
        return replace(prompt, text=_reworded(prompt.text))
    if name == "system-in-user":
        if prompt.system is None:
            raise UsageError(
                "system-in-user: these prompts have no system message",
                where="--perturb",
                hint="use it with --prompt paper (the style with a system message)",
            )
        return replace(prompt, text=f"{prompt.system}\n\n{prompt.text}", system=None)
    raise ValueError(f"{name!r} is not a prompt perturbation")


def perturb_rows(name: str, rows: Sequence[Mapping], *, seed: int) -> tuple[list[dict], dict]:
    """Scoring rows with each video's transcript perturbed (the rate measured on these rows' videos, each once)."""
    transcripts = {r["video_id"]: r.get("transcript") or "" for r in rows}
    changed, record = perturb_transcripts(name, transcripts, seed=seed)
    return [{**row, "transcript": changed[row["video_id"]]} for row in rows], record


__all__ = [
    "ASR_ERROR_RATE",
    "DEFAULT_PERTURB_SEED",
    "PARAPHRASE_SHA256",
    "PERTURBATIONS",
    "PROMPT_PERTURBATIONS",
    "TRANSCRIPT_PERTURBATIONS",
    "Perturbation",
    "filler_rate",
    "parse_perturbations",
    "perturb_prompt",
    "perturb_rows",
    "perturb_transcript",
    "perturb_transcripts",
    "perturbation_record",
    "remove_fillers",
]

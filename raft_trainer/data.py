"""Scoring rows -> chat messages -> token ids with the score's position, for training and inference.

One row of the `scoring` config (a video and a dimension) becomes: a system instruction, a user
prompt with the dimension's rubric (paper Table 5, from `mis_bench_dataset.dimensions.RUBRIC`) and
the transcript, and the assistant completion "The score prediction is: 3.4". Only the completion
is trained. Two prompt styles (`TRAINER_PROMPT_STYLES`): `direct` (ours: rubric, then transcript; `toolkit`, its
earlier name, is an alias)
and `paper` (the authors' MIS-RAFT protocol, `mis_bench_dataset.protocol`: Task Description,
Response to evaluate, Score Rubrics, "###Score:"); the completion is the same. The score's token
index is found here, where the completion is tokenized, by matching the gold score's own tokens
[digit, '.', digit] after the prompt; the collator turns it into the two positions whose logits
RAFT reads.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mis_bench_dataset.dimensions import (
    DIMENSION_BY_KEY,
    DIMENSION_KEYS,
    DIRECT_PROMPT_STYLE,
    PAPER_PROMPT_STYLE,
    PROMPT_STYLE_ALIASES,
    RUBRIC,
    canonical_prompt_style,
    resolve_dimension,
)
from mis_bench_dataset.protocol import paper_prompt
from mis_bench_dataset.setting import Setting
from mis_bench_dataset.setting_inputs import setting_media
from raft_trainer.digits import DigitTokens, format_score
from raft_trainer.media import MEDIA_CONTEXT_COLUMN

logger = logging.getLogger(__name__)

SYSTEM_INSTRUCTION = (
    "You are an expert rater of psychotherapists' Facilitative Interpersonal Skills (FIS). "
    "You rate a therapist's response to a challenging client on one FIS dimension, on a scale "
    "from 1.0 to 5.0 with one decimal, following the rubric exactly."
)
TRAINER_PROMPT_STYLES: tuple[str, ...] = (DIRECT_PROMPT_STYLE, PAPER_PROMPT_STYLE)
COMPLETION_PREFIX = "The score prediction is: "
TRUNCATION_MARK = " [...]"
# Any valid score text works as a stand-in at inference: the prompt and the completion prefix do
# not depend on the digits, which are exactly three tokens.
PLACEHOLDER_SCORE = "0.0"


def user_prompt(dimension: str, transcript: str, media_context: str | None = None) -> str:
    """The user turn: dimension, criterion, the five rubric levels, the transcript, then (audio/video
    settings) the media context: feature-derived descriptors or a note that the media is attached."""
    key = resolve_dimension(dimension)
    media = f"{media_context.strip()}\n\n" if media_context else ""
    rubric = RUBRIC[key]
    levels = rubric.level_lines(": ")
    return (
        f"Rate the therapist's response on the FIS dimension {DIMENSION_BY_KEY[key].name}.\n\n"
        f"Criterion: {rubric.criterion}\n\n"
        f"Rubric:\n{levels}\n\n"
        f"Transcript of the therapist's response:\n{transcript.strip()}\n\n"
        f"{media}"
        "Give your score between 1.0 and 5.0 with one decimal."
    )


def completion_text(score_text: str) -> str:
    return f"{COMPLETION_PREFIX}{score_text}"


def check_prompt_style(prompt_style: str) -> str:
    """The trainer's prompt style `prompt_style` names (an alias, `toolkit`, is `direct`); another is refused."""
    try:
        style = canonical_prompt_style(prompt_style)
    except ValueError:
        style = None
    if style not in TRAINER_PROMPT_STYLES:
        known = ", ".join((*TRAINER_PROMPT_STYLES, *PROMPT_STYLE_ALIASES))
        raise ValueError(f"unknown prompt style {prompt_style!r}; the trainer renders one of {known}")
    return style


def prompt_texts(
    dimension: str, transcript: str, media_context: str | None = None, prompt_style: str = DIRECT_PROMPT_STYLE
) -> tuple[str, str]:
    """(system instruction, user text) of one row in the given prompt style."""
    if check_prompt_style(prompt_style) == PAPER_PROMPT_STYLE:
        paper = paper_prompt(dimension, transcript, media_context)
        return paper.system, paper.user
    return SYSTEM_INSTRUCTION, user_prompt(dimension, transcript, media_context)


def prompt_messages(
    row: Mapping[str, Any], transcript: str | None = None, prompt_style: str = DIRECT_PROMPT_STYLE
) -> list[dict[str, str]]:
    """System + user messages; the user turn carries the row's `media_context` when it has one."""
    text = row["transcript"] if transcript is None else transcript
    system, user = prompt_texts(row["dimension"], text or "", row.get(MEDIA_CONTEXT_COLUMN), prompt_style)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def conversation(row: Mapping[str, Any], prompt_style: str = DIRECT_PROMPT_STYLE) -> dict[str, list[dict[str, str]]]:
    """TRL's conversational prompt-completion form of a labelled row (for users who want plain SFT)."""
    return {
        "prompt": prompt_messages(row, prompt_style=prompt_style),
        "completion": [{"role": "assistant", "content": completion_text(format_score(row["score"]))}],
    }


def _row_name(row: Mapping[str, Any]) -> str:
    return f"row (video_id={row.get('video_id')!r}, dimension={row.get('dimension')!r})"


class TrainingRowMixin:
    """Shared by the text and raw-media encoders: gold score -> encoded row with its targets."""

    def encode_training_row(self, row: Mapping[str, Any]) -> dict[str, Any]:
        if row.get("score") is None:
            raise ValueError(f"{_row_name(row)} has no gold score; drop unlabelled rows before training")
        score_text = format_score(row["score"])
        out = self.encode(row, score_text)
        out["score"] = float(score_text)
        out["dimension_index"] = DIMENSION_KEYS.index(resolve_dimension(row["dimension"]))
        return out


def prompt_floor(encoder: ScoringEncoder, rows) -> tuple[int, Mapping[str, Any] | None]:
    """(the most tokens any row needs with its transcript removed: system prompt, rubric, media context and score;
    that row): a `max_length` below it cannot encode the row. Rows of one dimension and media context need the
    same, so each pair is rendered once."""
    floor, widest, seen = 0, None, set()
    for row in rows:
        key = (row["dimension"], row.get(MEDIA_CONTEXT_COLUMN))
        if key in seen:
            continue
        seen.add(key)
        needed = len(encoder._render(row, "", PLACEHOLDER_SCORE)[0])
        if needed > floor:
            floor, widest = needed, row
    return floor, widest


@dataclass
class ScoringEncoder(TrainingRowMixin):
    """Tokenizes scoring rows with the model's chat template and locates the score tokens.

    The transcript is shortened (never the rubric, the media context or the completion) when a row
    exceeds `max_length`; rows whose prompt alone is too long raise, naming the row. With an
    audio/video `modality` every row must carry its `media_context` (see `raft_trainer.media`).
    `prompt_style` is one of `TRAINER_PROMPT_STYLES`.
    """

    tokenizer: Any
    digits: DigitTokens
    max_length: int | None = 512
    modality: str = "text"
    prompt_style: str = DIRECT_PROMPT_STYLE
    # the completion's score is its last [digit, '.', digit] (a CoT completion: `raft_trainer.cot`), not its first
    score_is_last = False

    @classmethod
    def for_setting(cls, tokenizer: Any, digits: DigitTokens, setting: Setting, *, max_length: int | None = 512):
        """The encoder of a `Setting` (a `RAFTConfig`'s `.setting`): its modality and prompt style."""
        return cls(tokenizer, digits, max_length, setting.modality, setting.prompt_style)

    def __post_init__(self) -> None:
        self.prompt_style = check_prompt_style(self.prompt_style)
        self.media = setting_media(self.modality)
        if not getattr(self.tokenizer, "chat_template", None):
            raise ValueError(
                f"tokenizer {getattr(self.tokenizer, 'name_or_path', '')!r} has no chat template; MIS-RAFT renders "
                "system/user/assistant messages with it. Use an instruct model's tokenizer or set "
                "`tokenizer.chat_template`."
            )

    def _ids(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def _render(self, row: Mapping[str, Any], transcript: str, score_text: str) -> tuple[list[int], int]:
        prompt = prompt_messages(row, transcript, self.prompt_style)
        return render_with_completion(self.tokenizer, prompt, completion_text(score_text))

    def encode(self, row: Mapping[str, Any], score_text: str) -> dict[str, Any]:
        """Token ids, completion-only labels and the integer digit's index for one row."""
        self.check_media(row)
        transcript = row.get("transcript") or ""
        full_ids, prompt_len = self._render(row, transcript, score_text)
        truncated = False
        if self.max_length is not None and len(full_ids) > self.max_length:
            truncated = True
            transcript_ids = self._ids(transcript)
            keep = len(transcript_ids) - (len(full_ids) - self.max_length)
            for _ in range(4):
                shortened = self.tokenizer.decode(transcript_ids[: max(keep, 0)]) + TRUNCATION_MARK if keep > 0 else ""
                full_ids, prompt_len = self._render(row, shortened, score_text)
                over = len(full_ids) - self.max_length
                if over <= 0 or keep <= 0:
                    break
                keep -= over
            if len(full_ids) > self.max_length:
                raise ValueError(
                    f"{_row_name(row)}: the prompt needs {len(full_ids)} tokens even with the transcript removed, "
                    f"more than max_length={self.max_length}; raise max_length (the rubric of this dimension is long"
                    + (", and the feature-derived descriptors add to it" if self.media else "")
                    + ")"
                )
        score_index = self.digits.find_score(
            full_ids,
            score_text,
            start=prompt_len,
            context=_row_name(row),
            tokenizer=self.tokenizer,
            last=self.score_is_last,
        )
        labels = [-100] * prompt_len + full_ids[prompt_len:]
        return {
            "input_ids": full_ids,
            "labels": labels,
            "score_index": score_index,
            "transcript_truncated": truncated,
        }

    def check_media(self, row: Mapping[str, Any]) -> None:
        """An audio/video setting needs the row's media context; never fall back to text only."""
        if self.media and not row.get(MEDIA_CONTEXT_COLUMN):
            raise ValueError(
                f"{_row_name(row)}: modality {self.modality!r} needs the row's `{MEDIA_CONTEXT_COLUMN}` "
                "(feature-derived descriptors from the `features` config: raft_trainer.media.load_feature_contexts "
                "and attach_feature_context); refusing to build a text-only prompt"
            )
        if not self.media and row.get(MEDIA_CONTEXT_COLUMN):
            raise ValueError(
                f"{_row_name(row)} carries a `{MEDIA_CONTEXT_COLUMN}` but the modality is 'text'; "
                "pass the row's modality setting"
            )

    def encode_prompt(self, row: Mapping[str, Any]) -> list[int]:
        """Ids up to (excluding) the integer digit: what the model sees when it predicts the score."""
        out = self.encode(row, PLACEHOLDER_SCORE)
        return out["input_ids"][: out["score_index"]]

    def generation_prompt(self, row: Mapping[str, Any]) -> list[int]:
        """Ids of the prompt alone, up to the assistant turn (transcript shortened as for training): what a model
        generates its answer from (GRPO's samples, CoT-RAFT's rationales)."""
        out = self.encode(row, PLACEHOLDER_SCORE)
        first_trained = next(i for i, label in enumerate(out["labels"]) if label != -100)
        return out["input_ids"][:first_trained]


def render_with_completion(tokenizer, messages: list[dict], completion: str, template=None) -> tuple[list[int], int]:
    """Token ids of `messages` plus an assistant turn holding `completion`, rendered with the chat template
    (`template`'s, a processor's, when given; else the tokenizer's), and the length of the prompt part (the
    ids it shares with the prompt rendered for generation)."""
    template = template or tokenizer
    content: Any = completion
    if messages and isinstance(messages[-1].get("content"), list):  # processor chats: content parts
        content = [{"type": "text", "text": completion}]
    prompt_text = template.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    full_text = template.apply_chat_template([*messages, {"role": "assistant", "content": content}], tokenize=False)
    shared = _ids_sharing_the_prompt(tokenizer, prompt_text, full_text)
    if shared is not None:
        return shared
    prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    full_ids = tokenizer(full_text, add_special_tokens=False)["input_ids"]
    return full_ids, _common_prefix(prompt_ids, full_ids)


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _verbatim_marks(tokenizer) -> dict[int, str]:
    """id -> text of the added tokens a fast tokenizer matches verbatim (not normalised, no stripping, not
    single-word): the text is split at them before anything else, and each piece is tokenized on its own."""
    backend = getattr(tokenizer, "backend_tokenizer", None) if getattr(tokenizer, "is_fast", False) else None
    if backend is None:
        return {}
    return {
        i: t.content
        for i, t in backend.get_added_tokens_decoder().items()
        if not (t.normalized or t.lstrip or t.rstrip or t.single_word)
    }


def _ids_sharing_the_prompt(tokenizer, prompt_text: str, full_text: str) -> tuple[list[int], int] | None:
    """(full ids, prompt length) with one tokenization of the long text instead of two, or None (then the
    caller tokenizes both).

    A fast tokenizer splits a text at its verbatim added tokens first and tokenizes each piece alone (a
    Metaspace "first" prefix depends only on whether the piece starts the text). When `full_text` extends
    `prompt_text`, their ids therefore agree up to the last such token inside the prompt (`<|im_start|>` of
    the assistant turn); only the prompt's short rest after it is tokenized again, behind that token so it
    stays a piece that does not start the text. The prompt length is the common prefix of the two id lists,
    as in the plain path."""
    marks = _verbatim_marks(tokenizer) if full_text.startswith(prompt_text) else {}
    if not marks:
        return None
    encoded = tokenizer(full_text, add_special_tokens=False, return_offsets_mapping=True)
    full_ids, offsets = encoded["input_ids"], encoded["offset_mapping"]
    for j in range(len(full_ids) - 1, -1, -1):  # from the end: the completion is a few tokens
        start, end = offsets[j]
        mark = marks.get(full_ids[j])
        if mark is None or end > len(prompt_text) or full_text[start:end] != mark:
            continue
        rest = tokenizer(mark + prompt_text[end:], add_special_tokens=False)["input_ids"]
        if not rest or rest[0] != full_ids[j]:
            return None
        return full_ids, j + 1 + _common_prefix(rest[1:], full_ids[j + 1 :])
    return None


def prefilled_prompt_ids(
    tokenizer, digits: DigitTokens, messages: list[dict], prefix: str = "", template=None
) -> list[int]:
    """Ids of `messages` and an assistant answer beginning with `prefix`, up to (excluding) the score's integer
    digit: where the model's digit distribution is read (`raft_trainer.predict.read_digit_scores`)."""
    full_ids, prompt_len = render_with_completion(tokenizer, messages, prefix + PLACEHOLDER_SCORE, template)
    index = digits.find_score(
        full_ids, PLACEHOLDER_SCORE, start=prompt_len, context="prefilled answer", tokenizer=tokenizer
    )
    return full_ids[:index]


def check_scoring_columns(dataset, where: str = "dataset") -> None:
    missing = {"video_id", "dimension", "transcript", "score"} - set(dataset.column_names)
    if missing:
        raise ValueError(
            f"{where} lacks the scoring columns {sorted(missing)}; pass the `scoring` config of a built "
            "MIS-Bench dataset (load_dataset(DIR, 'scoring'))"
        )


def labelled_rows(dataset, split: str):
    """The split's rows that have a gold score (the count dropped is logged); raises when none do."""
    check_scoring_columns(dataset, f"{split} split")
    n_before = len(dataset)
    from mis_bench_dataset.dataset.loading import quiet_datasets

    with quiet_datasets():  # a fraction of a second: no bar
        dataset = dataset.filter(
            lambda score: score is not None, input_columns="score", desc=f"Dropping unlabelled {split} rows"
        )
    if len(dataset) < n_before:
        logger.warning("%s split: dropped %d of %d rows without a gold score", split, n_before - len(dataset), n_before)
    if len(dataset) == 0:
        raise ValueError(f"{split} split has no labelled rows to train or evaluate on")
    return dataset


def _encoded_features(features, keep: set[str]):
    """The encoded rows' features, as `datasets` would infer them (ids int32, the rest int64, the input's own score
    type), given up front so that writing the rows does not scan every id for its type."""
    from datasets import Features, List, Value

    kept = {name: feature for name, feature in features.items() if name in keep or name == "score"}
    return Features(
        {
            **kept,
            "input_ids": List(Value("int32")),
            "labels": List(Value("int64")),
            "score_index": Value("int64"),
            "transcript_truncated": Value("bool"),
            "dimension_index": Value("int64"),
        }
    )


def prepare_raft_dataset(dataset, encoder: ScoringEncoder, *, split: str = "train", num_proc: int | None = None):
    """Labelled scoring rows -> tokenized rows (`input_ids`, `labels`, `score_index`, `score`, `dimension_index`).

    Unlabelled rows are dropped with a logged count; transcript truncations are logged too.
    """
    dataset = labelled_rows(dataset, split)
    keep = {"video_id", "dimension"}
    encoded = dataset.map(
        encoder.encode_training_row,
        remove_columns=[c for c in dataset.column_names if c not in keep],
        features=_encoded_features(dataset.features, keep),
        num_proc=num_proc,
        desc=f"Tokenizing {split} rows for MIS-RAFT",
    )
    n_truncated = sum(encoded["transcript_truncated"])
    if n_truncated:
        logger.warning(
            "%s split: %d of %d transcripts shortened to fit max_length=%s",
            split,
            n_truncated,
            len(encoded),
            encoder.max_length,
        )
    return encoded.remove_columns("transcript_truncated")

"""Batch files: export a run's requests for a provider's batch API, import its answers.

The input format is OpenAI's Batch API, which vLLM's `run_batch` entrypoint reads and writes
too: one JSON object per line, `{"custom_id", "method": "POST", "url": "/v1/chat/completions",
"body"}`, where `body` is exactly what the openai backend sends live
(`OpenAIBackend.request_body`). Output lines are `{"id", "custom_id", "response": {"status_code",
"body"}, "error"}` in any order; OpenAI writes failed requests to a separate error file of the
same shape.

`custom_id` = `<setting>/<video_id>/<dimension>/<key24>`: the run folder's setting name, the row,
and the first 24 hex digits of the response-cache key (sha256 over backend, model, full setting,
prompt sha256, video, dimension and decoding), so it is unique, stable, and changes whenever
anything that determines the answer changes. An import maps ids back by recomputing them for the
run it is given, never by parsing them: an id of another run, setting or decoding is unknown.

Imported outcomes reach the run through `BatchOutputBackend`, a backend that answers from the
output file, behind the same `CachingBackend` as a live run: answers land in the append-only
response cache, errors are recorded as failed and answers cut by the token limit as truncated
(`eval_scripts.answers.answer_status.outcome_status`), and the run's files are written by the same code.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from eval_scripts.answers.expected_score import TokenChoice, expected_from_tokens
from eval_scripts.answers.prompts import Prompt
from eval_scripts.backends.base import Backend, Completion, DecodingConfig
from eval_scripts.backends.openai_backend import (
    ERROR_BODY_CHARS,
    FAILURE_MALFORMED,
    FAILURE_NO_LOGPROBS,
    http_failure,
    parse_chat_completion,
    server_message,
)
from mis_bench_dataset.toolkit.errors import DataError, UsageError
from mis_bench_dataset.toolkit.ownership import OutputFolder

if TYPE_CHECKING:  # the CLI reads this module's limits for --help: keep it free of the dataset stack
    from eval_scripts.harness.context import RunContext

BATCH_URL = "/v1/chat/completions"
# OpenAI Batch API limits per input file (https://platform.openai.com/docs/guides/batch).
OPENAI_MAX_REQUESTS = 50_000
OPENAI_MAX_MB = 200.0
EXPORT_WRITER = "batch-export"
KEY_DIGITS = 24
_MAX_NAMED = 10


def custom_id(context: RunContext, index: int, sample: int = 0) -> str:
    """The batch id of row `index` (its repeated sample `sample`) of a prepared run (see the module docstring)."""
    prompt = context.prompts[index]
    setting = context.run_dir.rsplit("/", 1)[-1]
    return f"{setting}/{prompt.video_id}/{prompt.dimension}/{context.key(index, sample)[:KEY_DIGITS]}"


def batch_line(request_id: str, body: Mapping) -> bytes:
    """One batch input line (UTF-8, newline-terminated)."""
    line = {"custom_id": request_id, "method": "POST", "url": BATCH_URL, "body": dict(body)}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8") + b"\n"


def split_lines(lines: Sequence[bytes], max_requests: int, max_bytes: int) -> list[list[bytes]]:
    """Consecutive parts of at most `max_requests` lines and `max_bytes` bytes each."""
    parts: list[list[bytes]] = []
    size = 0
    for line in lines:
        if len(line) > max_bytes:
            raise UsageError(
                f"one request is {len(line):,} bytes, more than the file limit of {max_bytes:,}",
                where="--batch-max-mb",
                hint="raise --batch-max-mb",
            )
        if not parts or len(parts[-1]) >= max_requests or size + len(line) > max_bytes:
            parts.append([])
            size = 0
        parts[-1].append(line)
        size += len(line)
    return parts


def part_names(path: Path, n_parts: int) -> list[str]:
    """FILE.jsonl for one part; FILE-001.jsonl, FILE-002.jsonl, ... for more."""
    if n_parts == 1:
        return [path.name]
    return [f"{path.stem}-{i:03d}{path.suffix}" for i in range(1, n_parts + 1)]


def batch_arg(command: str) -> str:
    """What the user named the batch file(s) with: `FILE` of `mis-bench batch export|import`, or the run's old flag."""
    return {"run export": "--export-batch", "run import": "--import-batch"}.get(command, "FILE")


def batch_folder(path: str | Path, *, inputs: Iterable[Path] = (), command: str = "batch export") -> OutputFolder:
    """The folder the batch file(s) of `path` go into, its path checked (a folder given for the file is refused)."""
    path = Path(path).expanduser()
    shown_command = command.split()[0] if command.startswith("run ") else command
    if path.is_dir():
        raise UsageError(
            f"{batch_arg(command)} {path} is a folder",
            where=f"mis-bench {shown_command}",
            hint="give the path of a .jsonl file to write",
        )
    return OutputFolder(path.parent, command=shown_command, arg=batch_arg(command), inputs=inputs)


def check_batch_path(path: str | Path, *, inputs: Iterable[Path] = (), command: str = "batch export") -> None:
    """Refuse, before any work, a batch file path that is an input or a file this export did not write."""
    batch_folder(path, inputs=inputs, command=command).claim(Path(path).expanduser().name, EXPORT_WRITER)


def write_batch_files(
    path: str | Path, parts: Sequence[Sequence[bytes]], *, inputs: Iterable[Path] = (), command: str = "batch export"
) -> list[Path]:
    """Write the parts next to `path`; earlier parts of the same export that are no longer needed go.

    Files are claimed first (`OutputFolder`): a file this export did not write is never replaced; the parts are
    published together and recorded once written. `command` is the one the user typed (`batch export`, or
    `run export` for `run --export-batch`), for the error lines.
    """
    path = Path(path).expanduser()
    folder = batch_folder(path, inputs=inputs, command=command)
    names = part_names(path, len(parts)) if parts else []
    targets = folder.publish(EXPORT_WRITER, {name: b"".join(part) for name, part in zip(names, parts, strict=True)})
    earlier = [path.name, *(p.name for p in path.parent.glob(f"{path.stem}-[0-9][0-9][0-9]{path.suffix}"))]
    for name in sorted(set(earlier) - set(names)):
        folder.remove_owned(name, EXPORT_WRITER)
    return targets


# The kind of failure of a batch line the provider itself marked as failed (no HTTP answer to read).
BATCH_FAILURE = "batch error"
# The index of an imported answer no prompt has asked for yet (`_completion` sets the prompt's).
UNPLACED = -1


@dataclass(frozen=True)
class BatchOutcome:
    """What a provider answered for one request: the answer as a live request's `Completion` (text or error, the
    kind of failure as `openai_backend.FAILURE_*`, finish reason, usage, the model the response names), the output
    line it came from and, when the line has them, each generated token's top candidates. The answer's `index` is
    set when a prompt asks for it (`BatchOutputBackend`), so the two records share their fields by construction."""

    answer: Completion
    where: str  # file, line
    tokens: tuple[TokenChoice, ...] | None = None

    def same_answer(self, other: BatchOutcome) -> bool:
        mine, theirs = self.answer, other.answer
        return (mine.ok, mine.text, mine.finish_reason) == (theirs.ok, theirs.text, theirs.finish_reason)


def _error_message(error) -> str:
    if isinstance(error, Mapping):
        inner = error.get("error") if isinstance(error.get("error"), Mapping) else error
        code = inner.get("code") or inner.get("type")
        message = inner.get("message") or json.dumps(error)[:200]
        return f"{code}: {message}" if code else str(message)
    return str(error)


def _envelope_problem(response, status, body) -> str | None:
    """The batch output line's own schema (the provider's envelope around a response body): `response` an object or
    null, its `status_code` an integer and its `body` an object or null; the body itself is read as a live answer."""
    if response is None:
        return None
    if not isinstance(response, Mapping):
        return f"field response is {type(response).__name__}, not an object"
    if not isinstance(status, int) or isinstance(status, bool):
        return f"field response.status_code is {type(status).__name__}, not an integer"
    if body is not None and not isinstance(body, Mapping):
        return f"field response.body is {type(body).__name__}, not an object"
    return None


def parse_output_line(obj, where: str) -> tuple[str, BatchOutcome]:
    """(custom_id, outcome) of one output line; a line without a custom_id is a data error."""
    if not isinstance(obj, Mapping) or not isinstance(obj.get("custom_id"), str) or not obj["custom_id"]:
        raise DataError(
            "not a batch output line (no custom_id)",
            where=where,
            hint="import the output or error file the provider wrote for an exported batch",
        )
    response = obj.get("response")
    error = obj.get("error")
    status = response.get("status_code") if isinstance(response, Mapping) else None
    body = response.get("body") if isinstance(response, Mapping) else None
    envelope = _envelope_problem(response, status, body)
    if envelope is not None:
        raise DataError(
            f"not a batch output line ({envelope})",
            where=where,
            hint="import the output or error file the provider wrote; an edited line cannot be imported",
        )
    # Failures are worded and classified as a live request's (kind: detail), so an import's results equal a live run's.
    if error:
        failure, message = BATCH_FAILURE, f"{BATCH_FAILURE}: {_error_message(error)}"
    elif not isinstance(response, Mapping):
        failure, message = BATCH_FAILURE, f"{BATCH_FAILURE}: a line without a response"
    elif status != 200:
        failure = http_failure(status)
        detail = server_message(json.dumps(body).encode()) if isinstance(body, Mapping) else ""
        message = f"{failure}: {detail}" if detail else failure
    else:
        try:
            answer = parse_chat_completion(body)
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as err:
            failure, message = FAILURE_MALFORMED, f"{FAILURE_MALFORMED}: {type(err).__name__}: {str(err)[:100]}"
        else:
            tokens = tuple(answer.tokens) if answer.tokens is not None else None
            answered = Completion(
                UNPLACED, answer.text, True, finish_reason=answer.finish_reason, usage=answer.usage,
                served_model=answer.model,
            )  # fmt: skip
            return obj["custom_id"], BatchOutcome(answered, where, tokens)
    failed = Completion(UNPLACED, None, False, message[:ERROR_BODY_CHARS], failure=failure)
    return obj["custom_id"], BatchOutcome(failed, where)


def check_batch_outputs(paths: Sequence[str | Path], *, command: str = "batch import") -> None:
    """Refuse, before any work, an output file that is not there (`command` as in `write_batch_files`)."""
    for path in paths:
        if not Path(path).is_file():
            raise UsageError(
                f"{batch_arg(command)} {path} does not exist",
                where=f"mis-bench {command.split()[0] if command.startswith('run ') else command}",
                hint="give the output (or error) file the provider wrote",
            )


def read_batch_outputs(paths: Sequence[str | Path]) -> Iterator[tuple[str, BatchOutcome]]:
    """Every (custom_id, outcome) of the output files (`check_batch_outputs` first), in file and line order."""
    for path in paths:
        path = Path(path)
        with open(path, "rb") as handle:
            for line_no, line in enumerate(handle, start=1):
                if not line.strip():
                    continue
                where = f"{path}, line {line_no}"
                try:
                    obj = json.loads(line)
                except ValueError as err:
                    raise DataError(
                        f"not a JSON line ({err})",
                        where=where,
                        hint="download the file again; a torn or edited line cannot be imported",
                    ) from None
                yield parse_output_line(obj, where)


def _named(ids: Sequence[str]) -> list[str]:
    return list(ids[:_MAX_NAMED])


@dataclass
class ImportReport:
    """What an import found in the output files, beside the run's own counts."""

    lines: int = 0
    matched: int = 0  # distinct ids of this run's requests
    already_answered: int = 0  # matched ids whose row the cache already answered
    unknown: list[str] = field(default_factory=list)  # ids that are not requests of this run
    duplicates: list[str] = field(default_factory=list)  # ids on more than one line
    conflicting: list[str] = field(default_factory=list)  # ids with two different answers: not imported

    def as_dict(self) -> dict:
        return {
            "lines": self.lines,
            "matched": self.matched,
            "already_answered": self.already_answered,
            "unknown": len(self.unknown),
            "unknown_ids": _named(self.unknown),
            "duplicates": len(self.duplicates),
            "duplicate_ids": _named(self.duplicates),
            "conflicting": len(self.conflicting),
            "conflicting_ids": _named(self.conflicting),
        }

    def problems(self) -> list[str]:
        """One line per kind of id problem, naming the first ids."""
        lines = []
        for what, ids, consequence in (
            ("not requests of this run", self.unknown, "skipped; import with the flags of the export"),
            ("on more than one line", self.duplicates, "the same answer twice counts once"),
            ("with different answers on different lines", self.conflicting, "not imported; those rows stay unanswered"),
        ):
            if ids:
                more = f" and {len(ids) - _MAX_NAMED} more" if len(ids) > _MAX_NAMED else ""
                lines.append(f"{len(ids)} custom_id(s) {what} ({consequence}): {', '.join(_named(ids))}{more}")
        return lines


def resolve_outcomes(
    outcomes: Iterable[tuple[str, BatchOutcome]], known: Mapping[str, object]
) -> tuple[dict[str, BatchOutcome], ImportReport]:
    """One outcome per id of this run: an answer beats a failure; two different answers are a conflict."""
    report = ImportReport()
    seen: dict[str, list[BatchOutcome]] = {}
    unknown: dict[str, None] = {}
    for request_id, outcome in outcomes:
        report.lines += 1
        if request_id not in known:
            unknown[request_id] = None
            continue
        seen.setdefault(request_id, []).append(outcome)
    report.unknown = list(unknown)
    chosen: dict[str, BatchOutcome] = {}
    for request_id, found in seen.items():
        if len(found) > 1:
            report.duplicates.append(request_id)
        answers = [o for o in found if o.answer.ok]
        if any(not answer.same_answer(answers[0]) for answer in answers[1:]):
            report.conflicting.append(request_id)
            continue
        chosen[request_id] = answers[0] if answers else found[0]
    report.matched = len(seen)
    return chosen, report


class BatchOutputBackend(Backend):
    """A backend that answers from a provider's batch output instead of calling a server.

    It takes the name, model and input kinds of the backend that exported the requests, so
    `CachingBackend` keys its answers exactly as a live run's; a prompt with no output line
    gets no completion and stays unanswered.
    """

    keeps_request_order = False

    def __init__(self, exported_by: Backend, outcomes: Mapping[tuple[str, str, str, int], BatchOutcome]) -> None:
        super().__init__(exported_by.model)
        self.name = exported_by.name
        self.modalities = exported_by.modalities
        self.outcomes = dict(outcomes)  # (video_id, dimension, prompt_hash, sample) -> outcome
        self.served = 0

    def complete(self, prompts: Sequence[Prompt], decoding: DecodingConfig) -> Iterator[Completion]:
        for index, prompt in enumerate(prompts):
            outcome = self.outcomes.get((prompt.video_id, prompt.dimension, prompt.prompt_hash, decoding.sample))
            if outcome is None:
                continue
            self.served += 1
            yield _completion(index, outcome, decoding)


def _completion(index: int, outcome: BatchOutcome, decoding: DecodingConfig) -> Completion:
    """A live request's Completion for an imported outcome; an expected-score readout needs the line's logprobs."""
    expected = None
    if outcome.answer.ok and decoding.expected:
        if outcome.tokens is None:
            error = f"{FAILURE_NO_LOGPROBS}: the batch output line has no logprobs ({outcome.where})"
            return Completion(index, None, False, error, attempts=1, failure=FAILURE_NO_LOGPROBS)
        expected = expected_from_tokens(outcome.tokens, decoding.style or "direct").as_record()
    return replace(outcome.answer, index=index, expected=expected)  # a fresh record: the outcome's stays as read

"""TRACT's first stage: the base model's own rationales, generated once and stored beside the build.

`generate_rationales` samples an analysis for each row from the CoT prompt (`raft_trainer.cot`) and cuts it
before its own final score (`rationale_of`); CoT-RAFT then trains on rationale + "Final score: <gold>".
`write_rationales` stores them in a folder (default `<build>.rationales/<model>`, next to the build, never
inside it) as `settings.json` plus one JSONL part per `CHUNK_ROWS` rows, each written atomically: an
interrupted run resumes at the first missing part, and since part k is sampled with seed `seed + k`, a resumed
run writes what an uninterrupted one would. A folder written with other settings is refused, not mixed.
`predict_cot_scores` is the CoT model's test readout: its greedy analysis, then the expected score at the
digits after "Final score: " (`raft_trainer.predict.read_digit_scores`, the trainer's own readout).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from mis_bench_dataset.toolkit.errors import DataError, UsageError
from raft_trainer.cot import RATIONALE_COLUMN, CotScoringEncoder, rationale_of
from raft_trainer.predict import DEFAULT_READOUT, ReadoutOptions, _left_pad, pad_token_id, read_digit_scores

logger = logging.getLogger(__name__)

RATIONALES_WRITER = "rationales"
SETTINGS_NAME = "settings.json"
CHUNK_ROWS = 64  # rows per part file: the unit of atomic writing, resuming and seeding


def default_rationales_dir(dataset_dir: str | Path, model: str) -> Path:
    """`<build>.rationales/<model's last path part>`: beside the build, one folder per base model."""
    build = Path(dataset_dir).expanduser()
    name = Path(str(model).rstrip("/")).name or "model"
    return build.parent / f"{build.name}.rationales" / name


def _key(row: Mapping[str, Any]) -> tuple[str, str]:
    return str(row["video_id"]), str(row["dimension"])


@torch.inference_mode()
def generate_rationales(
    model,
    encoder: CotScoringEncoder,
    rows: Sequence[Mapping[str, Any]],
    *,
    max_new_tokens: int = 256,
    temperature: float = 0.7,
    seed: int = 0,
    batch_size: int = 8,
) -> list[str]:
    """One rationale per row (same order): sampled at `temperature` with `seed` (greedy at 0), cut before the
    model's own final score."""
    tokenizer = encoder.tokenizer
    pad_id = pad_token_id(tokenizer)
    device = next(model.parameters()).device
    prompts = [encoder.generation_prompt(row) for row in rows]
    was_training = model.training
    model.eval()
    torch.manual_seed(seed)
    sampling = {"do_sample": True, "temperature": temperature} if temperature > 0 else {"do_sample": False}
    texts = [""] * len(rows)
    for start in range(0, len(rows), batch_size):
        ids, mask = _left_pad(prompts[start : start + batch_size], pad_id, device)
        out = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=max_new_tokens,
            pad_token_id=pad_id,
            eos_token_id=tokenizer.eos_token_id,
            **sampling,
        )
        decoded = tokenizer.batch_decode(out[:, ids.size(1) :], skip_special_tokens=True)
        texts[start : start + len(decoded)] = [rationale_of(text) for text in decoded]
    model.train(was_training)
    return texts


def write_rationales(
    model,
    encoder: CotScoringEncoder,
    rows: Sequence[Mapping[str, Any]],
    folder: str | Path,
    settings: dict,
    *,
    inputs: Sequence[str | Path] = (),
    show_progress: bool = True,
) -> tuple[int, int]:
    """Generate the missing parts of `folder` (see the module doc); returns (parts written, parts kept).
    `settings` (model, seed, temperature, max_new_tokens, batch_size (default 8), ...) must equal those of the
    parts already there: the batch shapes decide how a sampled part consumes its random stream."""
    batch_size = settings.get("batch_size", DEFAULT_READOUT.batch_size)
    from mis_bench_dataset.toolkit.atomic import write_atomic
    from mis_bench_dataset.toolkit.ownership import OutputFolder
    from mis_bench_dataset.toolkit.progress import progress

    out = OutputFolder(folder, command="train", arg="--rationales_dir", inputs=inputs)
    settings_path = out.root / SETTINGS_NAME
    # the batch shapes decide how a sampled part consumes its random stream: a resumed run must keep them
    settings = {**settings, "chunk_rows": CHUNK_ROWS, "rows": len(rows), "batch_size": batch_size}
    if settings_path.is_file():
        earlier = json.loads(settings_path.read_text(encoding="utf-8"))
        if earlier != settings:
            changed = sorted(k for k in set(earlier) | set(settings) if earlier.get(k) != settings.get(k))
            raise UsageError(
                f"{out.root} holds rationales written with other settings ({', '.join(changed)} differ)",
                where="--rationales_dir",
                hint="give another --rationales_dir, or the settings it was written with",
            )
    write_atomic(out.claim(SETTINGS_NAME, RATIONALES_WRITER), json.dumps(settings, indent=2, sort_keys=True) + "\n")
    n_parts = -(-len(rows) // CHUNK_ROWS)
    missing = [k for k in range(n_parts) if not (out.root / _part_name(k)).is_file()]
    for k in progress(missing, desc="rationales", unit="part", show=show_progress):
        part = rows[k * CHUNK_ROWS : (k + 1) * CHUNK_ROWS]
        texts = generate_rationales(
            model,
            encoder,
            part,
            max_new_tokens=settings["max_new_tokens"],
            temperature=settings["temperature"],
            seed=settings["seed"] + k,
            batch_size=batch_size,
        )
        lines = [
            json.dumps({"video_id": v, "dimension": d, RATIONALE_COLUMN: text}, ensure_ascii=False)
            for (v, d), text in zip(map(_key, part), texts, strict=True)
        ]
        write_atomic(out.claim(_part_name(k), RATIONALES_WRITER), "\n".join(lines) + "\n")
    return len(missing), n_parts - len(missing)


def _part_name(k: int) -> str:
    return f"part-{k:05d}.jsonl"


def read_rationales(folder: str | Path) -> dict[tuple[str, str], str]:
    """(video_id, dimension) -> rationale, from every part in `folder`."""
    root = Path(folder).expanduser()
    if not (root / SETTINGS_NAME).is_file():
        raise UsageError(
            f"no rationales in {root}",
            where="--rationales_dir",
            hint="generate them first: the same command with --generate_rationales (TRACT's first stage)",
        )
    found = {}
    for part in sorted(root.glob("part-*.jsonl")):
        for line in part.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            found[_key(record)] = record[RATIONALE_COLUMN]
    return found


def attach_rationales(dataset, rationales: Mapping[tuple[str, str], str], where: str):
    """`dataset` with a `rationale` column; a labelled row without one stops the run, with the count."""
    keys = [(str(v), str(d)) for v, d in zip(dataset["video_id"], dataset["dimension"], strict=True)]
    labelled = [s is not None for s in dataset["score"]]
    missing = [k for k, has in zip(keys, labelled, strict=True) if has and k not in rationales]
    if missing:
        raise DataError(
            f"{len(missing)} labelled rows have no rationale (first: {missing[0][0]} {missing[0][1]})",
            where=where,
            hint="finish the first stage: rerun with --generate_rationales (it resumes where it stopped)",
        )
    column = [rationales.get(k, "") for k in keys]
    if RATIONALE_COLUMN in dataset.column_names:
        dataset = dataset.remove_columns(RATIONALE_COLUMN)
    return dataset.add_column(RATIONALE_COLUMN, column)


def predict_cot_scores(
    model,
    encoder: CotScoringEncoder,
    rows: Sequence[Mapping[str, Any]],
    *,
    max_new_tokens: int = 256,
    readout: ReadoutOptions = DEFAULT_READOUT,
) -> np.ndarray:
    """Expected scores of a CoT model: its greedy analysis (`readout.batch_size` rows at a time), then the digits
    after 'Final score: ' read by `read_digit_scores` as `readout` says (a prefilled pass: the place the
    harness's CoT expected readout reads)."""
    batch_size = readout.batch_size
    rationales = generate_rationales(
        model, encoder, rows, max_new_tokens=max_new_tokens, temperature=0.0, batch_size=batch_size
    )
    prompts = [encoder.encode_prompt({**row, RATIONALE_COLUMN: r}) for row, r in zip(rows, rationales, strict=True)]
    tokenizer = encoder.tokenizer
    return read_digit_scores(
        model,
        prompts,
        encoder.digits,
        pad_token_id(tokenizer),
        groups=[str(row.get("dimension")) for row in rows],
        readout=readout,
    ).scores

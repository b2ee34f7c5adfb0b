"""Write a leaderboard dict as JSON, CSV and the static HTML page."""

from __future__ import annotations

import csv
import io
import json
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.leaderboard.page import render_page
from mis_bench_dataset.toolkit.atomic import AtomicFiles
from mis_bench_dataset.toolkit.ownership import OutputFolder, as_output_folder
from mis_bench_dataset.toolkit.text_safety import escape_csv

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LeaderboardFiles:
    json: Path
    csv: Path
    html: Path


def csv_rows(board: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One flat row per ranked entry, then the floor baselines with an empty rank, then the unranked entries
    with their coverage and no figure (fractions as the JSON publishes them; every text cell made
    spreadsheet-safe: no cell starts a formula)."""
    rows = [_figure_row(entry, board) for entry in [*board["entries"], *board.get("floors", [])]]
    columns = list(rows[0]) if rows else ["rank", "model"]
    for entry in board.get("unranked", []):
        row = dict.fromkeys(columns)
        row.update({key: entry.get(key) for key in ("model", "backend", "modality", "prompt_style", "file")})
        row.update(status="unranked: " + entry["reason"], answered_rate=entry["answered_rate"])
        outcomes = entry.get("outcomes") or {}
        counts = outcomes.get("overall") or {}
        row.update({kind: counts.get(kind) for kind in ("unparsed", "truncated", "failed")})
        for dim in board["dimensions"]:
            dim_counts = (outcomes.get("dimensions") or {}).get(dim["key"]) or {}
            row[f"{dim['key']}_truncated"] = dim_counts.get("truncated")
        rows.append(row)
    return [{key: escape_csv(v) if isinstance(v, str) else v for key, v in row.items()} for row in rows]


def _figure_row(entry: Mapping[str, Any], board: Mapping[str, Any]) -> dict[str, Any]:
    scores, overall = entry["scores"], entry["scores"]["overall"]
    ci = overall.get("icc_ci") or [None, None]
    row = {
        "rank": entry["rank"],
        "status": "floor" if entry.get("floor") else "ranked",
        "model": entry["model"],
        "backend": entry["backend"],
        "method": entry.get("method", ""),
        "modality": entry["modality"],
        "prompt_style": entry["prompt_style"],
        "few_shot_k": entry["few_shot_k"],
        "input_source": entry["input_source"],
        "options": entry.get("options") or "",
        "overall_icc": overall.get("icc"),
        "overall_ci_low": ci[0],
        "overall_ci_high": ci[1],
        "overall_mse": overall.get("mse"),
        "excluded_rate": overall.get("excluded_rate"),
        "mean_icc": scores.get("mean_icc"),
        "p_vs_leader": (entry.get("vs_leader") or {}).get("p_value"),
    }
    halo = scores.get("halo") or {}
    row["halo"] = (halo.get("model") or {}).get("value")
    row["halo_gold"] = (halo.get("gold") or {}).get("value")
    agreement = overall.get("agreement") or {}
    for key in ("icc2_1", "krippendorff_alpha", "bias", "loa_low", "loa_high", "sd_ratio"):
        row[f"overall_{key}"] = (agreement.get(key) or {}).get("value")
    outcomes = entry.get("outcomes") or {}
    for kind in ("unparsed", "truncated", "failed"):  # counts as the run recorded them; empty without outcomes
        row[kind] = (outcomes.get("overall") or {}).get(kind)
    for dim in board["dimensions"]:
        block = scores["dimensions"].get(dim["key"]) or {}
        dim_ci = block.get("icc_ci") or [None, None]
        row[f"{dim['key']}_icc"] = block.get("icc")
        row[f"{dim['key']}_ci_low"], row[f"{dim['key']}_ci_high"] = dim_ci
        row[f"{dim['key']}_mse"] = block.get("mse")
        for key in ("icc2_1", "bias"):
            row[f"{dim['key']}_{key}"] = ((block.get("agreement") or {}).get(key) or {}).get("value")
        row[f"{dim['key']}_parse_rate"] = entry["parse_rates"].get(dim["key"])
        row[f"{dim['key']}_truncated"] = ((outcomes.get("dimensions") or {}).get(dim["key"]) or {}).get("truncated")
    row.update(
        synthetic=entry["synthetic"],
        dataset_fingerprint=entry["dataset_fingerprint"],
        submitted_at=entry.get("submitted_at"),
        answered_rate=1.0,
        file=entry["file"],
    )
    return row


def csv_text(board: Mapping[str, Any]) -> str:
    rows = csv_rows(board)
    buffer = io.StringIO()
    fieldnames = list(dict.fromkeys(key for row in rows for key in row)) or ["rank", "model"]
    writer = csv.DictWriter(buffer, fieldnames=fieldnames, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue()


def json_text(board: Mapping[str, Any]) -> str:
    return json.dumps(board, indent=1, ensure_ascii=False, allow_nan=False) + "\n"


LEADERBOARD_WRITER = "leaderboard"
LEADERBOARD_FILES = ("leaderboard.json", "leaderboard.csv", "index.html")


def write_leaderboard(
    board: Mapping[str, Any],
    out_dir: str | Path | OutputFolder,
    *,
    title: str = "MIS-Bench leaderboard",
    inputs: Iterable[str | Path] = (),
    command: str = "leaderboard",
) -> LeaderboardFiles:
    """Write leaderboard.json, leaderboard.csv and index.html into `out_dir`, replacing only its own earlier ones."""
    folder = as_output_folder(out_dir, command, inputs)
    json_path, csv_path, html_path = folder.claim_all(LEADERBOARD_FILES, LEADERBOARD_WRITER)
    with AtomicFiles() as files:  # the three appear together, or none changes
        files.write(json_path, json_text(board))
        files.write(csv_path, csv_text(board))
        files.write(html_path, render_page(board, title=title))
    logger.info("leaderboard: %d ranked, %d rejected -> %s", len(board["entries"]), len(board["rejected"]), folder.root)
    return LeaderboardFiles(json_path, csv_path, html_path)

"""`mis-bench run --perturb`: a judge run again under perturbations, its shift tables written beside its runs.

With a model (`--backend/--model`) the harness runs every perturbed arm and reads the unperturbed one from the
response cache (`harness.perturbed`); without one, the text ridge of the default job is asked again with each
evaluated transcript perturbed (`baselines.perturbed_ridge`). Either way the same three files land in
`OUT/perturbations/<judge>/`: `shifts.json` (every table, with how it resampled), `shifts.md` (the tables) and
`sensitivity.png` (the figure); they are this command's own files, replaced only by a rerun of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_scripts.answers.perturbations import DEFAULT_PERTURB_SEED, PERTURBATIONS, parse_perturbations
from mis_bench_dataset.toolkit.text_safety import slug
from mis_icc_metric.resampling_options import DEFAULT_RESAMPLING, ResamplingOptions

WRITER = "perturb"
SHIFTS_JSON, SHIFTS_MD, FIGURE = "shifts.json", "shifts.md", "sensitivity.png"


@dataclass(frozen=True)
class ShiftFiles:
    json: Path
    markdown: Path
    figure: Path


def write_shifts(out: str | Path, judge: str, doc: Mapping[str, Any], *, title: str) -> ShiftFiles:
    """The three files of one judge's shift tables under `out/perturbations/<judge>/`."""
    import json

    from eval_scripts.report.sensitivity_view import (
        resampling_sentence,
        sensitivity_figure,
        shift_table_lines,
        variance_table_lines,
    )
    from mis_bench_dataset.toolkit.atomic import AtomicFiles
    from mis_bench_dataset.toolkit.jsonio import json_safe
    from mis_bench_dataset.toolkit.ownership import OutputFolder

    folder = OutputFolder(out, command="run")
    base = f"perturbations/{slug(judge)}"
    paths = folder.claim_all([f"{base}/{name}" for name in (SHIFTS_JSON, SHIFTS_MD, FIGURE)], WRITER)
    tables = doc["perturbations"]
    described = "\n".join(f"- `{name}`: {PERTURBATIONS[name].description}" for name in tables)
    parts = [f"# {title}", "", described, "", *shift_table_lines(tables), "", resampling_sentence(tables), ""]
    if doc.get("variance"):
        parts += ["## Every source of variance", "", *variance_table_lines(doc["variance"]), ""]
    markdown = "\n".join(parts)
    with AtomicFiles() as files:
        files.write(paths[0], json.dumps(json_safe(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
        files.write(paths[1], markdown)
        sensitivity_figure(tables, paths[2], title=title, files=files)
    return ShiftFiles(*paths)


def ridge_perturbations(
    dataset,
    out: str | Path,
    perturbations: str | Sequence[str],
    *,
    split: str = "test",
    perturb_seed: int = DEFAULT_PERTURB_SEED,
    resampling: ResamplingOptions = DEFAULT_RESAMPLING,
) -> tuple[dict[str, Any], ShiftFiles]:
    """The text ridge's shift tables under each transcript perturbation: fitted once on the train split's
    unperturbed transcripts, asked again with each evaluated transcript perturbed (seeded by `perturb_seed`), the
    shifts resampled as `resampling` says; written to `out/perturbations/<judge>/` (`shifts.json`, `shifts.md`,
    `sensitivity.png`, replaced only by a rerun). Returns the tables and the files."""
    from eval_scripts.baselines.perturbed_ridge import ridge_sensitivity

    names = parse_perturbations(perturbations)
    doc = ridge_sensitivity(
        dataset,
        names,
        split=split,
        perturb_seed=perturb_seed,
        resampling=resampling,
    )
    return doc, write_shifts(out, "text-ridge", doc, title="Text ridge under transcript perturbations")


def model_perturbations(
    config,
    perturbations: str | Sequence[str],
    *,
    perturb_seed: int = DEFAULT_PERTURB_SEED,
    resample: str | None = None,
    backend=None,
):
    """A model setting under each perturbation (`harness.perturbed.run_perturbed`), its tables written."""
    from eval_scripts.harness.perturbed import run_perturbed

    runs = run_perturbed(config, perturbations, backend=backend, perturb_seed=perturb_seed, resample=resample)
    files = None
    if runs.tables:
        base = runs.unperturbed
        doc = {
            "system": f"{base.config.model} ({base.label})",
            "unperturbed_run": str(base.run_dir),
            "runs": {name: str(arm.run_dir) for name, arm in runs.arms.items()},
            "perturb_seed": perturb_seed,
            "perturbations": runs.tables,
        }
        variance = _variance(runs, base.config)
        if variance:
            doc["variance"] = variance
        judge = f"{base.config.model}-{Path(base.run_dir).name}"
        files = write_shifts(
            base.config.out, judge, doc, title=f"{base.config.model}, {base.label}, under perturbations"
        )
    return runs, files


def _samples(run) -> list[dict]:
    """Each sample's scores of a repeated-sample run (its readouts.json), or none."""
    import json

    if run.readouts_path is None or run.config.samples < 2:
        return []
    rows = json.loads(Path(run.readouts_path).read_text(encoding="utf-8"))["rows"]
    return [
        {(row["video_id"], row["dimension"]): (row["values"][s] if s < len(row["values"]) else None) for row in rows}
        for s in range(run.config.samples)
    ]


def _variance(runs, config) -> dict[str, Any] | None:
    """Every source of variance when the paraphrase arms (or repeated samples) exist: `variance_sources`."""
    from eval_scripts.answers.perturbations import PARAPHRASE_PERTURBATIONS
    from eval_scripts.harness.perturbed import arm_predictions
    from mis_icc_metric.variance_table import variance_sources

    paraphrases = [name for name in PARAPHRASE_PERTURBATIONS if name in runs.arms]
    samples = _samples(runs.unperturbed)
    if not paraphrases and not samples:
        return None
    prompts = {"unperturbed": arm_predictions(runs.unperturbed)}
    prompts.update({name: arm_predictions(runs.arms[name]) for name in paraphrases})
    return variance_sources(
        prompts, runs.references, samples=samples, n_bootstrap=max(1, config.n_bootstrap), seed=config.seed
    )

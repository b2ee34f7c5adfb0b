"""`mis-bench score` and `mis-bench compare`: the metric from the command line.

Top-level imports stay light so `mis-bench --help` is fast.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from eval_scripts.cli.args import (
    add_bootstrap,
    add_by,
    add_confidence,
    add_json,
    add_resample,
    add_seed,
    existing,
    print_json,
    say,
    shown,
)
from eval_scripts.cli.common_options import add_out, add_predictions, add_references, add_split, require_resamples
from eval_scripts.report.formatting import floor_sentence, signed_pct, withheld_cell, withheld_lines
from mis_bench_dataset.dimensions import DIMENSION_BY_KEY
from mis_bench_dataset.toolkit.numbers import MISSING, ci_pct, num, pct, signed
from mis_icc_metric.coverage import DEFAULT_MISSING, MISSING_POLICIES
from mis_icc_metric.resampling_options import ResamplingOptions


def register(subparsers: argparse._SubParsersAction) -> None:
    score = subparsers.add_parser(
        "score",
        help="score predictions against gold: ICC(3,1) per dimension and overall, with bootstrap CIs",
        description="Score one system's predictions with the benchmark's ICC(3,1) rules (paper §3.3).",
    )
    add_predictions(
        score, "predictions file: CSV/JSONL long (video_id, dimension, prediction) or wide, or a results JSON"
    )
    _add_common(score)
    score.add_argument(
        "--retest",
        type=existing("file"),
        default=None,
        help="predictions of a second run of the same model and setting: the judge's test-retest ICC(3,1) "
        "between the two runs, beside its agreement with the experts (default: none)",
    )
    score.add_argument(
        "--common-videos",
        type=existing("file"),
        default=None,
        help="text file with one video id per line: also score on this common set (default: none)",
    )
    score.add_argument(
        "--raters",
        type=existing("file"),
        default=None,
        metavar="LABELS",
        help="per-rater labels (video_id, rater, dimension, score): also compare the model with each rater, "
        "leave one rater out, and run the Appendix B certification rule (default: none)",
    )
    add_by(score)
    score.set_defaults(func=run_score)

    compare = subparsers.add_parser(
        "compare",
        help="paired bootstrap comparison of two systems (ICC difference, CI, p-value)",
        description="Paired bootstrap of ICC(A) - ICC(B) on the videos both systems parsed.",
    )
    compare.add_argument("a", nargs="?", type=existing("file"), help="predictions of system A (or --predictions A B)")
    compare.add_argument("b", nargs="?", type=existing("file"), help="predictions of system B")
    add_predictions(
        compare,
        "the two systems' predictions, A then B (the same as the positional A B) (default: the positionals)",
        required=False,
        nargs=2,
    )
    _add_common(compare)
    compare.set_defaults(func=run_compare)


def _add_common(parser: argparse.ArgumentParser) -> None:
    add_references(parser, "built dataset folder (mis-bench build --out) or a labels CSV (per-rater or gold)")
    add_split(parser, "judge", "when --references is a folder")
    add_bootstrap(parser)
    add_resample(parser)
    add_seed(parser)
    add_confidence(parser)
    parser.add_argument(
        "--missing",
        choices=MISSING_POLICIES,
        default=DEFAULT_MISSING,
        help="a gold pair the predictions do not name: not-asked (default: not evaluated; the overall score "
        "uses only videos with all eight dimensions asked), unparsed (counted as unparsed) or error",
    )
    add_out(parser, "file", "also write the full result as JSON there (default: no file)")
    add_json(parser, what="the full result")


def _pct(value: float | None, width: int = 5) -> str:
    return pct(value).rjust(width)


def _ci(ci: list | None, reason: str | None = None) -> str:
    """`[ 61.0,  68.0]`, aligned in columns; blank when undefined; "withheld: ..." where the one rule withheld it."""
    if reason:
        return withheld_cell(reason).ljust(14)
    return "".ljust(14) if ci_pct(ci) == MISSING else f"[{pct(ci[0]):>5}, {pct(ci[1]):>5}]"


def _why(entry: dict | None, key: str) -> str | None:
    """Why `entry`'s figure `key` was withheld (`mis_icc_metric.reporting_floor`), or None."""
    return ((entry or {}).get("withheld") or {}).get(key)


def _withheld_lines(rows: list[tuple[str, dict | None]], keys: tuple[str, ...]) -> list[str]:
    """The full reason of every withheld figure of `rows` ((label, entry) pairs), one line per reason."""
    return withheld_lines([(label, _why(entry, key)) for label, entry in rows for key in keys if _why(entry, key)])


def _num(value: float | None, digits: int = 3) -> str:
    return num(value, digits)


def format_score_table(result: dict) -> str:
    """Dimensions as rows (paper abbreviations), ICC % with CI, MSE, n, parse rate, Table 2 ceiling."""
    lines = [
        f"{'dim':<6} {'ICC %':>6} {'95% CI':<14} {'MSE':>6} {'n':>5} {'clin.':>5} {'deff':>5} {'parsed':>7}   "
        f"{'human ceiling (Table 2)':<24}"
    ]
    for entry in result["dimensions"].values():
        ceiling = entry["human_ceiling"]
        lines.append(
            f"{entry['abbreviation']:<6} {_pct(entry['icc'], 6)} {_ci(entry['icc_ci'], _why(entry, 'icc_ci'))} "
            f"{_num(entry['mse']):>6} "
            f"{entry['n']:>5} {_clusters(entry)} {_pct(entry['parse_rate'], 6)}%   {_pct(ceiling['icc'])} "
            f"{_ci(ceiling['icc_ci'])}" + (f"  ({entry['note']})" if entry.get("note") else "")
        )
    overall = result["overall"]
    if overall["n_total"]:
        lines.append(
            f"{'All':<6} {_pct(overall['icc'], 6)} {_ci(overall['icc_ci'], _why(overall, 'icc_ci'))} "
            f"{_num(overall['mse']):>6} "
            f"{overall['n']:>5} excluded {_pct(overall['excluded_rate'], 4).strip()}% of {overall['n_total']} videos"
        )
    else:
        lines.append(f"{'All':<6} {MISSING:>6}  ({overall.get('note') or 'no overall score'})")
    mean_ci = _ci(result["mean_icc_ci"], _why(result, "mean_icc_ci")).strip()
    lines.append(f"Mean ICC over dimensions: {_pct(result['mean_icc']).strip()} {mean_ci}")
    rows = [(e["abbreviation"], e) for e in result["dimensions"].values()]
    rows += [("All", overall), ("Mean ICC", result)]
    lines += _withheld_lines(rows, ("icc_ci", "mean_icc_ci"))
    lines += _undefined_line(rows[:-1], result["meta"])
    lines.append(_resampling_line(result["meta"]))
    if result.get("coverage"):
        lines.append(f"Coverage: {result['coverage']['sentence']}; parse rates are over the asked pairs.")
    imputed = result["midpoint_imputation"]
    if imputed["n_imputed"]:
        lines.append(
            f"Sensitivity, {imputed['n_imputed']} unparsed imputed with {imputed['value']}: overall "
            f"{_pct(imputed['overall']['icc']).strip()} "
            f"{_ci(imputed['overall']['icc_ci'], _why(imputed['overall'], 'icc_ci')).strip()}, "
            f"mean ICC {_pct(imputed['mean_icc']).strip()}"
        )
    common = result.get("common_set")
    if common:
        lines.append(
            f"Common set of {common['n_videos']} videos: overall {_pct(common['overall']['icc']).strip()} "
            f"{_ci(common['overall']['icc_ci'], _why(common['overall'], 'icc_ci')).strip()}, mean ICC "
            f"{_pct(common['mean_icc']).strip()}"
        )
    return "\n".join(lines)


def _clusters(entry: dict) -> str:
    """`clin.` and `deff` cells: the clinicians behind an entry and its design effect (blank when unknown)."""
    n_clusters = entry.get("n_clusters")
    effect = entry.get("design_effect")
    return f"{'' if n_clusters is None else n_clusters:>5} {'' if effect is None else num(effect, 2):>5}"


def _by_whom(result: dict) -> str:
    plan = result["meta"].get("resampling")
    return f" by {plan['unit']}" if plan else ""


def _resampling_line(meta: dict) -> str:
    """What made the CIs, what `clin.` and `deff` mean, and what the numbers are for: every table says it."""
    from mis_bench_dataset.wording import RESEARCH_USE

    purpose = f"{RESEARCH_USE[0].upper()}{RESEARCH_USE[1:]}."
    plan = meta.get("resampling")
    if not plan:
        return f"No CIs (no bootstrap). clin.: clinicians behind the pairs.\n{purpose}"
    drawn = "clinicians, each with all its videos" if plan["unit"] == "clinician" else "videos, as if independent"
    return (
        f"CIs: {plan['n_resamples']:,} bootstrap resamples of the {plan['n_clusters']} {drawn} (--resample)."
        f"{floor_sentence(meta)}\n"
        "clin.: clinicians behind the pairs; deff: design effect, the variance resampling clinicians over resampling"
        f" videos.\n{purpose}"
    )


def _stat(block: dict, key: str) -> float | None:
    return (block.get(key) or {}).get("value")


def format_agreement_table(result: dict) -> str:
    """The other agreement statistics per dimension and overall, one line each (ICC(3,1) is the table above).

    ICC forms, alpha and the correlations in percent; MAE, bias and the 95% limits of agreement in score
    points; range use as the sd ratio model / expert, the percent of answers on whole points and the number
    of distinct answers.
    """
    lines = [
        "Agreement beyond ICC(3,1) (model vs gold; ICC, alpha, r, rho in %; MAE, bias, limits in score points):",
        f"{'dim':<6} {'ICC(2,1)':>8} {'ICC(1,1)':>8} {'alpha':>6} {'r':>6} {'rho':>6} {'MAE':>6} {'bias':>6} "
        f"{'95% limits of agr.':<18} {'sd ratio':>8} {'int %':>6} {'values':>6}",
    ]
    rows = [(e["abbreviation"], e.get("agreement") or {}) for e in result["dimensions"].values()]
    rows.append(("All", result["overall"].get("agreement") or {}))
    for label, block in rows:
        low, high = _stat(block, "loa_low"), _stat(block, "loa_high")
        limits = MISSING if num(low) == MISSING else f"[{signed(low)}, {signed(high)}]"
        lines.append(
            f"{label:<6} {_pct(_stat(block, 'icc2_1'), 8)} {_pct(_stat(block, 'icc1_1'), 8)} "
            f"{_pct(_stat(block, 'krippendorff_alpha'), 6)} {_pct(_stat(block, 'pearson'), 6)} "
            f"{_pct(_stat(block, 'spearman'), 6)} {_num(_stat(block, 'mae')):>6} {signed(_stat(block, 'bias')):>6} "
            f"{limits:<18} {_num(_stat(block, 'sd_ratio'), 2):>8} {_pct(_stat(block, 'integer_share'), 6)} "
            f"{num(_stat(block, 'n_distinct'), 0):>6}"
        )
    if result.get("halo"):
        from eval_scripts.report.agreement import halo_cells

        model, gold, pairs = halo_cells(result)
        lines.append(
            f"Halo (mean correlation between dimensions over videos, {pairs} dimension pairs): model {model}, "
            f"expert gold {gold} on the same pairs"
        )
    return "\n".join(lines)


def format_raters_table(raters: dict) -> str:
    """The model as one more rater: per dimension its ICC(3,1) % with each rater, the raters' with each
    other, the raters together (Table 2's ceiling), leave one rater out; then the certification rule."""
    names = raters["raters"]
    lines = [
        f"The model as one more rater ({', '.join(names) or 'no common raters'}; {raters['n_panel_videos']} "
        "fully rated videos; ICC(3,1) %):"
    ]
    if raters.get("note"):
        lines.append(f"  {raters['note']}")
    if names:
        model_cols = " ".join(f"{'M-' + r:>7}" for r in names)
        loo_cols = " ".join(f"{'Δ-' + r:>7}" for r in names)
        lines.append(f"{'dim':<6} {'n':>4} {model_cols} {'mean':>6}  {'raters':>6} {'pairs':>6}  {loo_cols}")
        for key, entry in raters["dimensions"].items():
            model = " ".join(_pct((entry["model_vs_rater"].get(r) or {}).get("icc"), 7) for r in names)
            loo = " ".join(signed_pct((entry["leave_one_out"].get(r) or {}).get("delta")).rjust(7) for r in names)
            lines.append(
                f"{DIMENSION_BY_KEY[key].abbreviation:<6} {entry['n']:>4} {model} "
                f"{_pct(entry['mean_model_vs_rater'], 6)}  {_pct(entry['raters_icc']['icc'], 6)} "
                f"{_pct(entry['mean_rater_vs_rater'], 6)}  {loo}"
            )
        lines.append(
            "M-R: model vs rater R; raters: all raters together (the Table 2 ceiling on these videos); pairs: mean "
            "of the rater-vs-rater ICCs; Δ-R: leave rater R out, the model in its place: that ICC minus the raters'."
        )
    cert = raters["certification"]
    where = f", clips {cert['best_run_clips'][0]} to {cert['best_run_clips'][1]}" if cert["best_run_clips"] else ""
    lines.append(
        f"Appendix B certification: {'PASSED at ' + cert['certified_at'] if cert['passed'] else 'not passed'}; "
        f"best run {cert['best_run']} clip(s){where}; {cert['n_passing']} of {cert['n_clips']} clips above "
        f"{cert['threshold']}."
    )
    lines.append(f"  rule: {cert['rule']}; clips in {cert['order']}.")
    return "\n".join(lines)


def format_compare_table(result: dict) -> str:
    names = result["systems"]
    lines = [
        f"{'dim':<6} {'ICC A %':>8} {'ICC B %':>8} {'A-B':>6} {'95% CI':<14} {'p':>7} {'n':>5} {'clin.':>5} {'deff':>5}"
    ]
    rows = [(e["abbreviation"], e) for e in result["dimensions"].values()]
    rows += [("All", result["overall"]), ("Mean", {**result["mean_icc"], "n": None})]
    for label, entry in rows:
        lines.append(
            f"{label:<6} {_pct(entry['icc_a'], 8)} {_pct(entry['icc_b'], 8)} {_pct(entry['delta'], 6)} "
            f"{_ci(entry['delta_ci'], _why(entry, 'delta_ci'))} {_p_cell(entry):>7} "
            f"{'' if entry['n'] is None else entry['n']:>5} {_clusters(entry)}"
        )
    lines += _withheld_lines(rows, ("delta_ci", "p_value"))
    unit = (result["meta"].get("resampling") or {}).get("unit", "video")
    lines.append(
        f"A = {names['a']}, B = {names['b']}; ICC in percent, paired bootstrap resampling {unit}s (the same draws for"
        " both systems) over the videos both parsed."
    )
    lines.append(_resampling_line(result["meta"]))
    return "\n".join(lines)


def _undefined_line(rows: list[tuple[str, dict]], meta: dict) -> list[str]:
    """How many resamples left an ICC undefined (left out of its CI; past the rule's share the CI is withheld)."""
    counts = [(label, entry.get("n_bootstrap_undefined")) for label, entry in rows]
    counts = [f"{label} {count:,}" for label, count in counts if count]
    if not counts:
        return []
    total = (meta.get("resampling") or {}).get("n_resamples")
    return [f"Resamples with an undefined ICC (left out of its CI), of {total:,}: {', '.join(counts)}."]


def _p_cell(entry: dict) -> str:
    """A p-value, or "withheld" where the one rule withheld it (its reason is printed under the table)."""
    return "withheld" if _why(entry, "p_value") else _num(entry["p_value"], 4)


def _claim_json(args: argparse.Namespace, *inputs: Path | None) -> Path | None:
    """The --out path, checked before any work: never an input, never a file another writer made."""
    if args.out is None:
        return None
    from mis_bench_dataset.toolkit.ownership import claim_file

    return claim_file(
        args.out,
        command=args.command,
        writer=f"{args.command}-json",  # the writer's name of files written before --out replaced --json FILE
        arg="--out",
        inputs=[p for p in inputs if p is not None],
    )


def _text(args: argparse.Namespace):
    """Where the human summary goes: stdout, or nowhere with --json (stdout then carries only the JSON)."""
    return (lambda *_, **__: None) if args.json else say


def _finish(args: argparse.Namespace, path: Path | None, payload: dict) -> None:
    """The result: printed as strict JSON with --json, and written to --out FILE when given."""
    from eval_scripts.cli.args import strict_json

    if path is not None:
        from mis_bench_dataset.toolkit.atomic import write_atomic

        write_atomic(path, strict_json(payload) + "\n")
        say(f"wrote {shown(path)}", err=args.json)
    if args.json:
        print_json(payload)


def _mark_synthetic(args: argparse.Namespace, result: dict, *predictions: Path) -> bool:
    """`synthetic` at the top of the result (the build report's rule, `formats.data_names`); the mark line."""
    from eval_scripts.formats.data_names import any_synthetic
    from mis_bench_dataset.wording import SYNTHETIC_LINE

    synthetic = any_synthetic([args.references, *predictions])
    result["synthetic"] = synthetic
    if synthetic:
        _text(args)(SYNTHETIC_LINE)
    return synthetic


def _data_name(args: argparse.Namespace) -> str:
    from eval_scripts.formats.data_names import build_name

    return shown(build_name(args.references) if Path(args.references).is_dir() else args.references)


def _load(args: argparse.Namespace, *prediction_paths: Path):
    """References, one mapping per predictions file (its pairs with gold) and, per file, what was left aside: a
    judge on every video is scored on the videos that have gold; a file with no pair that has gold is an error
    naming its file and row (the wrong references)."""
    from mis_icc_metric.predictions_io import (
        gold_pairs_only,
        predictions_to_mapping,
        read_prediction_file,
        read_references,
    )

    references = read_references(args.references, split=args.split)
    where = f"split {args.split!r} of {args.references}" if Path(args.references).is_dir() else str(args.references)
    predictions, left_aside = [], []
    for path in prediction_paths:
        file = read_prediction_file(path)
        kept, aside = gold_pairs_only(file, references, where)
        for note in file.notes:
            say(f"note: {shown(path)}: {note}", err=args.json)
        if aside["n_pairs"]:
            say(f"note: {shown(path)}: {_aside_sentence(aside)}", err=args.json)
        predictions.append(predictions_to_mapping(kept))
        left_aside.append(aside)
    return references, predictions, left_aside


def _aside_sentence(aside: dict) -> str:
    """`left aside 7,168 predicted pairs (896 videos) with no gold in ...: scored on the pairs with gold`."""
    examples = ", ".join(shown(v) for v in aside["examples"])
    return (
        f"left aside {aside['n_pairs']:,} predicted pair(s) ({aside['n_videos']:,} video(s), e.g. {examples}) with "
        f"{aside['why']}: scored on the pairs that have gold"
    )


def run_score(args: argparse.Namespace) -> int:
    from mis_icc_metric.scoring import score_predictions

    json_path = _claim_json(args, args.predictions, args.references, args.common_videos, args.raters, args.retest)
    references, (predictions,), (left_aside,) = _load(args, args.predictions)
    raters = None
    if args.raters is not None:
        from mis_bench_dataset.release.labels import read_labels

        raters = read_labels(args.raters)  # a BuildError (a DataError) names the file
    common = None
    if args.common_videos is not None:
        from mis_icc_metric.predictions_io import read_video_ids

        common = read_video_ids(args.common_videos)
    result = score_predictions(
        predictions,
        references,
        resampling=ResamplingOptions(
            n_bootstrap=args.bootstrap, seed=args.seed, resample=args.resample, confidence=args.confidence
        ),
        common_videos=common,
        missing=args.missing,
    )
    result["meta"].update(predictions_file=str(args.predictions), references=str(args.references), split=args.split)
    result["left_aside"] = left_aside
    if raters is not None:
        from mis_icc_metric.raters import model_as_rater

        result["model_as_rater"] = model_as_rater(predictions, references, raters, confidence=args.confidence)
    text = _text(args)
    text(
        f"MIS-Bench ICC(3,1): {shown(args.predictions)} vs {_data_name(args)}"
        f" ({result['meta']['n_videos']} videos, {args.bootstrap} bootstrap resamples{_by_whom(result)}, seed"
        f" {args.seed})"
    )
    _mark_synthetic(args, result, args.predictions)
    text(format_score_table(result))
    text("")
    text(format_agreement_table(result))
    if raters is not None:
        text("")
        text(format_raters_table(result["model_as_rater"]))
    _add_stability(args, result, predictions, references)
    if args.by:
        _add_subgroups(args, result, predictions, references)
    _finish(args, json_path, result)
    return 0


def _add_subgroups(args: argparse.Namespace, result: dict, predictions: dict, references: dict) -> None:
    """`--by`: the subgroup and therapist-level agreement, from the score's own draw (same seed, same resampling,
    same videos), added to `result` and printed."""
    from eval_scripts.report.subgroups import (
        equal_bias_table,
        plain_text,
        subgroup_paragraphs,
        subgroup_table,
        therapist_paragraphs,
        therapist_table,
    )
    from mis_bench_dataset.video_ids import THERAPIST_LEVEL
    from mis_icc_metric.groups import agreement_by

    draw = ResamplingOptions(
        n_bootstrap=args.bootstrap, seed=args.seed, resample=args.resample, confidence=args.confidence
    )
    text = _text(args)
    for by in args.by:
        text("")
        grouped = agreement_by(predictions, references, by, resampling=draw, missing=args.missing)
        if by == THERAPIST_LEVEL:
            result["therapist_level"] = grouped
            text(plain_text(therapist_table(grouped)))
            paragraphs = therapist_paragraphs(grouped)
        else:
            result.setdefault("subgroups", {})[by] = grouped
            text(plain_text(subgroup_table(grouped)))
            text("")
            text(plain_text(equal_bias_table(grouped)))
            paragraphs = subgroup_paragraphs(grouped)
        for paragraph in paragraphs[:-1]:  # the last says what they are for, which the score's table said already
            text(paragraph)


def _block_line(what: str, block: dict | None) -> str | None:
    if not block:
        return None
    if block.get("withheld") and block.get("icc") is None:  # the whole figure withheld, not only its CI
        return f"  {what}: withheld: {block['withheld']}"
    ci = f" {_ci(block.get('ci'), block.get('withheld')).strip()}" if block.get("ci") or block.get("withheld") else ""
    left = f", {block['n_left_out']} left out" if block.get("n_left_out") else ""
    return f"  {what}: ICC(3,1) {_pct(block.get('icc')).strip()}{ci} over {block.get('n', 0)} rows{left}"


def _add_stability(args: argparse.Namespace, result: dict, predictions: dict, references: dict) -> None:
    """The judge's agreement with itself (the run's readouts.json, a --retest run), printed and added to `result`."""
    from eval_scripts.harness.readout_agreement import read_readouts, readouts_summary, run_agreement

    readouts = read_readouts(args.predictions.parent)
    lines = []
    if readouts is not None:
        summary = readouts_summary(readouts, references)
        result["readouts"] = summary
        agreement = summary["agreement"]
        lines += [
            _block_line(
                f"text vs {summary.get('score_from') or 'expected'} readout", agreement.get("text_vs_expected")
            ),
            _block_line("test-retest, sample 1 vs 2", agreement.get("test_retest")),
            _block_line("test-retest of the answers' texts, sample 1 vs 2", agreement.get("text_test_retest")),
        ]
        spread = agreement.get("spread") or {}
        if spread.get("rows"):
            lines.append(
                f"  spread per row: mean SD {_num(spread['mean_sd'])}, samples differ on "
                f"{_pct(spread['share_differing']).strip()}% of {spread['rows']} rows, largest range "
                f"{_num(spread['max_range'], 1)}"
            )
        for name, experts in (summary.get("with_experts") or {}).items():
            lines.append(
                f"  {name} readout vs experts: overall ICC {_pct(experts['overall_icc']).strip()}, "
                f"mean ICC {_pct(experts['mean_icc']).strip()}"
            )
    if args.retest is not None:
        from mis_icc_metric.predictions_io import predictions_to_mapping, read_predictions

        second = predictions_to_mapping(read_predictions(args.retest))
        result["retest"] = {"predictions_file": str(args.retest), **run_agreement(predictions, second)}
        lines.append(_block_line(f"test-retest vs {shown(args.retest)}", result["retest"]))
    lines = [line for line in lines if line]
    if lines:
        text = _text(args)
        text("")
        text(f"Judge stability ({readouts['score_from'] + ' readout, ' if readouts else ''}agreement with itself):")
        for line in lines:
            text(line)


def _pair(args: argparse.Namespace) -> tuple[Path, Path]:
    """System A's and B's predictions, given as the positionals A B or as `--predictions A B`."""
    from mis_bench_dataset.toolkit.errors import UsageError

    positional = [path for path in (args.a, args.b) if path is not None]
    if args.predictions is not None and positional:
        raise UsageError("predictions given twice", where="A B", hint="give either A B or --predictions A B")
    pair = args.predictions or positional
    if len(pair) != 2:
        raise UsageError("compare needs two predictions files", where="A B", hint="give A B (or --predictions A B)")
    return pair[0], pair[1]


def run_compare(args: argparse.Namespace) -> int:
    args.a, args.b = _pair(args)
    require_resamples(args.bootstrap, "a paired comparison")
    from mis_icc_metric.paired import paired_comparison

    json_path = _claim_json(args, args.a, args.b, args.references)
    references, (pred_a, pred_b), left_aside = _load(args, args.a, args.b)
    result = paired_comparison(
        pred_a,
        pred_b,
        references,
        resampling=ResamplingOptions(
            n_bootstrap=args.bootstrap, seed=args.seed, resample=args.resample, confidence=args.confidence
        ),
        missing=args.missing,
        names=(str(args.a), str(args.b)),
    )
    result["meta"].update(references=str(args.references), split=args.split)
    result["left_aside"] = dict(zip(("a", "b"), left_aside, strict=True))
    where = f"split {args.split!r} of {_data_name(args)}" if Path(args.references).is_dir() else _data_name(args)
    _text(args)(f"Paired comparison on {where}:")
    _mark_synthetic(args, result, args.a, args.b)
    _text(args)(format_compare_table(result))
    _finish(args, json_path, result)
    return 0

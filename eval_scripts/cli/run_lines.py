"""What a model run prints, `mis-bench run` and `mis-bench batch import` alike: the summary (its `--json`), the
run line, the problems on stderr, the exit code; and the dry run's plan."""

from __future__ import annotations

from eval_scripts.cli.args import say, shown
from eval_scripts.formats.data_names import source_synthetic
from mis_bench_dataset.toolkit.numbers import pct
from mis_bench_dataset.wording import SYNTHETIC_LINE


def summary(result) -> dict:
    scores = result.scores or {}
    return {
        "setting": result.label,
        "input_source": result.input_source,
        "rows": result.n_rows,
        "cached": result.n_cached,
        "called": result.n_called,
        "failed": result.n_failed,
        "truncated": result.n_truncated,
        # answered rows without a score: the parser could not read it, or it lies outside [1, 5]
        "unparsed": result.n_unreadable,
        "out_of_range": result.n_out_of_range,
        # regression-head scores clipped to [1, 5] (scored, but not the head's own output)
        "clipped": result.n_clipped,
        "parsed": result.n_parsed,
        "parsed_rate": round(result.n_parsed / result.n_rows, 4) if result.n_rows else None,
        "failures": result.failures,
        "mean_icc": scores.get("mean_icc"),
        "overall_icc": (scores.get("overall") or {}).get("icc"),
        "usage": result.usage,
        "prefix": result.prefix.as_dict() if result.prefix else None,
        "score_from": result.config.decoding.score_from if result.config.decoding else "text",
        "samples": result.config.samples,
        "predictions": str(result.predictions_path),
        "results": str(result.results_path),
        "readouts": str(result.readouts_path) if result.readouts_path else None,
        "distribution_only": result.distribution_only,
        "servers": result.replicas,
        "served_models": result.served_models,
        "model_warnings": result.model_warnings,
        # the backend's own value (`--concurrency` or `-M concurrency=`), as its pool recorded it
        "concurrency_per_server": result.replicas[0]["concurrency"] if result.replicas else None,
        "seconds": round(result.elapsed_s, 2),
        # the build report's rule, carried in the results' dataset block (eval_scripts.formats.data_names)
        "synthetic": bool(source_synthetic(result.results_path)),
    }


def say_result(summary: dict, called: str = "called") -> None:
    say(
        f"{summary['setting']} [{summary['input_source']}]: {summary['rows']} rows ({summary['failed']} failed, "
        f"{summary['truncated']} truncated, {summary['unparsed']} unparsed, {summary['out_of_range']} out of range, "
        f"{summary['parsed']} parsed, {pct(summary['parsed_rate'])}%"
        + (f"; {summary['clipped']} clipped to [1, 5]" if summary.get("clipped") else "")
        + f"); requests: {summary['cached']} cached, {summary['called']} {called}; "
        f"mean ICC {pct(summary['mean_icc'])}%\n"
        f"{tokens_line(summary['usage'])}{prefix_line(summary['prefix'])}\n"
        f"predictions: {shown(summary['predictions'])}\nresults: {shown(summary['results'])}"
        + (
            f"\nreadouts ({summary['score_from']} score, {summary['samples']} sample(s) per row): "
            f"{shown(summary['readouts'])}"
            if summary.get("readouts")
            else ""
        )
        + _served_line(summary.get("served_models"))
        + _distribution_line(summary.get("distribution_only"))
        + _servers_line(summary.get("servers"), summary.get("concurrency_per_server"))
    )
    say_synthetic(summary["synthetic"])


def tokens_line(usage: dict | None) -> str:
    if not usage or not usage["requests"]:
        return "tokens: not reported"
    return (
        f"tokens: {usage['prompt_tokens']:,} prompt + {usage['completion_tokens']:,} completion "
        f"in {usage['requests']:,} responses"
    )


def prefix_line(prefix: dict | None) -> str:
    """`; prefix reuse ...` of the requests in the order sent (empty when none were sent)."""
    if not prefix or not prefix["requests"]:
        return ""
    return (
        f"; prefix reuse in the order sent: {pct(prefix['same_prefix_share'], 0)}% of requests share the "
        f"previous one's instructions ({pct(prefix['reused_chars_share'], 0)}% of prompt characters)"
    )


def _served_line(served: dict | None) -> str:
    """The model names the answers give (`model` of each response), when the server says."""
    if not served:
        return ""
    return "\nserved model: " + ", ".join(f"{name} ({count:,} answers)" for name, count in served.items())


def _distribution_line(reasons: dict | None) -> str:
    """The rows an expected-score run scored from the distribution though their text gives no score."""
    if not reasons:
        return ""
    shown_reasons = ", ".join(f"{reason}: {count}" for reason, count in reasons.items())
    return f"\nscored from the distribution, the text giving no score: {sum(reasons.values())} rows ({shown_reasons})"


def _servers_line(servers: list[dict] | None, concurrency: int | None) -> str:
    """Several servers: what each answered, failed and how often it was taken out (--concurrency is per server)."""
    if not servers:
        return ""
    each = "; ".join(
        f"{s['url']}: {s['answered']} answered, {s['failed']} failed"
        + (f", taken out {s['cool_downs']}x" if s["cool_downs"] else "")
        for s in servers
    )
    return f"\nservers: {len(servers)}, {concurrency} requests in flight per server (--concurrency): {each}"


def say_synthetic(synthetic: bool) -> None:
    if synthetic:
        say(SYNTHETIC_LINE)


def total_usage(entries) -> dict:
    """The token totals of a grid's settings, summed."""
    usages = [e.result.usage for e in entries if e.result is not None and e.result.usage]
    return {key: sum(u[key] for u in usages) for key in ("prompt_tokens", "completion_tokens", "requests")}


def total_prefix(entries) -> dict | None:
    """The prefix reuse of a grid's settings, run one after the other."""
    from eval_scripts.harness.ordering import PrefixStats

    stats = [e.result.prefix for e in entries if e.result is not None and e.result.prefix]
    return sum(stats, PrefixStats()).as_dict() if stats else None


def report_problems(result, *, command: str = "run") -> None:
    """On stderr: why requests failed (count per kind, one example each), and what to do about truncated answers
    (the warnings named after `mis-bench COMMAND`)."""
    from eval_scripts.harness.row_counts import TRUNCATION_HINT, failure_lines

    for warning in result.model_warnings:  # the served model is not the one asked for (backends.served_model)
        say(
            f"mis-bench {command}: warning: {result.label}: {warning} (recorded in {shown(result.results_path)}; "
            "--strict-model refuses such answers)",
            err=True,
        )
    if result.failures:
        say(f"{result.label}: {result.n_failed} request(s) failed, by kind:", err=True)
        for line in failure_lines(result.failures):
            say(line, err=True)
        say(
            f"  details per row: {shown(result.raw_responses_path)}; rerun the same command to retry only these",
            err=True,
        )
    if result.n_truncated:
        say(
            f"{result.label}: {result.n_truncated} answer(s) reached the token limit and were not scored "
            f"(max_new_tokens {result.config.decoding.max_new_tokens if result.config.decoding else '?'}); "
            f"{TRUNCATION_HINT}",
            err=True,
        )


def exit_code(results) -> int:
    """3 when any request of any setting failed (a rerun retries them; a grid follows the single-setting rule);
    else 1 (a DataError: one line, the counts by reason) when no row of some setting gave a score; else 0, whatever
    the parse rate (the run line gives it)."""
    from mis_bench_dataset.toolkit.errors import EXIT_REQUESTS, DataError, UsageError

    if not results:
        raise UsageError("every setting of the grid was refused", hint="see the reasons above")
    if any(r.n_failed for r in results):
        return EXIT_REQUESTS
    empty = [r for r in results if r.n_rows and not r.n_parsed]
    if empty:
        raise DataError(
            "no row gave a score in "
            + "; ".join(f"{r.label} ({_unscored_counts(r)})" for r in empty)
            + (f" ({len(empty)} of {len(results)} settings)" if len(results) > 1 else ""),
            where=", ".join(shown(r.raw_responses_path) for r in empty[:2]) + (", ..." if len(empty) > 2 else ""),
            hint=_unscored_hint(empty),
        )
    return 0


def _unscored_counts(result) -> str:
    """`32 rows: 30 truncated, 2 unparsed, 0 out of range, 0 failed`."""
    return (
        f"{result.n_rows} rows: {result.n_truncated} truncated, {result.n_unreadable} "
        f"unparsed, {result.n_out_of_range} out of range, {result.n_failed} failed"
    )


def _unscored_hint(results) -> str:
    from eval_scripts.harness.row_counts import TRUNCATION_HINT

    hints = []
    if any(r.n_truncated for r in results):
        hints.append(f"{TRUNCATION_HINT} (answers cut at the token limit)")
    if any(r.n_unparsed for r in results):
        hints.append("read the answers in raw_responses.jsonl: the model may not follow the prompt's format")
    return "; ".join(hints) or "see raw_responses.jsonl"


def say_dry_run(plan: dict, model: str) -> None:
    say(f"dry run of {model}: nothing was sent")
    for item in plan["settings"]:
        if "refused" in item:
            say(f"  {item['setting']}: refused: {item['refused']}")
            continue
        say(
            f"  {item['setting']} [{item['input_source']}]: {item['requests']:,} requests ({item['cached']:,} cached), "
            f"{item['prompt_chars']:,} prompt characters, ~{item['prompt_tokens_estimate']:,} prompt tokens, "
            f"~{item['completion_tokens_estimate']:,} completion tokens ({item['expected_completion_tokens']:,} "
            f"per request: {item['expected_completion_source']})"
        )
    line = (
        f"total: {plan['requests']:,} requests without a cached answer, {plan['cached']:,} cached; "
        f"~{plan['prompt_tokens_estimate']:,} prompt tokens ({plan['token_estimator']}), "
        f"~{plan['completion_tokens_estimate']:,} completion tokens (at most {plan['completion_tokens_max']:,})"
    )
    if plan["attachments"]:
        line += f"; {plan['attachments']:,} attachments (images/audio/video) not in the token estimate"
    say(line)
    if plan["cost_estimate"] is not None:
        say(
            f"estimated cost: {_money(plan['cost_estimate'])} (at most {_money(plan['cost_max'])}) at "
            f"${plan['price_in_per_million']:g} / ${plan['price_out_per_million']:g} per million prompt / "
            "completion tokens"
        )
    prefix = prefix_line(plan["prefix"])
    if prefix:
        say(prefix.removeprefix("; "))
    if plan.get("cost_estimate_with_cache") is not None:  # _register_prefix_caching
        say(
            f"with the provider's prompt cache: {_money(plan['cost_estimate_with_cache'])} (at most "
            f"{_money(plan['cost_max_with_cache'])}), ~{plan['cached_prompt_tokens_estimate']:,} prompt tokens "
            f"shared with the previous request at ${plan['price_cached_in_per_million']:g} per million"
        )


def _money(value: float | None) -> str:
    return "n/a" if value is None else f"${value:,.2f}"

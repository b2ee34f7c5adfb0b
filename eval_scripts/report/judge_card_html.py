"""The HTML of `mis-bench trust`'s page ("can I use this judge?"), from the card's JSON (`jobs.judge_card`).

A self-contained page (no script, no fetched asset): the verdict and its rules first, then the number to cite, the
yardstick, agreement, calibration by clinician, what the judge is biased by, the flags and the sizes to go further.
A withheld figure shows its reason where the number would stand.
"""

from __future__ import annotations

import html

from mis_bench_dataset.dimensions import DIMENSION_BY_KEY
from mis_bench_dataset.toolkit.numbers import MISSING, ci_pct, num, pct
from mis_bench_dataset.wording import HEADLINE_NUMBERS, SYNTHETIC_LINE

STYLE = """
body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222;line-height:1.45}
table{border-collapse:collapse;margin:.6em 0}th,td{border:1px solid #ccc;padding:.25em .6em;text-align:right}
th:first-child,td:first-child{text-align:left}.verdict{font-size:1.25em;padding:.7em 1em;border-radius:6px;
background:#f3f3f3;border-left:6px solid #888}.yes{border-color:#2e7d32}.no{border-color:#c62828}
.with-care{border-color:#ef6c00}.cannot-tell-yet{border-color:#777}.synthetic{background:#fff3cd;padding:.6em;
border:2px solid #b58900;font-weight:bold}.withheld{color:#8a5300;font-style:italic}.cite{font-size:1.6em}
.pass{color:#2e7d32}.fail{color:#c62828}table.rules td,table.biases td{text-align:left}
"""

_esc = html.escape


def _code(text: str) -> str:
    """Escaped text with its `backticked` parts as <code>."""
    parts = _esc(text).split("`")
    return "".join(f"<code>{part}</code>" if i % 2 else part for i, part in enumerate(parts))


def _withheld(reason: str) -> str:
    return f'<span class="withheld" data-withheld="1">withheld: {_esc(reason)}</span>'


def _table(header: list[str], rows: list[list[str]], cls: str = "") -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _verdict(card: dict) -> str:
    verdict = card["verdict"]
    rows = []
    for rule in card["rules"]:
        if rule["withheld"]:
            result = _withheld(rule["withheld"])
        else:
            result = '<b class="pass">holds</b>' if rule["passed"] else '<b class="fail">fails</b>'
        rows.append([_esc(rule["name"]), _esc(rule["rule"]), _esc(rule["value"]), result])
    answer = verdict["answer"].replace(" ", "-")
    return (
        f'<h2 id="verdict">Verdict</h2><div class="verdict {answer}" data-answer="{_esc(verdict["answer"])}">'
        f"{_esc(verdict['sentence'])}</div>"
        + _table(["rule", "stated as", "on this judge", "result"], rows, "rules")
        + f"<p>How the rules make the verdict: {_esc(verdict['how'])}</p>"
    )


def _cite(card: dict) -> str:
    cite = card["agreement"]["cite"]
    interval = _withheld(cite["withheld"]) if cite["withheld"] else _esc(ci_pct(cite["ci"]))
    others = card["agreement"]["others"]["overall"]
    return (
        '<h2 id="cite">The one number to cite</h2>'
        f'<p class="cite" data-cite="{_esc(pct(cite["value"]))}">Mean ICC(3,1) {_esc(pct(cite["value"]))}% '
        f"{interval}</p>"
        f"<p>What it is: {_esc(cite['what'])}. Resampled: {_esc(cite.get('resampling') or MISSING)}; "
        f"{cite.get('n_resamples') or 0:,} resamples, seed {cite.get('seed')}, {cite['n_videos']} videos from "
        f"{cite.get('n_clinicians') or MISSING} clinicians. The human ceiling's counterpart (paper Table 2, the "
        f"mean of the eight): {_esc(pct(cite['ceiling']))}%.</p>"
        f"<p>Overall (<code>All</code> in <code>score</code>) here: {_esc(pct(others['value']))}%. Which number is "
        "which, wherever a judge is reported:</p>" + _glossary()
    )


def _glossary() -> str:
    """`HEADLINE_NUMBERS` as a list: the number to cite and what the others are."""
    items = "".join(f"<li><b>{_esc(name)}</b>: {_code(text)}</li>" for name, text in HEADLINE_NUMBERS.items())
    return f'<ul class="glossary">{items}</ul>'


def _yardstick(card: dict) -> str:
    calibration, estimates = card["calibration"], card["estimates"]
    parts = ['<h2 id="yardstick">The yardstick: what no judge would give</h2>']
    if calibration.get("withheld"):
        parts.append(f"<p>Intervals: {_withheld(calibration['withheld'])}</p>")
    else:
        rows = [
            [
                _esc(e["abbreviation"]),
                num(e["mean_width"], 2),
                num(e["no_judge_width"], 2),
                pct(e["coverage"]),
                pct(e["no_judge_coverage"]),
            ]
            for e in calibration["dimensions"].values()
        ]
        parts.append(
            f"<p>Per-video intervals at {pct(calibration['nominal'])}% on held-out clinicians "
            f"({_esc(calibration['method'])}), beside the no-judge interval (the fit videos' mean gold plus or minus "
            "the same conformal quantile):</p>"
            + _table(
                ["dimension", "judge width", "no-judge width", "judge coverage %", "no-judge coverage %"],
                rows,
                "widths",
            )
        )
    if estimates.get("result"):
        rows = []
        for key, block in estimates["result"]["dimensions"].items():
            ratio = estimates["width_ratios"].get(key)
            ppi = _withheld(estimates["withheld"]) if estimates.get("withheld") else num(block["ppi"]["width"], 3)
            rows.append(
                [
                    _esc(DIMENSION_BY_KEY[key].abbreviation),
                    str(block["n_labelled"]),
                    ppi,
                    num(block["classical"]["width"], 3),
                    MISSING if ratio is None or estimates.get("withheld") else num(ratio, 2),
                ]
            )
        parts.append(
            "<p>A cohort's mean score per dimension (<code>mis-bench estimate</code>): the PPI++ CI width with the "
            "judge on every video beside the experts-only CI width (no judge):</p>"
            + _table(["dimension", "expert labels", "PPI++ CI width", "experts-only CI width", "ratio"], rows, "ppi")
        )
    else:
        parts.append(f"<p>Estimates: {_withheld(estimates.get('withheld') or 'not computed')}</p>")
    return "".join(parts)


def _agreement(card: dict) -> str:
    rows = [
        [
            _esc(e["abbreviation"]),
            pct(e["icc"]),
            _esc(ci_pct(e["icc_ci"])),
            pct(e["ceiling"]),
            MISSING if e["share_of_ceiling"] is None else f"{e['share_of_ceiling']:.0%}",
            str(e["n"]),
        ]
        for e in card["agreement"]["dimensions"].values()
    ]
    return '<h2 id="agreement">Agreement against the human ceiling</h2>' + _table(
        ["dimension", "ICC %", "95% CI", "ceiling % (Table 2)", "share of ceiling", "pairs"], rows, "agreement"
    )


def _calibration(card: dict) -> str:
    calibration = card["calibration"]
    head = '<h2 id="calibration">Calibration coverage by clinician</h2>'
    if calibration.get("withheld"):
        return head + f"<p>{_withheld(calibration['withheld'])}</p>"
    rows = [
        [_esc(c), str(e["n"]), pct(e["coverage"]), f"{e['p_chance']:.3g}"] for c, e in calibration["clinicians"].items()
    ]
    return (
        head
        + f"<p>Pooled coverage {pct(calibration['coverage'])}% of {calibration['n_pairs']} held-out pairs (nominal "
        f"{pct(calibration['nominal'])}%); {calibration['n_clinicians_under']} of {len(calibration['clinicians'])} "
        "clinicians under 80% and below chance at the nominal level.</p><details><summary>Every clinician</summary>"
        + _table(["clinician", "pairs", "coverage %", "binomial p"], rows, "clinicians")
        + "</details>"
    )


def _biases(card: dict) -> str:
    rows = []
    for by, test in card["biases"].items():
        if test.get("p_value") is None:
            rows.append([_esc(by.replace("_", " ")), MISSING, MISSING, _withheld(test.get("note") or "no test"), ""])
            continue
        biases = ", ".join(f"{_esc(str(g))} {b:+.2f}" for g, b in (test.get("biases") or {}).items() if b is not None)
        df = test.get("df") or [MISSING, MISSING]
        rows.append(
            [
                _esc(by.replace("_", " ")),
                num(test["statistic"], 2),
                f"{df[0]}, {df[1]}",
                f"{test['p_value']:.3g}" + (" <b>biased</b>" if test.get("biased") else ""),
                biases,
            ]
        )
    return (
        '<h2 id="biases">What the judge is biased by</h2><p>Bias is model minus expert in score points (each video\'s '
        "mean over the dimensions); the test of equal bias across groups is a Wald test with clinicians as clusters "
        "(CR1), read at 0.05 over the three groupings.</p>"
        + _table(["grouping", "F", "df", "p", "bias per group"], rows, "biases")
    )


def _flags(card: dict) -> str:
    items = "".join(f"<li>{_esc(flag)}</li>" for flag in card["flags"]) or "<li>none</li>"
    return f'<h2 id="flags">Read before relying on it</h2><ul class="flags">{items}</ul>'


def _going_further(card: dict) -> str:
    further = card["going_further"]
    head = '<h2 id="further">Going further: how many more</h2>'
    if further.get("withheld"):
        return head + f"<p>{_withheld(further['withheld'])}</p>"
    labels = further["labels"]["dimensions"]
    icc = further["icc"]["dimensions"]
    rows = [
        [
            _esc(DIMENSION_BY_KEY[key].abbreviation),
            str(labels[key].get("ppi_labels") or MISSING),
            MISSING if further["more_labels_ppi"].get(key) is None else str(further["more_labels_ppi"][key]),
            str(labels[key].get("classical_labels") or MISSING),
            str(icc[key].get("videos") or MISSING),
            str(icc[key].get("clinicians") or MISSING),
        ]
        for key in labels
    ]
    return head + (
        f"<p>Expert labels for a cohort mean's 95% CI of +/- {further['mean_half_width']:g} points "
        f"(<code>mis-bench plan labels</code>), and videos and clinicians for an ICC(3,1) CI of +/- "
        f"{further['icc_half_width']:g} (<code>mis-bench plan icc</code>), the expert-rated videos as the pilot:</p>"
        + _table(
            [
                "dimension",
                "labels, PPI++",
                "more than rated",
                "labels, experts only",
                "videos (ICC)",
                "clinicians (ICC)",
            ],
            rows,
            "plan",
        )
        + (f"<p>{_esc(further['icc']['note'])}.</p>" if further["icc"].get("note") else "")
    )


def card_html(card: dict) -> str:
    """The page: every section of the card, a withheld figure with its reason."""
    counts = card["counts"]
    banner = f'<p class="synthetic">{_esc(SYNTHETIC_LINE)}</p>' if card["synthetic"] else ""
    title = ("SYNTHETIC: " if card["synthetic"] else "") + "Can I use this judge?"
    body = "".join(
        [
            f"<h1>{_esc(title)}</h1>",
            banner,
            f"<p>Judge <code>{_esc(card['inputs']['judge'])}</code> on {counts['n_judged_videos']} videos; experts "
            f"<code>{_esc(card['inputs']['experts'])}</code> on {counts['n_expert_videos']} videos from "
            f"{counts['n_expert_clinicians']} clinicians. For {_esc(card['purpose'])}.</p>",
            _verdict(card),
            _cite(card),
            _yardstick(card),
            _flags(card),
            _agreement(card),
            _calibration(card),
            _biases(card),
            _going_further(card),
            "<p><small>Regenerated by <code>mis-bench trust --predictions ... --references ... --out DIR</code>. "
            f"Floors: {_esc(card['floors']['rule'])}.</small></p>",
        ]
    )
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>'
        f"<style>{STYLE}</style></head><body>{body}</body></html>\n"
    )

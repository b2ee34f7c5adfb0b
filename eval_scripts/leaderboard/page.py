"""The static leaderboard page: one self-contained HTML file, no external assets.

The table is rendered on the server side (readable without JavaScript); a small
script sorts it on header clicks and toggles each entry's detail row (CIs, MSE,
parse rates, the paired comparison). Every cell keeps its raw value in
`data-value`, and the whole leaderboard JSON is embedded, so the page shows exactly
the numbers of leaderboard.json. Submitter-controlled text is always escaped.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from eval_scripts.report.agreement import halo_cells
from eval_scripts.report.formatting import MISSING, ci_pct, is_number, num, pct, signed
from mis_bench_dataset.dimensions import ABBREVIATION_NAMES, HUMAN_CEILING_MEAN
from mis_bench_dataset.toolkit.text_safety import escape_html
from mis_bench_dataset.wording import ABBREVIATION_LEGEND

# Laid out to fit a 1280 px window with every column (tests/test_leaderboard_page_chromium.py): headers wrap,
# long model names wrap inside their cell, numbers keep one line; a narrower window scrolls the table, not the page.
_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5rem;color:#222}
.table-wrap{max-width:100%;overflow-x:auto}
table{border-collapse:collapse;font-size:.82rem}
th,td{border:1px solid #ccc;padding:.25rem .3rem;text-align:right;white-space:nowrap}
th{background:#f0f0f5;cursor:pointer;user-select:none;white-space:normal;vertical-align:bottom;max-width:5.5rem}
th[aria-sort=ascending]::after{content:" \\25B2"} th[aria-sort=descending]::after{content:" \\25BC"}
th abbr{text-decoration:none}
td.text,th.text{text-align:left}
td[data-key=model]{white-space:normal;min-width:8rem;max-width:16rem;overflow-wrap:anywhere}
td[data-key=prompt_style]{white-space:normal;min-width:5.5rem;max-width:9rem;overflow-wrap:break-word}
td.synthetic::after{content:"SYNTHETIC";margin-left:.35rem;padding:0 .25rem;font-size:.68rem;font-weight:700;
  font-style:normal;color:#7a5b00;background:#fff3cd;border:1px solid #e0c060;border-radius:3px;white-space:nowrap}
tr.entry:hover{background:#f7f7ff;cursor:pointer}
tr.detail td{text-align:left;background:#fafafa;white-space:normal;font-size:.8rem}
tbody.reference td{font-style:italic;background:#f3f3f3}
.notice{background:#fff3cd;border:1px solid #e0c060;padding:.8rem;font-weight:600}
.legend{font-size:.8rem;color:#444}
.rejected li{margin:.3rem 0}
"""

_SCRIPT = r"""
(function () {
  const table = document.getElementById('leaderboard');
  const body = table.querySelector('tbody.entries');
  function pairs() {
    return Array.from(body.querySelectorAll('tr.entry'))
      .map(row => [row, document.getElementById('detail-' + row.dataset.id)]);
  }
  function value(row, key, type) {
    const cell = row.querySelector('td[data-key="' + key + '"]');
    const raw = cell ? cell.dataset.value : '';
    if (type === 'num') { return raw === '' || raw === undefined ? null : parseFloat(raw); }
    return raw || '';
  }
  function sortBy(th) {
    const key = th.dataset.key, type = th.dataset.type;
    const ascending = th.getAttribute('aria-sort') === 'descending'
      || (th.getAttribute('aria-sort') === null && th.dataset.default === 'ascending');
    table.querySelectorAll('thead th').forEach(other => other.removeAttribute('aria-sort'));
    th.setAttribute('aria-sort', ascending ? 'ascending' : 'descending');
    const sorted = pairs().sort((a, b) => {
      const x = value(a[0], key, type), y = value(b[0], key, type);
      if (x === null && y === null) return 0;
      if (x === null) return 1;
      if (y === null) return -1;
      const order = type === 'num' ? x - y : String(x).localeCompare(String(y));
      return ascending ? order : -order;
    });
    sorted.forEach(([row, detail]) => { body.appendChild(row); if (detail) body.appendChild(detail); });
  }
  table.querySelectorAll('thead th').forEach(th => th.addEventListener('click', () => sortBy(th)));
  body.addEventListener('click', event => {
    const row = event.target.closest('tr.entry');
    if (!row) return;
    const detail = document.getElementById('detail-' + row.dataset.id);
    detail.hidden = !detail.hidden;
  });
})();
"""


def _esc(value: Any) -> str:
    return escape_html(value)


def _cell(key: str, value: Any, text: str, *, title: str = "", css: str = "") -> str:
    raw = "" if value is None or (isinstance(value, float) and not is_number(value)) else value
    attributes = f' data-key="{_esc(key)}" data-value="{_esc(raw)}"'
    if title:
        attributes += f' title="{_esc(title)}"'
    if css:
        attributes += f' class="{css}"'
    return f"<td{attributes}>{_esc(text)}</td>"


def _icc_cell(key: str, block: Mapping[str, Any] | None) -> str:
    block = block or {}
    ci = block.get("icc_ci")
    return _cell(
        key, block.get("icc"), pct(block.get("icc")), title=f"ICC {pct(block.get('icc'))}%, 95% CI {ci_pct(ci)}"
    )


def _agreement(block: Mapping[str, Any] | None, key: str) -> tuple[Any, Any]:
    """(value, ci) of one agreement statistic of a scores block (None, None when absent)."""
    stat = ((block or {}).get("agreement") or {}).get(key) or {}
    return stat.get("value"), stat.get("ci")


def _agreement_text(block: Mapping[str, Any] | None) -> str:
    """ICC(2,1), bias and the 95% limits of agreement of a block, for the detail row."""
    icc2, icc2_ci = _agreement(block, "icc2_1")
    bias, _ = _agreement(block, "bias")
    low, _ = _agreement(block, "loa_low")
    high, _ = _agreement(block, "loa_high")
    return (
        f"ICC(2,1) {pct(icc2)}% {ci_pct(icc2_ci)}, bias {signed(bias)}, "
        f"limits of agreement [{signed(low)}, {signed(high)}]"
    )


# Tooltips of headers that are no dimension abbreviation (those carry the dimension's name).
HEADER_TITLES = {
    "icc2_1": "Overall ICC(2,1) %: absolute agreement of the per-video means (counts a constant offset, "
    "which ICC(3,1) ignores)",
    "bias": "Overall bias: mean of model minus expert, in score points",
    "halo": "Halo: mean correlation between two dimensions' scores over videos (the expert gold's on the same "
    "pairs in the cell's tooltip); a judge that rates every dimension of a video alike sits well above the gold",
}


def columns(board: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    """(key, header, type) of the sortable columns, in order."""
    cols = [
        ("rank", "#", "num"),
        ("model", "Model", "text"),
        ("modality", "Setting", "text"),
        ("prompt_style", "Prompt", "text"),
        ("overall", "Overall ICC %", "num"),
        ("mean_icc", "Mean ICC %", "num"),
        ("icc2_1", "ICC(2,1) %", "num"),
        ("bias", "Bias", "num"),
    ]
    cols += [(d["key"], d["abbreviation"], "num") for d in board["dimensions"]]
    cols += [
        ("halo", "Halo", "num"),
        ("excluded_rate", "Excluded %", "num"),
        ("truncated", "Truncated", "num"),
        ("p_vs_leader", "p vs leader", "num"),
    ]
    return cols


def _score_cells(scores: Mapping[str, Any], board: Mapping[str, Any]) -> list[str]:
    """The cells from "overall" to "excluded_rate" (columns order), the same for ranked and floor rows."""
    overall = scores.get("overall") or {}
    icc2, icc2_ci = _agreement(overall, "icc2_1")
    bias, _ = _agreement(overall, "bias")
    return [
        _icc_cell("overall", overall),
        _cell("mean_icc", scores.get("mean_icc"), pct(scores.get("mean_icc"))),
        _cell("icc2_1", icc2, pct(icc2), title=f"absolute agreement, overall: {pct(icc2)}%, 95% CI {ci_pct(icc2_ci)}"),
        _cell("bias", bias, signed(bias), title="mean of model minus expert, overall, in score points"),
        *(_icc_cell(d["key"], (scores.get("dimensions") or {}).get(d["key"])) for d in board["dimensions"]),
        _halo_cell(scores),
        _cell("excluded_rate", overall.get("excluded_rate"), pct(overall.get("excluded_rate"))),
    ]


def _halo_cell(scores: Mapping[str, Any]) -> str:
    """The model's halo; the expert gold's on the same pairs in the tooltip (eval_scripts.report.agreement)."""
    halo = (scores.get("halo") or {}).get("model") or {}
    model, expert, pairs = halo_cells(scores)
    title = f"halo: model {model}, expert gold on the same pairs {expert}; {pairs} dimension pairs"
    return _cell("halo", halo.get("value"), num(halo.get("value"), 2), title=title)


def rank_text(entry: Mapping[str, Any]) -> str:
    """The rank as shown: `2=` where entries share it (equal published figures), `floor` for a floor row."""
    if entry.get("rank") is None:
        return "floor"
    return f"{entry['rank']}=" if entry.get("tied") else str(entry["rank"])


def _entry_rows(entry: Mapping[str, Any], board: Mapping[str, Any], n_columns: int, position: int) -> str:
    """An entry's row of cells and its hidden row of details (opened by a click)."""
    row_id = f"e{position}"
    detail_html = "<br>".join(_entry_details(entry, board))
    return (
        f'<tr class="entry" data-id="{row_id}">{"".join(_entry_cells(entry, board))}</tr>'
        f'<tr class="detail" id="detail-{row_id}" hidden><td colspan="{n_columns}">{detail_html}</td></tr>'
    )


def _entry_cells(entry: Mapping[str, Any], board: Mapping[str, Any]) -> list[str]:
    p_value = (entry.get("vs_leader") or {}).get("p_value")
    p_withheld = ((entry.get("vs_leader") or {}).get("withheld") or {}).get("p_value")  # the reason, when withheld
    model_css = "text synthetic" if entry["synthetic"] else "text"
    method = f" · {entry['method']}" if entry.get("method") else ""  # how the model was trained, when recorded
    truncated = ((entry.get("outcomes") or {}).get("overall") or {}).get("truncated")
    return [
        _cell("rank", entry["rank"], rank_text(entry), title="shared with an entry of equal figures" * entry["tied"]),
        _cell(
            "model",
            entry["model"],
            entry["model"] + method,
            css=model_css,
            title=f"{entry['backend']} · {entry['file']}{method}",
        ),
        _cell("modality", entry["modality"], entry["modality"], css="text", title=f"input: {entry['input_source']}"),
        _cell(
            "prompt_style",
            entry["prompt_style"],
            entry["prompt_style"]
            + (f" {entry['few_shot_k']}-shot" if entry["few_shot_k"] else "")
            + (f" · {entry['options']}" if entry.get("options") else ""),
            css="text",
        ),
        *_score_cells(entry["scores"], board),
        _cell(
            "truncated",
            truncated,
            MISSING if truncated is None else str(truncated),
            title="answers cut at the token limit (not scored), as the run recorded them",
        ),
        _cell(
            "p_vs_leader",
            p_value,
            "leader" if entry["leader"] else ("withheld" if p_withheld else num(p_value, 4)),
            title=f"withheld: {p_withheld}" if p_withheld else "paired bootstrap, two-sided, overall ICC vs the leader",
        ),
    ]


def _entry_details(entry: Mapping[str, Any], board: Mapping[str, Any]) -> list[str]:
    scores = entry["scores"]
    overall = scores.get("overall") or {}
    outcomes = entry.get("outcomes") or {}
    counts = outcomes.get("overall") or {}
    details = [
        f"<b>{_esc(entry['model'])}</b> ({_esc(entry['backend'])}; {_esc(entry['modality'])}; "
        f"input {_esc(entry['input_source'])}; file {_esc(entry['file'])}; "
        f"dataset {_esc(entry['dataset_fingerprint'])})",
        f"Overall ICC {pct(overall.get('icc'))}% {ci_pct(overall.get('icc_ci'))}, MSE {num(overall.get('mse'))}, "
        f"n={_esc(overall.get('n', MISSING))}, excluded {pct(overall.get('excluded_rate'))}%; "
        + _agreement_text(overall),
    ]
    if counts:
        details.append(
            "rows without a score, as the run recorded them: "
            f"{_esc(counts.get('unparsed'))} unparsed, {_esc(counts.get('truncated'))} truncated at the "
            f"token limit, {_esc(counts.get('failed'))} failed requests"
        )
    for d in board["dimensions"]:
        block = (scores.get("dimensions") or {}).get(d["key"]) or {}
        rate = entry["parse_rates"].get(d["key"])
        dim_counts = (outcomes.get("dimensions") or {}).get(d["key"]) or {}
        cut = f", truncated {_esc(dim_counts['truncated'])}" if "truncated" in dim_counts else ""
        details.append(
            f"{_esc(d['abbreviation'])}: ICC {pct(block.get('icc'))}% {ci_pct(block.get('icc_ci'))}, "
            f"MSE {num(block.get('mse'))}, n={_esc(block.get('n', MISSING))}, parsed {pct(rate)}%{cut}; "
            + _agreement_text(block)
        )
    if not entry["leader"]:
        details += _leader_details(entry.get("vs_leader") or {}, board)
    return details


def _leader_details(comparison: Mapping[str, Any], board: Mapping[str, Any]) -> list[str]:
    withheld = comparison.get("withheld") or {}
    ci = (
        f"(CI withheld: {_esc(withheld['delta_ci'])})"
        if withheld.get("delta_ci")
        else ci_pct(comparison.get("delta_ci"))
    )
    p = (
        f"p withheld: {_esc(withheld['p_value'])}"
        if withheld.get("p_value")
        else f"p = {num(comparison.get('p_value'), 4)}"
    )
    lines = [
        f"leader minus this entry, overall ICC: {pct(comparison.get('delta'))} points {ci}, {p} "
        f"(n={_esc(comparison.get('n', MISSING))} videos parsed by both)"
    ]
    dimension_p = comparison.get("dimension_p_values") or {}
    if dimension_p:
        lines.append(
            "per-dimension p vs leader: "
            + ", ".join(f"{_esc(d['abbreviation'])} {num(dimension_p.get(d['key']), 4)}" for d in board["dimensions"])
        )
    return lines


def _floor_row(entry: Mapping[str, Any], board: Mapping[str, Any]) -> str:
    """A floor baseline beside the ranked systems: its scores, no rank, no comparison with the leader."""
    scores = entry["scores"]
    cells = [
        _cell("rank", None, MISSING, title="floor baseline: shown for reference, not ranked"),
        _cell(
            "model", entry["model"], f"{entry['model']} (floor)", css="text synthetic" if entry["synthetic"] else "text"
        ),
        _cell("modality", entry["modality"], entry["modality"], css="text"),
        _cell("prompt_style", entry["prompt_style"], entry["prompt_style"], css="text"),
        *_score_cells(scores, board),
        _cell("truncated", None, MISSING),
        _cell("p_vs_leader", None, MISSING),
    ]
    return f'<tr class="floor">{"".join(cells)}</tr>'


def _ceiling_row(board: Mapping[str, Any], cols: list[tuple[str, str, str]]) -> str:
    ceiling = board["human_ceiling"]
    cells = []
    for key, _, _ in cols:
        if key == "model":
            # data-key "model": the label wraps like a model name instead of widening the column.
            cells.append('<td class="text" data-key="model">Human single rater (paper Table 2)</td>')
        elif key == "mean_icc":
            cells.append(_cell("mean_icc", HUMAN_CEILING_MEAN, pct(HUMAN_CEILING_MEAN)))
        elif key in ceiling:
            cells.append(_icc_cell(key, ceiling[key]))
        else:
            cells.append("<td></td>")
    return f'<tr class="ceiling">{"".join(cells)}</tr>'


def embedded_json(board: Mapping[str, Any]) -> str:
    # "<" escaped so no submitted string can close the script element.
    # ASCII only: bidi and other invisible characters of submitted text reach the page as \\u escapes.
    return json.dumps(board, ensure_ascii=True, allow_nan=False).replace("<", "\\u003c")


def _titled(key: str, header: str) -> bool:
    return header in ABBREVIATION_NAMES or key in HEADER_TITLES


def _header_cells(cols) -> str:
    return "".join(
        f'<th data-key="{key}" data-type="{kind}"'
        + (' data-default="ascending"' if kind == "text" or key == "rank" else "")
        + (' class="text"' if kind == "text" else "")
        + (f' title="{_esc(ABBREVIATION_NAMES.get(header) or HEADER_TITLES[key])}"' if _titled(key, header) else "")
        + ">"
        + (
            f'<abbr title="{_esc(ABBREVIATION_NAMES[header])}">{_esc(header)}</abbr>'
            if header in ABBREVIATION_NAMES
            else _esc(header)
        )
        + "</th>"
        for key, header, kind in cols
    )


def _synthetic_notice(board: Mapping[str, Any]) -> str:
    shown = [*board["entries"], *board.get("floors", [])]
    n_synthetic = sum(entry["synthetic"] for entry in shown)
    if not n_synthetic:
        return ""
    return (
        f"<p class='notice' id='synthetic-notice'>SYNTHETIC DATA: {n_synthetic} of {len(shown)} entries, "
        "marked SYNTHETIC, were scored on the toolkit's generated sample, not on MIS-Bench; their numbers say "
        "nothing about model skill.</p>"
    )


def _legend(with_floors: bool) -> str:
    return (
        f"<p class='legend' id='legend'>{_esc(ABBREVIATION_LEGEND)} Overall: ICC of the per-video mean of the eight "
        "scores. ICC(2,1): absolute agreement of the same means (it counts a constant offset, which ICC(3,1) "
        "ignores). Bias: overall mean of model minus expert, in score points. Excluded: share of videos without all "
        "eight scores. Truncated: answers cut at the token limit. "
        "p vs leader: paired bootstrap p-value of the overall ICC difference."
        + (
            " (floor): the train-mean baseline, ICC 0 by construction, shown for reference and not ranked."
            if with_floors
            else ""
        )
        + "</p>"
    )


def _rejected_list(board: Mapping[str, Any]) -> str:
    if not board["rejected"]:
        return ""
    items = "".join(
        f"<li><code>{_esc(r['file'])}</code><ul>"
        f"{''.join(f'<li>{_esc(reason)}</li>' for reason in r['reasons'])}</ul></li>"
        for r in board["rejected"]
    )
    return f"<h2>Rejected submissions ({len(board['rejected'])})</h2><ul class='rejected' id='rejected'>{items}</ul>"


def _labels_notice(board: Mapping[str, Any]) -> str:
    """Whether the references' labels are public: a board on public labels is no held-out evaluation."""
    if board.get("labels_public", True):
        return (
            "<p class='notice' id='labels-notice'>The references' labels are public (MIS-Bench's gold scores "
            "are published with the dataset): anyone can fit or tune on them, so this board is not a held-out "
            "evaluation; read it as a record of reported runs.</p>"
        )
    return (
        "<p class='legend' id='labels-notice'>Hidden labels: figures are ICCs only, at "
        f"{_esc(board.get('significant_digits'))} significant digits; one ranked submission per account a "
        "day.</p>"
    )


def _outcome_counts(outcomes: Mapping[str, Any] | None) -> str:
    counts = (outcomes or {}).get("overall") or {}
    if not counts:
        return ""
    return (
        f" ({_esc(counts.get('unparsed'))} unparsed, {_esc(counts.get('truncated'))} truncated at the token limit, "
        f"{_esc(counts.get('failed'))} failed requests, as the run recorded them)"
    )


def _unranked_list(board: Mapping[str, Any]) -> str:
    unranked = board.get("unranked") or []
    if not unranked:
        return ""
    items = "".join(
        f"<li><b>{_esc(u['model'])}</b> ({_esc(u['modality'])}, {_esc(u['prompt_style'])}"
        + (f", {_esc(u['options'])}" if u.get("options") else "")
        + "; "
        f"<code>{_esc(u['file'])}</code>): answered {_esc(u['n_answered'])} of {_esc(u['n_pairs'])} pairs"
        f"{_outcome_counts(u.get('outcomes'))}; {_esc(u['reason'])}</li>"
        for u in unranked
    )
    return f"<h2>Not ranked ({len(unranked)})</h2><ul class='unranked' id='unranked'>{items}</ul>"


def render_page(board: Mapping[str, Any], *, title: str = "MIS-Bench leaderboard") -> str:
    cols = columns(board)
    rows = "".join(
        _entry_rows(entry, board, len(cols), position) for position, entry in enumerate(board["entries"], start=1)
    )
    floors = board.get("floors", [])
    notice, legend, rejected = _synthetic_notice(board), _legend(bool(floors)), _rejected_list(board)
    notice += _labels_notice(board)
    rule = board.get("ranking_rule", "Ranked by overall ICC.")
    head = _header_cells(cols)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{_esc(title)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"><style>{_CSS}</style></head>
<body><h1>{_esc(title)}</h1>{notice}
<p>ICC(3,1) in percent against expert ratings on split <b>{_esc(board["split"])}</b> ({board["n_videos"]} videos),
95% bootstrap CIs ({board["n_bootstrap"]} resamples of {_esc(board.get("resample", "video"))}s) on hover and in each
entry's detail row (click a row).
Overall: the eight scores averaged per video.
<span id="ranking-rule">{_esc(rule)}</span> p vs leader: paired bootstrap test of the overall ICC difference on
the same videos. Generated {_esc(board["generated_at"])}.</p>
<div class="table-wrap"><table id="leaderboard"><thead><tr>{head}</tr></thead>
<tbody class="entries">{rows}</tbody>
<tbody class="reference">{"".join(_floor_row(entry, board) for entry in floors)}{_ceiling_row(board, cols)}</tbody>
</table></div>
{legend}
{_unranked_list(board)}
{rejected}
<script type="application/json" id="leaderboard-data">{embedded_json(board)}</script>
<script>{_SCRIPT}</script>
</body></html>
"""

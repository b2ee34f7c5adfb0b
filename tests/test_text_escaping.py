"""User text is escaped in every output: no control or bidi character survives the escapers, and a hostile
model name is neutralised in the report, the leaderboard and the terminal.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from mis_bench_dataset.toolkit.text_safety import clean_terminal, escape_csv, escape_html, escape_markdown

from _leaderboard_helpers import make_references, make_results, noisy_predictions

UNSAFE = ["\x00", "\x1b", "\u202e", "\u2066", "\x7f", "\u200f"]
HOSTILE_NAME = "org/<script>alert(1)</script>\x00\u202eevil|*x* [l](http://e)\x1b[31m=cmd"


@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=60))
def test_escaped_text_carries_no_control_or_bidi_character(text):
    for escaped in (escape_html(text), escape_markdown(text), escape_csv(text)):
        assert not any(c in escaped for c in UNSAFE) and "\n" not in escaped
    assert "<" not in escape_html(text) and "<" not in escape_markdown(text)
    terminal = clean_terminal(text)
    assert not any(c in terminal for c in UNSAFE)
    assert escape_csv("=" + text).startswith("'=")


def test_a_hostile_model_name_is_escaped_in_every_output(tmp_path, capsys):
    from eval_scripts.cli import main

    references = make_references()
    gold = tmp_path / "gold.csv"
    gold.write_text("video_id,dimension,score\n" + "".join(f"{v},{d},{s}\n" for (v, d), s in references.items()))
    runs = tmp_path / "runs"
    runs.mkdir()
    for index, name in enumerate((HOSTILE_NAME, "org/plain")):
        results = make_results(noisy_predictions(references, 0.3 + index, seed=index), model=name)
        (runs / f"r{index}.json").write_text(json.dumps(results))
    assert (
        main(
            [
                "report",
                str(runs / "r0.json"),
                str(runs / "r1.json"),
                "--references",
                str(gold),
                "--comparison-bootstrap",
                "100",
                "--bootstrap",
                "100",
                "--out",
                str(tmp_path / "rep"),
            ]
        )
        == 0
    )
    assert main(["submit", str(runs / "r0.json"), "--out", str(tmp_path / "subs")]) == 0
    assert main(["submit", str(runs / "r1.json"), "--out", str(tmp_path / "subs")]) == 0
    assert (
        main(
            [
                "leaderboard",
                str(tmp_path / "subs"),
                "--references",
                str(gold),
                "--bootstrap",
                "100",
                "--out",
                str(tmp_path / "board"),
            ]
        )
        == 0
    )
    printed = capsys.readouterr()
    outputs = {
        "report.md": (tmp_path / "rep" / "report.md").read_text(),
        "report.html": (tmp_path / "rep" / "report.html").read_text(),
        "leaderboard.csv": (tmp_path / "board" / "leaderboard.csv").read_text(),
        "index.html": (tmp_path / "board" / "index.html").read_text(),
        "stdout": printed.out,
        "stderr": printed.err,
    }
    for where, text in outputs.items():
        assert not any(c in text for c in UNSAFE), where
        if where.endswith((".md", ".html")):  # markup matters there; in a CSV cell or a terminal it is just text
            assert "<script>alert" not in text, where
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in outputs["report.html"] + outputs["report.md"]
    assert "\\u202eevil" in outputs["report.html"] and "\\u202eevil" in outputs["stdout"]
    assert "evil\\|" in outputs["report.md"]

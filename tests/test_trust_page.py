"""`mis-bench reproduce trust`: the docs page "How far to trust a judge" (docs/trust.md) is what the command
generates from ../shared (a slow test regenerates it and compares), its sections are a list a caller extends,
and it never replaces a file it did not write."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval_scripts import reproduce_trust_page
from eval_scripts.cli import main
from eval_scripts.jobs.trust import SECTIONS, TRUST_COMMAND, purpose_section, write_page

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "trust.md"


def test_the_committed_page_names_its_command_its_purpose_and_its_resampling():
    text = PAGE.read_text(encoding="utf-8")
    assert text.startswith("# How far to trust a judge\n") and TRUST_COMMAND in text
    assert "not for therapist supervision, training, hiring or patient-facing evaluation" in text
    # Every CI-bearing table says which resampling made it.
    assert "percentile bootstrap over clinicians" in text and "--resample video" in text


def test_trust_needs_the_shared_folder_and_says_what_it_must_hold(tmp_path, capsys):
    assert main(["reproduce", "trust"]) == 2
    assert "trust needs --shared FOLDER" in capsys.readouterr().err
    assert main(["reproduce", "trust", "--shared", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no data/authors/coding.csv in the shared folder" in err[0]
    assert main(["reproduce", "table4"]) == 2  # the tables still need --from
    assert "table4 needs --from FOLDER" in capsys.readouterr().err


def test_the_page_replaces_only_a_page_it_wrote(tmp_path):
    mine = tmp_path / "trust.md"
    write_page(f"# How far to trust a judge\n\n`{TRUST_COMMAND}`\n", mine)
    write_page(f"# again\n`{TRUST_COMMAND}`\n", mine)  # its own page: replaced
    assert mine.read_text() == f"# again\n`{TRUST_COMMAND}`\n"
    notes = tmp_path / "notes.md"
    notes.write_text("my notes\n")
    with pytest.raises(Exception, match="not a page `mis-bench reproduce trust` wrote"):
        write_page("# page\n", notes)
    assert notes.read_text() == "my notes\n"


def test_sections_are_a_list_a_caller_extends(authors_dir):
    """A new section is one more function of the data: the lead's calibration, PPI and planning sections."""
    shared = authors_dir.parent.parent
    page = reproduce_trust_page(
        shared, sections=[purpose_section, lambda data: f"## Extra\n\n{data.n_bootstrap} resamples"]
    )
    assert page.startswith("# How far to trust a judge") and page.endswith("## Extra\n\n10000 resamples\n")
    assert SECTIONS[0] is purpose_section


@pytest.mark.slow
def test_the_committed_page_is_what_the_command_generates_from_shared(authors_dir, real_transcripts_csv, tmp_path):
    shared = authors_dir.parent.parent
    out = tmp_path / "trust.md"
    assert main(["reproduce", "trust", "--shared", str(shared), "--out", str(out)]) == 0
    assert out.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")

"""The documentation site builds: `mkdocs build --strict` (Material, mkdocstrings) passes, so a broken link
between pages, a missing anchor, a page left out of the navigation or a docstring mkdocstrings cannot read
fails the suite; the README's links lead to files that exist. What the API reference renders (the exports only) is
tests/test_public_api.py's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def built_site(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """`mkdocs build --strict` once for this file's tests: (the folder that holds `site/`, the finished build)."""
    tmp_path = tmp_path_factory.mktemp("docs")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    return tmp_path, done


@pytest.mark.slow
def test_mkdocs_build_strict_passes(built_site):
    tmp_path, done = built_site
    assert done.returncode == 0, done.stderr[-4000:]
    assert "WARNING" not in done.stderr, done.stderr[-4000:]
    assert "MkDocs 2" not in done.stderr and "NO_MKDOCS_2_WARNING" not in done.stderr  # no banner
    for page in ("", "dataset/", "api/raft_trainer/"):
        assert (tmp_path / "site" / f"{page}index.html").is_file()
    # Nothing is fetched from outside (the theme's web fonts off); the stylesheet that wraps wide tables is in.
    home = (tmp_path / "site" / "index.html").read_text(encoding="utf-8")
    assert "fonts.googleapis" not in home and "fonts.gstatic" not in home
    assert 'href="stylesheets/wide.css"' in home and (tmp_path / "site" / "stylesheets" / "wide.css").is_file()
    # The API reference was rendered from the docstrings, not left as `::: name` text.
    api = (tmp_path / "site" / "api" / "mis_icc_metric" / "index.html").read_text(encoding="utf-8")
    assert 'id="mis_icc_metric.scoring.score_predictions"' in api and ":::" not in api
    # A `>>>` example outside an "Examples:" section renders as nested block quotes, not as code.
    for page in (tmp_path / "site" / "api").rglob("*.html"):
        assert not re.search(r"<blockquote>\s*<blockquote>", page.read_text(encoding="utf-8")), page


# Every page of the site in a 1280 px frame of one page (file:// frames may be read with
# --allow-file-access-from-files): each table box and code block is as wide as its content, or it would scroll.
FRAMES_PROBE = r"""<!doctype html><html><body><pre id="probe">waiting</pre><script>
const pages = PAGES;
const found = [];
let left = pages.length;
pages.forEach(page => {
  const frame = document.createElement('iframe');
  frame.style.width = '1280px'; frame.style.height = '900px';
  frame.onload = () => {
    const doc = frame.contentDocument;
    doc.querySelectorAll('.md-typeset__table, .md-typeset pre').forEach(box => {
      if (box.scrollWidth > box.clientWidth + 1) found.push([page, box.textContent.slice(0, 60), box.scrollWidth]);
    });
    if (--left === 0) document.getElementById('probe').textContent = JSON.stringify(found);
  };
  frame.src = page;
  document.body.appendChild(frame);
});
</script></body></html>"""


@pytest.mark.slow
def test_wide_tables_and_code_fit_1280_px_in_chromium(built_site, tmp_path):
    """docs/stylesheets/wide.css: at 1280 px no table or code block of any page scrolls sideways. Skips without
    Chromium."""
    import html
    import json
    import shutil

    browser = next(filter(None, map(shutil.which, ("chromium", "chromium-browser", "google-chrome"))), None)
    if browser is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    site = built_site[0] / "site"
    assert built_site[1].returncode == 0, built_site[1].stderr[-4000:]
    pages = sorted(str(p.relative_to(site)) for p in site.rglob("index.html") if p.parent.name != "404")
    probe = site / "_probe.html"
    probe.write_text(FRAMES_PROBE.replace("PAGES", json.dumps(pages)), encoding="utf-8")
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--disable-background-networking",
            "--allow-file-access-from-files",
            "--window-size=1400,900",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--virtual-time-budget=20000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    match = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert match and match.group(1) != "waiting", f"probe did not run: rc={done.returncode} {done.stderr[-2000:]}"
    assert len(pages) >= 15
    assert json.loads(html.unescape(match.group(1))) == []


def _nav_files(entries) -> list[str]:
    files = []
    for entry in entries:
        value = next(iter(entry.values())) if isinstance(entry, dict) else entry
        files += _nav_files(value) if isinstance(value, list) else [value]
    return files


def test_every_page_is_in_the_navigation():
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = {str(p.relative_to(REPO / "docs")) for p in (REPO / "docs").rglob("*.md")}
    assert pages <= set(_nav_files(config["nav"]))


def test_readme_links_lead_to_existing_files():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    targets = [t for t in re.findall(r"\]\(([^)\s]+)\)", readme) if "://" not in t and not t.startswith("#")]
    assert targets, "the README links to the docs"
    missing = [t for t in targets if not (REPO / t.split("#")[0]).exists()]
    assert not missing, missing


def test_the_readme_is_a_short_door():
    """Under 250 lines, the first command within the first 40, no developer paths or machine notes."""
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250, len(lines)
    first_fence = next(i for i, line in enumerate(lines) if line.startswith("```bash"))
    assert first_fence < 40
    text = "\n".join(lines)
    assert "../shared" not in text and 'load_dataset("mis-bench"' not in text
    for section in ("## Install", "## Tests", "## Citation", "## Licence", "## Documentation"):
        assert any(line.startswith(section) for line in lines), section


def test_the_docs_load_builds_by_path_never_by_a_bare_name():
    """In code, `load_dataset("mis-bench", ...)` returns whatever the cache holds under that name (test_caches.py)."""
    from _docs_helpers import read_blocks

    for page in ["README.md", *(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]:
        for block in read_blocks(REPO / page, page).blocks:
            bare = re.findall(r'load_dataset\(["\'](mis-bench[\w-]*)["\']', block.code)
            assert not bare, (block.where, bare)

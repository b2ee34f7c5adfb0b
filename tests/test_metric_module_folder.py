"""The metric folder is a complete `evaluate` module as on the Hub (script, card, Space app,
requirements), checked against evaluate's own conventions and its widget code."""

from __future__ import annotations

import ast
import configparser
import re
from pathlib import Path

import evaluate
import pandas as pd
import yaml
from evaluate.utils.gradio import infer_gradio_input_types, parse_gradio_data, parse_readme

import mis_icc_metric

REPO_ROOT = Path(__file__).resolve().parents[1]
METRIC_DIR = Path(mis_icc_metric.metric_path())
PACKAGES = ("mis_bench_dataset", "mis_icc_metric", "raft_trainer", "eval_scripts")


def _front_matter(card: Path) -> dict:
    return yaml.safe_load(re.match(r"^---\n(.*?)\n---\n", card.read_text(encoding="utf-8"), re.S).group(1))


def _top_level_imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (lazy imports included), top-level names only."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_the_folder_holds_script_card_app_and_requirements():
    assert sorted(p.name for p in METRIC_DIR.iterdir() if p.suffix in (".py", ".md", ".txt")) == [
        "README.md",
        "__init__.py",
        "app.py",
        "mis_icc.py",
        "requirements.txt",
    ]
    assert not (METRIC_DIR.parent / "README.md").exists()  # one card, beside its script


def test_card_front_matter_is_what_a_hub_space_needs():
    header = _front_matter(METRIC_DIR / "README.md")
    assert set(header) == {
        "title",
        "emoji",
        "colorFrom",
        "colorTo",
        "sdk",
        "sdk_version",
        "app_file",
        "pinned",
        "tags",
        "description",
    }
    assert header["sdk"] == "gradio" and header["tags"] == ["evaluate", "metric"] and header["pinned"] is False
    # evaluate's widget builds its form with gr.inputs / gr.outputs, which gradio 4 removed.
    assert str(header["sdk_version"]).startswith("3.")
    assert (METRIC_DIR / header["app_file"]).is_file()
    assert "ICC(3,1)" in header["title"] and "ICC(3,1)" in header["description"]
    # evaluate's widget shows the card without its front matter, from the app's folder.
    assert parse_readme(METRIC_DIR / "README.md").lstrip().startswith("# Metric Card for MIS-Bench ICC(3,1)")


def test_app_launches_evaluates_widget_on_the_script_beside_it():
    tree = ast.parse((METRIC_DIR / "app.py").read_text(encoding="utf-8"))
    imports = {
        (node.module, alias.name) for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for alias in node.names
    }
    assert ("evaluate.utils", "launch_gradio_widget") in imports
    calls = [ast.unparse(node) for node in ast.walk(tree) if isinstance(node, ast.Call)]
    assert "evaluate.load(str(Path(__file__).with_name('mis_icc.py')))" in calls
    assert "launch_gradio_widget(module)" in calls


def test_gradio_is_imported_by_app_py_only():
    importers = [
        str(path.relative_to(REPO_ROOT))
        for package in PACKAGES
        for path in (REPO_ROOT / package).rglob("*.py")
        if "gradio" in _top_level_imports(path)
    ]
    assert importers == []  # app.py imports only evaluate's helper, which imports gradio when launched
    assert "gradio" not in _top_level_imports(METRIC_DIR / "app.py")


def test_requirements_bring_every_import_of_the_script():
    requirements = [
        line.strip()
        for line in (METRIC_DIR / "requirements.txt").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    setup = configparser.ConfigParser()
    setup.read(REPO_ROOT / "setup.cfg")
    assert requirements[0] == setup["metadata"]["name"]
    # The rest pin gradio 3's web stack; nothing pulls an extra's packages (torch ...) into the Space.
    assert {re.split(r"[<>=!~\[; ]", line)[0] for line in requirements[1:]} == {"fastapi", "pydantic"}
    install_requires = {
        re.split(r"[<>=!~\[; ]", line.strip())[0].lower()
        for line in setup["options"]["install_requires"].splitlines()
        if line.strip()
    }
    own_packages = set(PACKAGES)
    library_imports = {
        name for kind, name, *_ in evaluate.loading.get_imports(str(METRIC_DIR / "mis_icc.py")) if kind == "library"
    }
    assert library_imports == {"datasets", "evaluate", "mis_bench_dataset", "mis_icc_metric"}
    assert library_imports - own_packages <= install_requires  # a plain `pip install mis-bench` brings them


def test_the_widget_data_path_computes_what_compute_does():
    """What the Space's form sends (evaluate's parser for gradio's table) gives the direct result."""
    metric = mis_icc_metric.load()
    types = infer_gradio_input_types(metric.features.values())
    assert types == ["number", "number", "str", "str"]
    columns = {
        "predictions": [3.1, 4.0, 2.2, 3.6],
        "references": [3.0, 4.2, 2.0, 3.4],
        "video_ids": ["v1", "v2", "v3", "v4"],
        "dimensions": ["empathy"] * 4,
    }
    table = pd.DataFrame({k: [f'"{v}"' if isinstance(v, str) else v for v in vs] for k, vs in columns.items()})
    from_form = metric.compute(**parse_gradio_data(table, types), n_bootstrap=0)
    assert from_form == metric.compute(**columns, n_bootstrap=0)
    assert round(from_form["dimensions"]["empathy"]["icc"], 4) == 0.9751  # pingouin's ICC(C,1) on these pairs


def test_the_widget_renders_the_card_without_typographic_replacements():
    """Gradio renders the card with markdown-it's typographer, which turns "(C)" into "©" and "(R)" into "®":
    every such formula is in a code span. Rendered as the widget does (the js-default preset, typographer on)."""
    from markdown_it import MarkdownIt

    rendered = MarkdownIt("js-default", {"typographer": True, "html": True}).render(
        parse_readme(METRIC_DIR / "README.md")
    )
    assert not set(rendered) & set("\u00a9\u00ae\u2122\u00b1"), "a typographic replacement changed the card"
    assert "offdiag(C)" in rendered

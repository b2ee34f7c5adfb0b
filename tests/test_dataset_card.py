"""The dataset card and the CLI: synthetic data said loudly, rubric, privacy, report, loading."""

from __future__ import annotations

import json

import yaml

from mis_bench_dataset import DIMENSIONS, RUBRIC


def _card(folder):
    text = (folder / "README.md").read_text()
    _, front, body = text.split("---\n", 2)
    return yaml.safe_load(front), body


def test_card_yaml_declares_configs_splits_and_features(synthetic_build):
    meta, body = _card(synthetic_build)
    assert [c["config_name"] for c in meta["configs"]] == ["scoring", "features"]
    info = {i["config_name"]: i for i in meta["dataset_info"]}
    report = json.loads((synthetic_build / "build_report.json").read_text())
    for split in info["scoring"]["splits"]:
        assert split["num_examples"] == 8 * report["split_counts"][split["name"]]
    assert "synthetic" in meta["tags"]


def test_card_body_documents_everything(synthetic_build):
    _, body = _card(synthetic_build)
    assert "SYNTHETIC DATA" in body.split("\n\n")[1]  # right under the title
    for heading in (
        "## Provenance",
        "## Privacy",
        "## Dimensions",
        "## Rubric",
        "## Splits",
        "## Labels",
        "## Build report",
    ):
        assert heading in body
    for dim in DIMENSIONS:
        assert dim.name in body and RUBRIC[dim.key].criterion in body
    assert "duration_seconds" in body and "Human single-rater ICC(3,1)" in body
    signal = body.split("## Synthetic data: the planted signal", 1)[1].split("\n## ", 1)[0]
    assert "latent skill" in signal and "Table 2" in signal and "wav2vec" in signal
    assert "/tmp" not in body.split("## Provenance", 1)[1].split("\n## ", 1)[0]  # no local paths published


def test_real_release_card_has_no_synthetic_banner(tmp_path):
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    release = generate_synthetic_release(tmp_path / "rel", n_videos=4, seed=0)
    manifest = json.loads((release.release_dir / "subset_manifest.json").read_text())
    manifest.pop("synthetic")
    (release.release_dir / "subset_manifest.json").write_text(json.dumps(manifest))
    build_dataset(release.release_dir, tmp_path / "out", progress=False)
    meta, body = _card(tmp_path / "out")
    assert "SYNTHETIC" not in body and meta["pretty_name"] == "MIS-Bench"


def cli_main(argv):
    from eval_scripts.cli import main

    return main(argv)


def test_cli_synth_then_build(tmp_path, capsys):
    assert cli_main(["synth", str(tmp_path / "rel"), "--videos", "5", "--seed", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["n_videos"] == 5 and summary["synthetic"] is True
    assert (
        cli_main(
            [
                "build",
                str(tmp_path / "rel"),
                "--labels",
                summary["ratings_csv"],
                "--out",
                str(tmp_path / "out"),
                "--json",
            ]
        )
        == 0
    )
    report = json.loads(capsys.readouterr().out)
    assert report["n_videos"] == 5 and report["n_labeled_videos"] == 5 and report["synthetic"]
    assert (
        cli_main(["build", str(tmp_path / "rel"), "--labels", summary["ratings_csv"], "--out", str(tmp_path / "out")])
        == 0
    )
    assert "human single-rater ICC(3,1)" in capsys.readouterr().out
    (tmp_path / "rel" / "audio" / "prosody").joinpath(f"{summary_first(tmp_path)}.npz").unlink()
    assert cli_main(["build", str(tmp_path / "rel"), "--out", str(tmp_path / "out2"), "--strict"]) == 1
    captured = capsys.readouterr()
    assert "missing_file" in captured.err and summary_first(tmp_path) in captured.err and "prosody" in captured.err
    assert captured.err.splitlines()[-1].startswith("mis-bench build: error: --strict: 1 problem(s)")
    assert captured.out == ""  # the listing is a diagnostic: stderr
    assert not (tmp_path / "out2").exists()


def summary_first(tmp_path):
    return sorted(p.stem for p in (tmp_path / "rel" / "video" / "openface3").iterdir())[0]


def test_cli_refuses_nonempty_synth_target_and_missing_inputs(tmp_path, capsys):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "f").write_text("")
    assert cli_main(["synth", str(tmp_path / "x")]) == 1
    assert "not empty" in capsys.readouterr().err
    assert cli_main(["build"]) == 2
    assert "RELEASE_DIR" in capsys.readouterr().err


def test_tiny_release_omits_empty_splits_and_still_loads(tmp_path):
    import pytest
    from datasets import load_dataset

    from mis_bench_dataset import build_dataset, generate_synthetic_release

    release = generate_synthetic_release(tmp_path / "rel", n_videos=2, seed=0)
    report = build_dataset(release.release_dir, tmp_path / "out", progress=False)
    assert report.split_counts == {"train": 2, "validation": 0, "test": 0}
    assert len(load_dataset(str(tmp_path / "out"), "scoring", split="train")) == 16
    with pytest.raises(ValueError, match="split"):
        load_dataset(str(tmp_path / "out"), "scoring", split="test")
    meta, body = _card(tmp_path / "out")
    assert [f["split"] for f in meta["configs"][0]["data_files"]] == ["train"]
    assert "validation, test not written" in body


def _hand_features():
    """Both configs' `datasets.Features`, spelled out with the library's own types (the independent reference)."""
    from datasets import Array2D, Features, List, Value

    from mis_bench_dataset.builder.schema import SCORING_COLUMNS
    from mis_bench_dataset.dimensions import DIMENSION_KEYS

    scoring = {name: Value("string") for name in SCORING_COLUMNS[:-1]} | {"score": Value("float32")}
    features = {name: Value("string") for name in ("video_id", "clinician", "time_point", "stimulus", "transcript")}
    for name, width in (("openface", 208), ("librosa", 93), ("wav2vec", 768), ("prosody", 15)):
        features |= {
            name: Array2D((None, width), "float32"),
            f"{name}_timestamps": List(Value("float32")),
            f"has_{name}": Value("bool"),
        }
    features |= {"duration_seconds": Value("float32")} | {key: Value("float32") for key in DIMENSION_KEYS}
    return {"scoring": Features(scoring), "features": Features(features)}


def test_the_schemas_written_without_datasets_are_what_datasets_writes():
    """The build writes the features' dict (Parquet metadata) and YAML (card) without importing `datasets`:
    exactly what `Features.to_dict()` and the card's `_to_yaml_list()` give, key order included."""
    from datasets import Features

    from mis_bench_dataset.builder.schema import (
        features_arrow_schema,
        features_dicts,
        features_features,
        features_yaml,
        scoring_arrow_schema,
        scoring_features,
    )

    hand = _hand_features()
    for config, built, arrow in (
        ("scoring", scoring_features(), scoring_arrow_schema()),
        ("features", features_features(), features_arrow_schema()),
    ):
        expected = hand[config]
        assert json.dumps(features_dicts()[config]) == json.dumps(expected.to_dict())
        assert built == expected and Features.from_dict(features_dicts()[config]) == expected
        assert features_yaml(config) == expected._to_yaml_list()
        stored = json.loads(arrow.metadata[b"huggingface"])["info"]["features"]
        assert json.dumps(stored) == json.dumps(expected.to_dict())


def test_a_build_imports_neither_datasets_nor_pyplot(tmp_path):
    """The first `mis-bench run` builds the default sample; `datasets` (1-2 s to import) and pyplot are not needed."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from mis_bench_dataset import build_dataset, generate_synthetic_release\n"
        f"release = generate_synthetic_release({str(tmp_path / 'release')!r}, n_videos=12, seed=1)\n"
        f"build_dataset(release.release_dir, {str(tmp_path / 'out')!r}, labels=release.ratings_csv, progress=False)\n"
        "print(sorted(m for m in ('datasets', 'matplotlib.pyplot', 'scipy.stats') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip().splitlines()[-1] == "[]"
    assert (tmp_path / "out" / "README.md").is_file() and (tmp_path / "out" / "stats" / "histograms.png").is_file()

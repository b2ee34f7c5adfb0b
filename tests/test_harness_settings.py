"""Every modality setting on a public-release build runs with feature-derived inputs or is refused with a reason."""

from __future__ import annotations

import json

import pytest

from eval_scripts import RunConfig, UnsupportedSetting, run_grid, run_setting
from eval_scripts.answers.prompts import MODALITIES
from eval_scripts.backends.openai_backend import RetryPolicy
from eval_scripts.report.text_table import format_table

FAST_RETRY = RetryPolicy(max_retries=2, backoff_base_s=0.005, backoff_max_s=0.01, timeout_s=5.0)


@pytest.fixture(scope="module")
def public_build(subset10_dir, tmp_path_factory):
    """The real public subset (features only, no labels, no raw media), built as users build it."""
    from mis_bench_dataset import build_dataset

    out = tmp_path_factory.mktemp("subset10") / "mis-bench-subset10"
    build_dataset(subset10_dir, out, progress=False)
    return out


@pytest.fixture(scope="module")
def server(chat_server):
    with chat_server() as srv:
        yield srv


def _config(out, server, build, modalities=("text",), **kw) -> RunConfig:
    options = dict(
        base_url=server.base_url, concurrency=4, retry=FAST_RETRY, api_key_env="MIS_BENCH_UNSET", modalities=modalities
    )
    return RunConfig(
        backend="openai",
        model="fake-model",
        dataset=build,
        split="train",
        out=out,
        backend_options=options,
        n_bootstrap=0,
        progress=False,
        **kw,
    )


@pytest.mark.parametrize("modality", MODALITIES)
def test_each_setting_runs_on_features_with_a_text_backend(public_build, server, tmp_path, modality) -> None:
    before = len(server.bodies)
    result = run_setting(_config(tmp_path, server, public_build, modality=modality, limit=2))
    assert result.n_rows == 16 and result.n_failed == 0
    assert result.input_source == ("text" if modality == "text" else "features")
    results = json.loads(result.results_path.read_text())
    assert results["setting"]["input_source"] == result.input_source
    assert results["scores"] is None  # the public release has no labels
    sent = [body["messages"][0]["content"] for body in server.bodies[before:]]
    assert all(isinstance(text, str) for text in sent)
    assert all(("Audio descriptors (feature-derived" in t) == ("audio" in modality) for t in sent)
    assert all(("Video descriptors (feature-derived" in t) == ("video" in modality) for t in sent)
    if "video" in modality:
        assert all("face detected in 100% of frames" in t for t in sent)


def test_plots_need_an_image_backend(public_build, server, tmp_path) -> None:
    with pytest.raises(UnsupportedSetting, match="needs image input.*refusing rather than running it as text-only"):
        run_setting(_config(tmp_path, server, public_build, modality="video+text", feature_format="plot", limit=1))
    before = len(server.bodies)
    result = run_setting(
        _config(
            tmp_path,
            server,
            public_build,
            modalities=("text", "image"),
            modality="video+text",
            feature_format="text+plot",
            limit=1,
        )
    )
    assert result.n_failed == 0
    parts = server.bodies[before]["messages"][0]["content"]
    assert [p["type"] for p in parts] == ["image_url", "text"]


def test_raw_media_is_refused_on_the_public_release(public_build, server, tmp_path) -> None:
    with pytest.raises(UnsupportedSetting, match="rows lack audio_path, video_path .*public release has no raw media"):
        run_setting(_config(tmp_path, server, public_build, modality="audio+video+text", input_source="raw"))


def test_grid_prints_a_table_and_lists_refusals(public_build, server, tmp_path) -> None:
    config = _config(tmp_path, server, public_build, limit=1, feature_format="plot")
    entries = run_grid(config, MODALITIES, ("direct", "cot"))
    assert [e.label for e in entries] == [f"{m} {s}" for m in MODALITIES for s in ("direct", "cot")]
    assert [e.refused is None for e in entries] == [True, True] + [False] * 6
    table = format_table(entries)
    assert table.splitlines()[0].split()[:3] == ["setting", "VF", "H/PE"]
    assert "refused: audio+text: " not in table and "refused: setting audio+text with feature plots" in table


def test_the_grid_is_expanded_once_modality_major_with_each_styles_decoding():
    """`grid_configs` is the one expansion behind a grid run, its dry run and its batch files: the table's order
    (modality-major), every (modality, style) once, each style with the decoding asked for it."""
    from eval_scripts import DecodingConfig, grid_configs

    config = RunConfig(backend="openai", model="m")
    styles = ["direct", "cot", "paper"]
    configs = list(grid_configs(config, MODALITIES, styles, DecodingConfig.for_style))
    assert [(c.modality, c.prompt_style) for c in configs] == [(m, s) for m in MODALITIES for s in styles]
    assert all(c.decoding == DecodingConfig.for_style(c.prompt_style) for c in configs)
    assert [c.decoding for c in grid_configs(config, ["text"], styles)] == [config.decoding] * 3

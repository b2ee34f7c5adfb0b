"""One `Setting` for the harness and the trainer: declared once, embedded by `RunConfig` and `RAFTConfig`, one
vocabulary of prompt styles (`toolkit`, the trainer's earlier name, is an alias of `direct`)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from eval_scripts import RunConfig
from mis_bench_dataset import Setting
from mis_bench_dataset.dimensions import PROMPT_STYLES
from mis_bench_dataset.protocol import VideoSampling
from mis_bench_dataset.setting import SETTING_FIELDS, SettingFields, canonical_prompt_style

from _run_args import batch_args, run_args


def _fields(config_class: type) -> dict[str, dataclasses.Field]:
    return {item.name: item for item in dataclasses.fields(config_class) if item.name in SETTING_FIELDS}


def test_both_configs_embed_the_one_declaration_with_its_defaults():
    from raft_trainer import RAFTConfig

    declared = {item.name: item.default for item in dataclasses.fields(Setting)}
    assert set(declared) == {
        "modality",
        "input_source",
        "prompt_style",
        "video_sampling",
        "video_frames",
        "video_max_pixels",
        "video_min_pixels",
    }
    for config_class in (RunConfig, RAFTConfig):
        embedded = _fields(config_class)
        assert {name: item.default for name, item in embedded.items()} == declared
        assert all(item.kw_only for item in embedded.values())
    assert issubclass(RunConfig, SettingFields)
    # the trainer's copy carries the same help and choices, in HfArgumentParser's words, but for the prompt style:
    # it renders two of the styles (and the alias), in its own words
    for name, item in _fields(RAFTConfig).items():
        spec = Setting.__dataclass_fields__[name].metadata
        choices = list(spec["choices"]) if spec["choices"] else None
        if name == "prompt_style":
            assert set(item.metadata["choices"]) < set(choices) and "cot" not in item.metadata["choices"]
            assert "toolkit" in item.metadata["choices"] and "paper" in item.metadata["help"]
            continue
        assert item.metadata["help"] == spec["help"]
        assert item.metadata.get("choices") == choices


def test_the_configs_setting_is_the_frozen_validated_setting(tmp_path):
    from raft_trainer import RAFTConfig

    values = {"modality": "video+text", "input_source": "features", "video_sampling": "paper", "video_frames": 64}
    run = RunConfig("openai", "m", **values)
    trainer = RAFTConfig(str(tmp_path), use_cpu=True, **values)
    assert run.setting == trainer.setting == Setting(**values)
    assert run.setting.video == VideoSampling(frames=64, rule="paper")
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.setting.modality = "text"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"modality": "smell+text"}, "unknown modality setting 'smell\\+text'"),
        ({"input_source": "disk"}, "unknown input source 'disk'"),
        ({"modality": "audio+text", "input_source": "text"}, "input source 'text' is the text setting's"),
        ({"prompt_style": "verbose"}, "unknown prompt style 'verbose'; expected one of direct, cot, paper, toolkit"),
        ({"video_frames": 0}, "frames must be a positive integer"),
        ({"video_frames": 64, "video_max_pixels": 1000}, "exceed the clip's budget"),
    ],
)
def test_a_setting_that_cannot_run_is_refused_when_made(values, message):
    with pytest.raises(ValueError, match=message):
        Setting(**values)


def test_one_vocabulary_of_prompt_styles_with_the_trainers_earlier_name_as_an_alias(tmp_path):
    from raft_trainer import RAFTConfig
    from raft_trainer.data import check_prompt_style

    assert [canonical_prompt_style(style) for style in PROMPT_STYLES] == list(PROMPT_STYLES)
    assert canonical_prompt_style("toolkit") == "direct"
    assert Setting(prompt_style="toolkit").prompt_style == "direct"
    assert RunConfig("openai", "m", prompt_style="toolkit").prompt_style == "direct"
    assert RAFTConfig(str(tmp_path), use_cpu=True, prompt_style="toolkit").prompt_style == "direct"
    assert check_prompt_style("toolkit") == "direct"
    with pytest.raises(ValueError, match="the trainer renders one of direct, paper, toolkit"):
        check_prompt_style("cot")  # a harness style the trainer has no prompt for (CoT-RAFT: completion_style)


def test_both_command_lines_take_the_setting_and_the_alias(tmp_path):
    from eval_scripts.cli import build_parser
    from eval_scripts.cli.args import config_from_args
    from raft_trainer.train import parse_arguments

    argv = ["run", "--backend", "openai", "--model", "m", "--prompt", "toolkit", "--video-frames", "8"]
    run = config_from_args(RunConfig, build_parser().parse_args(argv))
    assert run.setting == Setting(prompt_style="direct", video_frames=8)
    _, training, _ = parse_arguments(
        ["--model", "m", "--dataset", "d", "--out", str(tmp_path), "--prompt_style", "toolkit", "--video_frames", "8"]
    )
    assert training.setting == run.setting


@pytest.mark.parametrize("mode", ["dry-run", "batch export"])
def test_the_alias_runs_where_the_style_does(mode, synthetic_build, tmp_path, capsys):
    """`--prompt toolkit` plans the requests `--prompt direct` plans, on every path that reads a style's decoding
    (a dry run and a batch export read it before any config stores the alias)."""
    from eval_scripts.cli import main

    outputs = []
    for style in ("direct", "toolkit"):
        out = tmp_path / style
        if mode == "dry-run":
            args = run_args(synthetic_build, out, "http://127.0.0.1:9/v1", "--prompt", style, "--dry-run", as_json=True)
        else:
            args = batch_args("export", [str(out / "batch.jsonl")], synthetic_build, out, "http://127.0.0.1:9/v1")
            args += ["--prompt", style]
        assert main(args) == 0
        outputs.append(capsys.readouterr().out if mode == "dry-run" else (out / "batch.jsonl").read_bytes())
    if mode == "dry-run":
        plans = [json.loads(text) for text in outputs]
        assert plans[0]["settings"] == plans[1]["settings"] and plans[0]["requests"] > 0
    else:
        assert outputs[0] == outputs[1] and outputs[0]

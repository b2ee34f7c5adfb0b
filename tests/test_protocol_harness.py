"""`mis-bench run --prompt paper`: the requests a server receives, the token limit, the parser, the results; and the
bytes of `direct` / `cot` requests unchanged by the system-message support."""

from __future__ import annotations

import hashlib
import json

import pytest
from datasets import Dataset
from test_protocol import check_paper_user_text

from eval_scripts.cli import main
from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS, BuiltDataset
from mis_bench_dataset.protocol import PAPER_TEMPLATE_SHA256

from _harness_helpers import ChatServer, scoring_rows
from _run_args import run_args

BY_NAME = {DIMENSION_BY_KEY[k].name: k for k in DIMENSION_KEYS}


def _run(server: ChatServer, build, out, *extra: str) -> int:
    flags = ("--split", "test", "--prompt", "paper")
    return main(run_args(build, out, server.base_url, *extra, limit=2, as_json=True, flags=flags))


def _dimension_of(system: str) -> str:
    named = [key for name, key in BY_NAME.items() if f"dimension, {name}, following" in system]
    assert len(named) == 1, system
    return named[0]


@pytest.mark.parametrize("modality", ["text", "video+text"])
def test_paper_requests_as_the_server_receives_them(synthetic_build, tmp_path, capsys, modality, chat_server):
    rows = {(r["video_id"], r["dimension"]): r for r in BuiltDataset.of(synthetic_build).rows("test")}
    with chat_server() as server:
        assert _run(server, synthetic_build, tmp_path / "out", "--modality", modality) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["rows"] == summary["parsed"] == len(server.bodies) == 16
    seen = set()
    for body in server.bodies:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert body["max_tokens"] == 16 and body["temperature"] == 0.0
        system, user = (m["content"] for m in body["messages"])
        assert isinstance(system, str) and isinstance(user, str)  # feature-derived inputs: text only
        dimension = _dimension_of(system)
        response = user.split("###Response to evaluate:\n", 1)[1].split("\n\n###Score Rubrics:", 1)[0]
        (video_id,) = [
            v for (v, d), r in rows.items() if d == dimension and response.startswith(r["transcript"].strip())
        ]
        seen.add((video_id, dimension))
        transcript = rows[(video_id, dimension)]["transcript"].strip()
        if modality == "video+text":  # the descriptors follow the transcript, plainly labelled
            assert response.startswith(transcript + "\n\n") and "Video descriptors (feature-derived" in response
        else:
            assert response == transcript
        check_paper_user_text(user, dimension, response)
    assert len(seen) == 16
    results = json.loads(next((tmp_path / "out" / "fake-model").glob("*/results.json")).read_text())
    assert results["setting"]["prompt_style"] == "paper"
    assert results["system"]["decoding"]["max_new_tokens"] == 16
    assert results["system"]["decoding"]["template_sha256"] == PAPER_TEMPLATE_SHA256
    # the server answered "The score prediction is: 3.0" (its default value), and the parser read every one
    assert {p["prediction"] for p in results["predictions"]} == {3.0}


def test_paper_token_limit_can_be_raised_and_few_shot_is_refused(synthetic_build, tmp_path, capsys, chat_server):
    with chat_server() as server:
        assert _run(server, synthetic_build, tmp_path / "a", "--max-tokens", "40") == 0
        assert {body["max_tokens"] for body in server.bodies} == {40}
        capsys.readouterr()
        assert _run(server, synthetic_build, tmp_path / "b", "--few-shot", "2") == 2
    error = capsys.readouterr().err
    assert "paper` prompt style reproduces the authors' protocol, which has no few-shot examples" in error


def test_video_flags_are_checked_before_any_model_loads(tmp_path, capsys):
    argv = run_args(
        tmp_path,
        None,
        backend="transformers",
        model=str(tmp_path / "none"),
        bootstrap=None,
        no_progress=False,
    )
    assert main([*argv, "--video-frames", "64", "--video-max-pixels", "1000"]) == 2
    assert "64 frames of at least 12544 pixels exceed the clip's budget of 1000" in capsys.readouterr().err
    assert main([*argv, "--video-frames", "0"]) == 2  # refused when the command line is read
    assert "--video-frames" in capsys.readouterr().err


# Computed with the code before the `system` field and the `paper` style existed (commit da3eee5): scoring_rows(1),
# text setting, first row (verbal_fluency). A `direct` / `cot` request with the version-1 templates
# (`--prompt-version 1`, what every run used before version 2) must hash, key and serialise exactly so; version 2's
# are pinned in test_prompt_versions.py.
GOLDEN = {
    "direct": (
        "9df31f385e7b27fe73f0d87934967303bd0fefb22e50be8bb2c5c7f54d915853",
        "82d14edcc851281628ef8fbff8b8f5f80e3278812269e35bd45198180ba9c7fb",
        "5021e8c7e7e82bec1576027eab02ed60f87f8593edc248a86ff64faaf9fb15e2",
    ),
    "cot": (
        "61ccfe32c015ecc888da4146463970cbd9c4f3f3f6b52fa61ee396794fd8e7fd",
        "2b61723c3b78701821d1074384f2fa7bb7623f8721df0858295140ab79a00542",
        "4f8d94c94447b34914ead1d7982812ffa80cb12552db0f634337af7333dac3a1",
    ),
}


@pytest.mark.parametrize("style", ["direct", "cot"])
def test_direct_and_cot_requests_are_byte_for_byte_unchanged(style):
    from eval_scripts import RunConfig
    from eval_scripts.backends.openai_backend import OpenAIBackend
    from eval_scripts.harness.context import prepare_run

    backend = OpenAIBackend("m", base_url="http://127.0.0.1:9/v1")
    context = prepare_run(
        RunConfig(backend="openai", model="m", prompt_style=style, prompt_version=1),
        backend,
        scoring=Dataset.from_list(scoring_rows(1)),
    )
    prompt = context.prompts[0]
    body = backend.request_body(prompt, context.decoding)
    assert prompt.system is None and body["messages"] == [{"role": "user", "content": prompt.text}]
    assert prompt.prompt_hash == hashlib.sha256(prompt.text.encode()).hexdigest()
    body_hash = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
    assert (prompt.prompt_hash, context.keys[0], body_hash) == GOLDEN[style]


def test_the_system_message_is_part_of_the_prompt_hash():
    from eval_scripts import Prompt

    plain = Prompt("v", "wau", "hello")
    with_system = Prompt("v", "wau", "hello", system="Rate it.")
    assert with_system.prompt_hash == hashlib.sha256(b"hello" + b"\0system\0" + b"Rate it.").hexdigest()
    assert len({plain.prompt_hash, with_system.prompt_hash, Prompt("v", "wau", "hello", system="").prompt_hash}) == 3


def test_grid_default_is_still_table_3s_two_styles():
    from eval_scripts.cli import build_parser

    args = build_parser().parse_args(["run"])
    assert args.prompts == ["direct", "cot"] and args.prompt_style == "direct"
    assert build_parser().parse_args(["run", "--prompts", "direct,paper"]).prompts == ["direct", "paper"]


def test_transformers_backend_samples_raw_video_and_records_it(tmp_path):
    """Raw video through the transformers backend: the frames the processor gets follow the rule, its video kwargs
    carry the pixel budget, the system message is rendered first, and the results and cache key record the sampling."""
    from test_protocol import reference_indices

    from eval_scripts import RunConfig, run_setting
    from mis_bench_dataset import paper_prompt
    from mis_bench_dataset.protocol import VideoSampling

    from _raft_helpers import make_fake_video_processor, make_vl_model, make_vl_tokenizer, raw_video_rows

    tokenizer = make_vl_tokenizer()
    processor = make_fake_video_processor(tokenizer)
    videos = raw_video_rows(tmp_path, 3, sizes=((40, 28, 28), (75, 28, 56), (9, 28, 28)))
    rows = [  # video ids the results schema accepts
        {**row, "video_id": f"AB{1000 + i}_T1_{stimulus}"}
        for i, (row, stimulus) in enumerate(zip(videos, ("Jessica", "Luke", "Sean"), strict=True))
    ]
    sampling = VideoSampling(frames=8, max_pixels=8 * 40000)

    def run(sampling):
        options = {
            "model_obj": make_vl_model(tokenizer),
            "processor_obj": processor,
            "device": "cpu",
            "batch_size": 2,
            "video_sampling": sampling,
        }
        config = RunConfig(
            backend="transformers",
            model="tiny-vl",
            modality="video+text",
            prompt_style="paper",
            out=tmp_path / "runs",
            backend_options=options,
            n_bootstrap=0,
            progress=False,
        )
        return run_setting(config, scoring=rows)

    result = run(sampling)
    assert result.n_rows == 3 and result.n_failed == 0 and result.input_source == "raw"
    expected_kwargs = {"do_sample_frames": False, "size": {"shortest_edge": 12544, "longest_edge": 80000}}
    assert {len(frames) for frames in processor.videos_seen} == {8}  # every video: 8 frames, whatever its length
    for n_frames in (40, 75, 9):
        picked = [i % 256 for i in reference_indices(n_frames, 8)]
        assert any(f[:, 0, 0, 0].tolist() == picked for f in processor.videos_seen), n_frames
    for call in processor.calls:
        kwargs = call["videos_kwargs"]
        assert {k: v for k, v in kwargs.items() if k != "video_metadata"} == expected_kwargs
        for metadata in kwargs["video_metadata"]:  # one per video of the batch, in order
            assert metadata["frames_indices"] == reference_indices(metadata["total_num_frames"], 8)
    for row in rows:  # the chat: system message first, then the video, then the paper's text
        paper = paper_prompt(row["dimension"], row["transcript"])
        assert any(
            text.startswith(
                f"<|im_start|>system\n{paper.system}<|im_end|>\n<|im_start|>user\n"
                f"<|vision_start|><|video_pad|><|vision_end|>{paper.user}<|im_end|>"
            )
            for text in processor.texts
        )
    results = json.loads(result.results_path.read_text())
    assert results["system"]["decoding"]["video"] == sampling.as_record()
    assert results["system"]["decoding"]["max_new_tokens"] == 16
    assert results["setting"]["input_source"] == "raw"

    # The sampling is part of the cache key: the same sampling asks under the same keys, another under new ones.
    # (The random tiny model never stops within 16 tokens, so its answers are truncated and not served as
    # answers; the keys of the recorded outcomes show what the cache would serve.)
    def keys() -> list[str]:
        from eval_scripts.harness.response_cache import iter_records  # the records, without the cache's header line

        return [record["key"] for record in iter_records(tmp_path / "runs" / "responses.cache.jsonl")]

    first = keys()
    assert len(first) == 3 and result.n_truncated + result.n_parsed + result.n_unparsed == 3
    run(sampling)
    assert keys()[3:] == first
    run(VideoSampling(frames=4, max_pixels=4 * 40000))
    assert not set(keys()[6:]) & set(first)
    assert {len(frames) for frames in processor.videos_seen[-3:]} == {4}


def test_results_schema_accepts_every_prompt_style():
    from eval_scripts.formats import submission
    from mis_bench_dataset.dimensions import PROMPT_STYLES

    enum = submission.load_schema()["properties"]["setting"]["properties"]["prompt_style"]["enum"]
    assert enum == [*PROMPT_STYLES, "none"]

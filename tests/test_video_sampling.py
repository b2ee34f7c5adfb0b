"""The authors' actual video sampling (`VideoSampling(rule="paper")`): frame counts, indices and sizes equal a
transcription of their reader (MIS-RAFT/utils/vision_process.py: `smart_nframes`, the decord reader's
`torch.linspace(...).round()`, `fetch_video`'s per-frame cap, `smart_resize` and the halving `[:, :, ::2, ::2]`) for
clips of 1 s to 10 min and for the real release's clips (their openface rows are the video frames); the frames
decoded, resized and halved by `raft_trainer.video`; what the processor is told; and the rule through the trainer and
the transformers backend."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

# the Qwen2-VL processors' own resize rule (the image processor's module imports without torchvision)
from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize as processor_smart_resize

from mis_bench_dataset.protocol import VideoSampling

from _run_args import frame_rule

# ------------------------------------------------------------------ the reference: the authors' reader, transcribed
# Their call: fetch_video({"video": path, "total_pixels": 20480 * 28 * 28, "min_pixels": 16 * 28 * 28}), the
# module's constants FPS 2, FPS_MIN_FRAMES 4, FPS_MAX_FRAMES 768, FRAME_FACTOR 2, IMAGE_FACTOR 28,
# VIDEO_MAX_PIXELS 768 * 28 * 28.
TOTAL_PIXELS, MIN_PIXELS = 20480 * 28 * 28, 16 * 28 * 28


def reference_nframes(total_frames: int, video_fps: float) -> int:
    min_frames = math.ceil(4 / 2) * 2
    max_frames = math.floor(min(768, total_frames) / 2) * 2
    nframes = total_frames / video_fps * 2.0
    nframes = min(min(max(nframes, min_frames), max_frames), total_frames)
    nframes = math.floor(nframes / 2) * 2
    if not 2 <= nframes <= total_frames:
        raise ValueError(nframes)
    return nframes


def reference_indices(total_frames: int, nframes: int) -> list[int]:
    return torch.linspace(0, total_frames - 1, nframes).round().long().tolist()


def reference_smart_resize(height, width, min_pixels, max_pixels, factor=28):
    h_bar = max(factor, round(height / factor) * factor)
    w_bar = max(factor, round(width / factor) * factor)
    if h_bar * w_bar > max_pixels:
        beta = math.sqrt((height * width) / max_pixels)
        h_bar = max(factor, math.floor(height / beta / factor) * factor)
        w_bar = max(factor, math.floor(width / beta / factor) * factor)
    elif h_bar * w_bar < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h_bar = math.ceil(height * beta / factor) * factor
        w_bar = math.ceil(width * beta / factor) * factor
    return h_bar, w_bar


def reference_sizes(height: int, width: int, nframes: int) -> tuple[tuple[int, int], tuple[int, int]]:
    """(resized, halved): the frame size after their resize, and after `video[:, :, ::2, ::2]`."""
    max_pixels = max(min(768 * 28 * 28, TOTAL_PIXELS / nframes * 2), int(MIN_PIXELS * 1.05))
    h, w = reference_smart_resize(height, width, MIN_PIXELS, max_pixels)
    return (h, w), (len(range(0, h, 2)), len(range(0, w, 2)))


PAPER = VideoSampling(rule="paper")
RESOLUTIONS = ((1080, 1920), (720, 1280), (480, 854), (360, 640), (1920, 1080), (240, 320), (1080, 1440), (60, 5000))
FPS = (23.976, 25.0, 29.97, 30.0, 59.94)


@pytest.mark.parametrize("video_fps", FPS)
def test_counts_and_sizes_equal_the_authors_reader_for_clips_of_1_s_to_10_min(video_fps):
    for seconds in range(1, 601):
        n_frames = round(seconds * video_fps)
        count = PAPER.frame_count(n_frames, video_fps)
        assert count == reference_nframes(n_frames, video_fps), (seconds, video_fps)
        for height, width in RESOLUTIONS:
            resized, halved = reference_sizes(height, width, count)
            assert PAPER.resized_size(height, width, count) == resized
            # what reaches the model: the processor rounds the halved frame to multiples of 28 within
            # Qwen2.5-VL's bounds (4x28x28 to 16384x28x28), transformers' own smart_resize
            model = processor_smart_resize(*halved, factor=28, min_pixels=4 * 28 * 28, max_pixels=16384 * 28 * 28)
            assert PAPER.frame_size(height, width, count) == model, (seconds, video_fps, height, width)
    assert PAPER.frame_count(round(600 * video_fps), video_fps) == 768  # 10 min reach the cap


def test_the_issues_clip_175_s_is_348_frames_of_196x112_where_the_fixed_rule_sends_32_of_1008x560():
    count = PAPER.frame_count(5238, 29.97)
    assert count == 348 and PAPER.frame_size(1080, 1920, count) == (112, 196)
    fixed = VideoSampling()
    assert fixed.frame_count(5238, 29.97) == 32 and fixed.frame_size(1080, 1920, 32) == (560, 1008)
    # the fixed rule's size is what the processor makes of the frames with its kwargs (transformers' smart_resize)
    size = fixed.processor_kwargs()["size"]
    assert fixed.frame_size(1080, 1920, 32) == processor_smart_resize(
        1080, 1920, factor=28, min_pixels=size["shortest_edge"], max_pixels=size["longest_edge"]
    )


def test_the_real_release_clips(subset10_dir):
    """Each clip's frame count is its openface rows (one per video frame), its frame rate the rows' timestamps."""
    counts = {}
    for path in sorted((subset10_dir / "video" / "openface3").glob("*.npz")):
        with np.load(path) as archive:
            timestamps = archive["timestamps"].astype(np.float64)
        n_frames = len(timestamps)
        video_fps = (n_frames - 1) / (timestamps[-1] - timestamps[0])
        count = PAPER.frame_count(n_frames, video_fps)
        assert count == reference_nframes(n_frames, video_fps), path.stem
        assert PAPER.frame_indices(n_frames, video_fps).tolist() == reference_indices(n_frames, count)
        for height, width in RESOLUTIONS:
            assert PAPER.resized_size(height, width, count) == reference_sizes(height, width, count)[0]
        counts[path.stem] = count
    assert len(counts) == 10 and counts["EH0822_T1_Jessica"] == 348  # the 175 s clip
    assert all(4 <= c <= 768 and c % 2 == 0 for c in counts.values())


@settings(max_examples=300, deadline=None)
@given(n_frames=st.integers(min_value=2, max_value=40000), video_fps=st.sampled_from(FPS))
def test_indices_are_the_authors_rounded_float32_linspace(n_frames, video_fps):
    count = PAPER.frame_count(n_frames, video_fps)
    indices = PAPER.frame_indices(n_frames, video_fps)
    assert indices.tolist() == reference_indices(n_frames, count)
    exact = np.arange(count) * (n_frames - 1) / (count - 1)
    assert indices[0] == 0 and indices[-1] == n_frames - 1 and (np.diff(indices) >= 0).all()
    assert np.abs(indices - exact).max() <= 1  # float32 steps: at most one frame off the exact position


def test_short_clips_and_bad_inputs():
    assert PAPER.frame_count(2, 30.0) == 2 and PAPER.frame_count(3, 30.0) == 2 and PAPER.frame_count(30, 30.0) == 4
    with pytest.raises(ValueError, match="needs at least 2 frames"):
        PAPER.frame_count(1, 30.0)
    with pytest.raises(ValueError, match="needs the video's frame rate"):
        PAPER.frame_indices(300)
    with pytest.raises(ValueError, match="fps applies to the 'paper' rule"):
        VideoSampling(fps=1.0)
    with pytest.raises(ValueError, match="rule must be one of fixed, paper"):
        VideoSampling(rule="dense")
    with pytest.raises(ValueError, match="more than 200 times longer"):
        PAPER.resized_size(10, 2500, 4)
    with pytest.raises(ValueError, match="only the 'paper' rule resizes"):
        VideoSampling().resized_size(1080, 1920, 32)
    assert VideoSampling(rule="paper", frames=64).frame_count(100_000, 30.0) == 64  # `frames` is the cap


def test_what_the_processor_is_told_and_what_is_recorded():
    assert PAPER.frames == 768 and VideoSampling().frames == 32
    assert PAPER.processor_kwargs() == {
        "do_sample_frames": False,
        "size": {"shortest_edge": 4 * 28 * 28, "longest_edge": 16384 * 28 * 28},
    }
    record = PAPER.as_record()
    assert {k: record[k] for k in ("rule", "fps", "max_frames", "max_pixels", "min_pixels")} == {
        "rule": "paper",
        "fps": 2.0,
        "max_frames": 768,
        "max_pixels": TOTAL_PIXELS,
        "min_pixels": MIN_PIXELS,
    }
    assert VideoSampling().as_record()["rule"] == "fixed"


def test_frame_archives_are_sampled_resized_and_halved(tmp_path):
    import torch.nn.functional as F

    from raft_trainer.video import load_sampled_video

    from _raft_helpers import write_frame_archive

    path = write_frame_archive(tmp_path / "v.npz", 95, 60, 100, fps=30.0)
    source = np.load(path)["frames"]
    frames, metadata = load_sampled_video(path, PAPER)
    count = reference_nframes(95, 30.0)
    picked = reference_indices(95, count)
    (height, width), halved = reference_sizes(60, 100, count)
    assert count == 6 and frames.shape == (6, *halved, 3) == (6, 56, 84, 3) and frames.dtype == np.uint8
    assert metadata["frames_indices"] == picked and metadata["fps"] == 30.0
    # torchvision's resize of uint8 frames: bicubic, antialiased, clamped, rounded back to uint8; then ::2
    chunk = torch.from_numpy(source[picked]).permute(0, 3, 1, 2).float()
    resized = F.interpolate(chunk, size=(height, width), mode="bicubic", align_corners=False, antialias=True)
    expected = resized.clamp(0, 255).round().to(torch.uint8).permute(0, 2, 3, 1).numpy()[:, ::2, ::2]
    assert np.array_equal(frames, expected)
    constant = np.broadcast_to(np.arange(95, dtype=np.uint8)[:, None, None, None], (95, 60, 100, 3))
    np.savez(tmp_path / "c.npz", frames=constant, fps=np.float64(30.0))
    flat, _ = load_sampled_video(tmp_path / "c.npz", PAPER)
    assert [int(np.unique(f)[0]) for f in flat] == picked and all(len(np.unique(f)) == 1 for f in flat)
    np.savez(tmp_path / "nofps.npz", frames=source)
    with pytest.raises(ValueError, match="needs the video's frame rate"):
        load_sampled_video(tmp_path / "nofps.npz", PAPER)


def test_the_trainer_feeds_the_paper_rules_frames(tmp_path):
    """Two LoRA steps with `video_sampling: paper`: the stand-in processor receives the rule's frames, their size
    after the halving, and the processor kwargs of the rule."""
    import datasets
    from peft import LoraConfig

    from raft_trainer import RAFTTrainer

    from _raft_helpers import (
        make_fake_video_processor,
        make_vl_model,
        make_vl_tokenizer,
        raw_video_rows,
        short_raft_config,
    )

    tokenizer = make_vl_tokenizer()
    processor = make_fake_video_processor(tokenizer)
    rows = raw_video_rows(tmp_path, 4, sizes=((50, 112, 112), (120, 112, 224)))  # 25 fps: 2 s and 4.8 s
    args = short_raft_config(tmp_path / "out", modality="video+text", prompt_style="paper", video_sampling="paper")
    assert args.raw_video_sampling == PAPER
    trainer = RAFTTrainer(
        make_vl_model(tokenizer, seed=4),
        args=args,
        train_dataset=datasets.Dataset.from_list(rows),
        processing_class=processor,
        peft_config=LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], task_type="CAUSAL_LM"),
    )
    trainer.train()
    assert len([h for h in trainer.state.log_history if "loss" in h]) == 2
    shapes = {(len(f), *f.shape[1:3]) for f in processor.videos_seen}
    expected = {
        (reference_nframes(n, 25.0), *reference_sizes(h, w, reference_nframes(n, 25.0))[1])
        for n, h, w in ((50, 112, 112), (120, 112, 224))
    }
    assert shapes == expected == {(4, 56, 56), (8, 56, 112)}
    assert all(
        {k: v for k, v in call["videos_kwargs"].items() if k != "video_metadata"} == PAPER.processor_kwargs()
        for call in processor.calls
    )


def test_the_transformers_backend_and_its_flag_take_the_rule(tmp_path):
    from eval_scripts import RunConfig, run_setting
    from eval_scripts.cli import build_parser

    from _raft_helpers import make_fake_video_processor, make_vl_model, make_vl_tokenizer, raw_video_rows

    parser = build_parser()
    assert frame_rule(parser.parse_args(["run", "--video-sampling", "paper"])) == PAPER
    assert frame_rule(parser.parse_args(["run", "--video-sampling", "paper", "--video-frames", "64"])).frames == 64
    assert frame_rule(parser.parse_args(["run"])) == VideoSampling()

    tokenizer = make_vl_tokenizer()
    processor = make_fake_video_processor(tokenizer)
    rows = [
        {**row, "video_id": f"AB{1000 + i}_T1_Jessica"}
        for i, row in enumerate(raw_video_rows(tmp_path, 2, sizes=((90, 28, 28),)))
    ]
    options = {"model_obj": make_vl_model(tokenizer), "processor_obj": processor, "device": "cpu", "batch_size": 2}
    config = RunConfig(
        backend="transformers",
        model="tiny-vl",
        modality="video+text",
        prompt_style="paper",
        out=tmp_path / "runs",
        backend_options={**options, "video_sampling": PAPER},
        n_bootstrap=0,
        progress=False,
    )
    result = run_setting(config, scoring=rows)
    assert result.n_failed == 0 and result.input_source == "raw"
    assert {f.shape for f in processor.videos_seen} == {(reference_nframes(90, 25.0), 56, 56, 3)}
    assert json.loads(result.results_path.read_text())["system"]["decoding"]["video"] == PAPER.as_record()

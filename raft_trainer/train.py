"""Fine-tune a chat model on MIS-Bench scores with MIS-RAFT (paper §5, Appendix D.1 defaults).

    accelerate launch raft_trainer/train.py --model Qwen/Qwen2.5-VL-7B-Instruct --dataset DIR \
        [--modality text|audio+text|video+text|audio+video+text] [--loss-type raft|ce|raft+ce] [--output-dir OUT]

Runs on one CPU process, one GPU or several (DDP). Writes to OUT: the LoRA adapter and tokenizer,
`trainer_state.json`, `setting.json` (modality and input source), `predictions_test.csv` (long
form, read by `mis-bench score`) and, when the test split is labelled, `scores_test.json`.
The audio/video settings on the public release use feature-derived descriptors from the
dataset's `features` config (`input_source: features`, see `raft_trainer.media`). On a machine without CUDA it falls back, with a logged
message, to float32, `adamw_torch` and no 4-bit quantization.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from pathlib import Path

from mis_bench_dataset.dimensions import MODALITY_SETTINGS
from mis_bench_dataset.errors import MisBenchError, require_extra

logger = logging.getLogger("raft_trainer.train")

PAPER_DEFAULTS = dict(
    epochs=2.0, learning_rate=2e-5, per_device_batch_size=2, max_length=512,
    lora_r=8, lora_alpha=16, lora_dropout=0.1, lora_target="q_proj,v_proj", optim="paged_adamw_32bit",
)


def build_parser() -> argparse.ArgumentParser:
    from raft_trainer.media import INPUT_SOURCES  # imports raft_trainer, which needs the `train` extra

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--model", required=True, help="Hub id or local folder of a chat model (tokenizer with a chat template)")
    p.add_argument("--dataset", required=True, help="built MIS-Bench folder (its `scoring` config is used)")
    p.add_argument(
        "--modality", default="text", choices=list(MODALITY_SETTINGS),
        help="input setting: text (rubric + transcript); the audio/video settings add feature-derived descriptors "
        "(public release) or raw media (rows with audio_path/video_path)",
    )
    p.add_argument(
        "--input-source", default="auto", choices=list(INPUT_SOURCES),
        help="audio/video settings: features (descriptors from the `features` config), raw (the rows' media "
        "paths, through the model's processor) or auto (raw when every row has the paths, else features)",
    )
    p.add_argument("--loss-type", default="raft", choices=["raft", "ce", "raft+ce"])
    p.add_argument("--ce-weight", type=float, default=1.0, help="weight of the CE term for raft+ce")
    p.add_argument("--paper-digit-probs", action="store_true", help="do not renormalise digit probabilities (paper's literal eq. 9-10)")
    p.add_argument("--output-dir", default="mis-raft-output")
    p.add_argument("--epochs", type=float, default=PAPER_DEFAULTS["epochs"])
    p.add_argument("--max-steps", type=int, default=-1, help="stop after this many optimizer steps (-1: epochs)")
    p.add_argument("--learning-rate", type=float, default=PAPER_DEFAULTS["learning_rate"])
    p.add_argument("--per-device-batch-size", type=int, default=PAPER_DEFAULTS["per_device_batch_size"])
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--max-length", type=int, default=PAPER_DEFAULTS["max_length"], help="tokens per row; the transcript is shortened to fit")
    p.add_argument("--padding-side", default="left", choices=["left", "right"])
    p.add_argument("--no-lora", action="store_true", help="train all weights instead of a LoRA adapter")
    p.add_argument("--lora-r", type=int, default=PAPER_DEFAULTS["lora_r"])
    p.add_argument("--lora-alpha", type=int, default=PAPER_DEFAULTS["lora_alpha"])
    p.add_argument("--lora-dropout", type=float, default=PAPER_DEFAULTS["lora_dropout"])
    p.add_argument("--lora-target", default=PAPER_DEFAULTS["lora_target"], help="comma-separated module names")
    p.add_argument("--load-in-4bit", action="store_true", help="4-bit NF4 quantization (bitsandbytes, CUDA only)")
    p.add_argument("--optim", default=None, help=f"optimizer (default: {PAPER_DEFAULTS['optim']} on CUDA, adamw_torch elsewhere)")
    p.add_argument("--no-bf16", action="store_true", help="train in float32 even where bf16 is available")
    p.add_argument("--cpu", action="store_true", help="run on the CPU even where CUDA is available")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--sequential", action="store_true", help="no shuffling (reproducible data order, e.g. to compare process layouts)")
    p.add_argument("--logging-steps", type=int, default=10)
    p.add_argument("--no-eval", action="store_true", help="skip evaluation on the validation split")
    p.add_argument("--predict-method", default="greedy", choices=["greedy", "exact"])
    p.add_argument("--predict-batch-size", type=int, default=8)
    p.add_argument("--no-predict", action="store_true", help="skip test-split predictions")
    return p


def load_scoring(dataset: str):
    import datasets

    if not Path(dataset).exists():
        raise SystemExit(f"--dataset {dataset!r} does not exist; build one with `mis-bench build ... --out DIR`")
    splits = datasets.load_dataset(str(dataset), "scoring")
    if "train" not in splits:
        raise SystemExit(f"{dataset}: the scoring config has no train split (found {list(splits)})")
    return splits


def prepare_inputs(splits, args) -> str:
    """Resolve the input source of `--modality` and attach each row's media context; returns the source.

    Refuses (SystemExit naming the reason) rather than training a multimodal setting on text alone.
    """
    from raft_trainer.media import (
        UnsupportedModality, attach_feature_context, load_feature_contexts, resolve_input_source,
    )

    try:
        source = resolve_input_source(args.modality, splits["train"].column_names, splits["train"], args.input_source)
        if source == "features":
            contexts = load_feature_contexts(args.dataset, args.modality, list(splits))
            for name in list(splits):
                splits[name] = attach_feature_context(splits[name], contexts, args.modality, f"{args.dataset} {name} split")
            logger.info("%s: feature-derived descriptors from the `features` config for %d videos", args.modality, len(contexts))
    except UnsupportedModality as err:
        raise SystemExit(str(err)) from err
    return source


def load_media_processor(model: str, modality: str):
    """The model's AutoProcessor, refused (SystemExit, with why) unless it takes the setting's media."""
    from transformers import AutoProcessor

    from raft_trainer.media import UnsupportedModality, check_processor_takes_media

    try:
        processor = AutoProcessor.from_pretrained(model)
    except Exception as err:  # e.g. a video processor whose torchvision does not import
        raise SystemExit(
            f"--modality {modality} with raw media: cannot load the processor of {model!r} ({type(err).__name__}: {err}); "
            "raw video needs the model's processor with its video dependencies (torchvision); "
            "or use --input-source features"
        ) from err
    try:
        check_processor_takes_media(processor, modality)
    except UnsupportedModality as err:
        raise SystemExit(str(err)) from err
    return processor


def runtime_settings(args) -> dict:
    """Precision, optimizer and quantization for this machine, with the fallbacks logged."""
    import torch

    cuda = torch.cuda.is_available() and not args.cpu
    bf16 = cuda and torch.cuda.is_bf16_supported() and not args.no_bf16
    optim = args.optim or (PAPER_DEFAULTS["optim"] if cuda else "adamw_torch")
    quantize = args.load_in_4bit
    if not cuda:
        logger.warning(
            "no CUDA device: training on the CPU in float32 with %s%s (the paper used bf16, paged_adamw_32bit and 4-bit NF4 on GPUs)",
            optim, "; --load-in-4bit ignored" if quantize else "",
        )
        if optim.startswith("paged_"):
            raise SystemExit(f"--optim {optim} needs CUDA (bitsandbytes); use adamw_torch on the CPU")
        quantize = False
    return {"use_cpu": not cuda, "bf16": bf16, "optim": optim, "quantize": quantize}


def main(argv: list[str] | None = None) -> int:
    require_extra("train", "MIS-RAFT training (raft_trainer/train.py)")
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")

    import torch
    from transformers import AutoTokenizer

    from raft_trainer.config import RAFTConfig
    from raft_trainer.trainer import RAFTTrainer

    splits = load_scoring(args.dataset)
    input_source = prepare_inputs(splits, args)
    setting = {"modality": args.modality, "input_source": input_source}
    if input_source == "features":  # as the harness records it: text descriptors, no plots
        setting["feature_format"] = "text"
    settings = runtime_settings(args)
    tokenizer = AutoTokenizer.from_pretrained(args.model)
    processing_class = load_media_processor(args.model, args.modality) if input_source == "raw" else tokenizer
    output_dir = Path(args.output_dir)
    has_eval = "validation" in splits and not args.no_eval and any(s is not None for s in splits["validation"]["score"])

    model_init_kwargs = {"dtype": "bfloat16" if settings["bf16"] else "float32"}
    quantization_config = None
    if settings["quantize"]:
        require_extra("qlora", "--load-in-4bit")
        from transformers import BitsAndBytesConfig

        quantization_config = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_compute_dtype=torch.bfloat16, bnb_4bit_use_double_quant=True
        )
    peft_config = None
    if not args.no_lora:
        from peft import LoraConfig

        peft_config = LoraConfig(
            r=args.lora_r, lora_alpha=args.lora_alpha, lora_dropout=args.lora_dropout,
            target_modules=[m.strip() for m in args.lora_target.split(",") if m.strip()], task_type="CAUSAL_LM",
        )
    config = RAFTConfig(
        output_dir=str(output_dir),
        loss_type=args.loss_type,
        modality=args.modality,
        input_source="raw" if input_source == "raw" else "features",
        ce_weight=args.ce_weight,
        renormalize_digits=not args.paper_digit_probs,
        padding_side=args.padding_side,
        num_train_epochs=args.epochs,
        max_steps=args.max_steps,
        learning_rate=args.learning_rate,
        per_device_train_batch_size=args.per_device_batch_size,
        per_device_eval_batch_size=args.per_device_batch_size,
        gradient_accumulation_steps=args.grad_accum,
        max_length=args.max_length,
        bf16=settings["bf16"],
        use_cpu=settings["use_cpu"],
        optim=settings["optim"],
        seed=args.seed,
        train_sampling_strategy="sequential" if args.sequential else "random",
        logging_steps=args.logging_steps,
        eval_strategy="epoch" if has_eval else "no",
        save_strategy="no",
        report_to="none",
        model_init_kwargs=model_init_kwargs,
    )
    trainer = RAFTTrainer(
        args.model,
        args=config,
        train_dataset=splits["train"],
        eval_dataset=splits["validation"] if has_eval else None,
        processing_class=processing_class,
        peft_config=peft_config,
        quantization_config=quantization_config,
    )
    logger.info(
        "training on %d process(es), loss %s, modality %s (input source %s)",
        trainer.accelerator.num_processes, args.loss_type, args.modality, input_source,
    )
    train_result = trainer.train()
    trainer.save_model(str(output_dir))
    trainer.save_state()
    if trainer.accelerator.is_main_process:
        (output_dir / "setting.json").write_text(json.dumps(setting, indent=2))
    if trainer.accelerator.is_main_process:
        print(f"trained {trainer.state.global_step} steps, train loss {train_result.training_loss:.4f}; adapter in {output_dir}")
    if args.no_predict or "test" not in splits:
        return 0
    if trainer.accelerator.is_main_process:
        write_test_predictions(trainer, processing_class, splits["test"], output_dir, args, setting)
    trainer.accelerator.wait_for_everyone()
    return 0


def write_test_predictions(trainer, processing_class, test_split, output_dir: Path, args, setting: dict) -> None:
    from raft_trainer.predict import prediction_records, predict_scores

    model = trainer.accelerator.unwrap_model(trainer.model)
    rows = list(test_split)
    scores = predict_scores(
        model, processing_class, rows, batch_size=args.predict_batch_size, method=args.predict_method,
        max_length=args.max_length, renormalize=not args.paper_digit_probs, modality=args.modality,
        input_source="raw" if setting["input_source"] == "raw" else "features",
    )
    records = prediction_records(rows, scores)
    path = output_dir / "predictions_test.csv"
    from mis_icc_metric.predictions_io import write_predictions

    write_predictions(path, records)
    print(f"wrote {len(records)} test predictions ({setting['modality']}, input source {setting['input_source']}) to {path}")
    labelled = {(r["video_id"], r["dimension"]): float(r["score"]) for r in rows if r.get("score") is not None}
    if len(labelled) < 2:
        return
    from mis_icc_metric import score_predictions

    predictions = {(r["video_id"], r["dimension"]): r["prediction"] for r in records}
    result = score_predictions(predictions, labelled, n_bootstrap=1000, seed=args.seed)
    result["setting"] = setting
    (output_dir / "scores_test.json").write_text(json.dumps(result, indent=2, default=float))
    print(f"test mean ICC(3,1) {result.get('mean_icc')}, overall MSE {result['overall'].get('mse')}")


if __name__ == "__main__":
    try:
        sys.exit(main())
    except MisBenchError as err:
        print(f"train.py: error: {err.line()}", file=sys.stderr)
        sys.exit(err.exit_code)

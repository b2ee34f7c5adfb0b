"""Fine-tune a chat model on MIS-Bench scores with MIS-RAFT (paper §5).

    accelerate launch raft_trainer/train.py --model_name_or_path MODEL --dataset_dir DIR [--output_dir OUT] [FLAGS]
    accelerate launch --multi_gpu --num_processes 2 raft_trainer/train.py \
        --config raft_trainer/recipes/paper_d1.yaml --dataset_dir DIR       # the paper's Appendix D.1 setup

Flags (`--help`): every field of `RAFTScriptArguments`, `RAFTConfig` (TRL's SFTConfig plus the MIS-RAFT objective)
and `RAFTModelConfig` (TRL's ModelConfig) in `raft_trainer/arguments.py`, parsed by TRL's `TrlParser`, so a
`--config` YAML recipe sets any of them and flags override it. Runs on one CPU process, one GPU or several (DDP).
Writes to OUT: the LoRA adapter and tokenizer, `trainer_state.json`, `setting.json` (modality, input source,
prompt style, raw-video sampling),
`predictions_test.csv` (long form, read by `mis-bench score`) and, when the test split is labelled,
`scores_test.json`. The audio/video settings on the public release use feature-derived descriptors from the
dataset's `features` config (`input_source: features`, see `raft_trainer.media`). Without CUDA it trains in float32
(logged) and refuses, in one line, settings that need CUDA (4-bit, paged optimizers, bf16). `--no_train` predicts
without training (Table 4's raw inference; `recipes/paper_table4_raw.yaml`).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

from mis_bench_dataset.atomic import write_atomic
from mis_bench_dataset.errors import EXIT_USAGE, MisBenchError, require_extra

logger = logging.getLogger("raft_trainer.train")
PROG = "train.py"


def parse_arguments(argv: list[str] | None = None):
    """(RAFTScriptArguments, RAFTConfig, RAFTModelConfig) from the flags and `--config`; a bad value exits 2 with one
    line on stderr."""
    import yaml

    from raft_trainer.arguments import make_parser

    try:
        return make_parser(prog=PROG).parse_args_and_config(argv)
    except (ValueError, OSError, yaml.YAMLError, MisBenchError) as err:
        print(f"{PROG}: error: {' '.join(str(err).split())}", file=sys.stderr)
        raise SystemExit(EXIT_USAGE) from None


def check_scoring(splits, dataset: str) -> None:
    if "train" not in splits:
        raise SystemExit(f"{dataset}: the scoring config has no train split (found {list(splits)})")


def prepare_inputs(splits, dataset: str, modality: str, requested: str) -> str:
    """Resolve the input source of `modality` and attach each row's media context; returns the source.

    Refuses (SystemExit naming the reason) rather than training a multimodal setting on text alone.
    """
    from mis_bench_dataset.inputs import UnsupportedSetting, resolve_input_source
    from raft_trainer.media import attach_feature_context, load_feature_contexts

    try:
        source = resolve_input_source(modality, splits["train"], requested)
        if source == "features":
            contexts = load_feature_contexts(dataset, modality, list(splits))
            for name in list(splits):
                splits[name] = attach_feature_context(splits[name], contexts, modality, f"{dataset} {name} split")
            logger.info(
                "%s: feature-derived descriptors from the `features` config for %d videos", modality, len(contexts)
            )
    except UnsupportedSetting as err:
        raise SystemExit(str(err)) from err
    return source


def load_media_processor(model: str, modality: str):
    """The model's AutoProcessor, refused (SystemExit, with why) unless it takes the setting's media."""
    from transformers import AutoProcessor

    from mis_bench_dataset.inputs import UnsupportedSetting
    from raft_trainer.media import check_processor_takes_media

    try:
        processor = AutoProcessor.from_pretrained(model)
    except Exception as err:  # e.g. a video processor whose torchvision does not import
        raise SystemExit(
            f"--modality {modality} with raw media: cannot load the processor of {model!r} "
            f"({type(err).__name__}: {err}); "
            "raw video needs the model's processor with its video dependencies (torchvision); "
            "or use --input_source features"
        ) from err
    try:
        check_processor_takes_media(processor, modality)
    except UnsupportedSetting as err:
        raise SystemExit(str(err)) from err
    return processor


def eval_split(splits, training_args, dataset: str):
    """The validation split when `eval_strategy` asks for evaluation (it must be labelled), else None."""
    if training_args.eval_strategy == "no":
        return None
    validation = splits.get("validation")
    if validation is None or all(s is None for s in validation["score"]):
        raise SystemExit(
            f"--eval_strategy {training_args.eval_strategy.value}: {dataset} has no labelled validation split; "
            "use --eval_strategy no"
        )
    return validation


def log_device(training_args) -> None:
    import torch

    if training_args.use_cpu or not torch.cuda.is_available():
        logger.warning(
            "no CUDA device: training on the CPU in %s with %s (the paper's recipe, recipes/paper_d1.yaml, uses bf16, "
            "paged_adamw_32bit and 4-bit NF4 on GPUs)",
            "bfloat16" if training_args.bf16 else "float32",
            training_args.optim.value,
        )


# Deprecation warnings TRL and PEFT raise from their own code (TRL's config sets `gradient_checkpointing`, its and
# PEFT's helpers read `is_gradient_checkpointing`): nothing a user of this script can change, so not shown.
THIRD_PARTY_DEPRECATIONS = (r"`gradient_checkpointing` is deprecated", r"`is_gradient_checkpointing` is deprecated")


def _filter_third_party_warnings() -> None:
    import warnings

    for message in THIRD_PARTY_DEPRECATIONS:
        warnings.filterwarnings("ignore", message=message, category=FutureWarning)


def main(argv: list[str] | None = None) -> int:
    _filter_third_party_warnings()
    try:
        require_extra("train", "MIS-RAFT training (raft_trainer/train.py)")
    except MisBenchError as err:
        print(f"{PROG}: error: {err.line()}", file=sys.stderr)
        return err.exit_code
    script_args, training_args, model_args = parse_arguments(argv)
    if model_args.load_in_4bit or model_args.load_in_8bit:
        try:
            require_extra("qlora", "--load_in_4bit / --load_in_8bit")
        except MisBenchError as err:
            print(f"{PROG}: error: {err.line()}", file=sys.stderr)
            return err.exit_code
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    from mis_bench_dataset.loading import load_build

    try:
        with load_build(script_args.dataset_dir, "scoring") as splits:  # a private datasets cache
            return train_and_predict(splits, script_args, training_args, model_args)
    except MisBenchError as err:
        print(f"{PROG}: error: {err.line()}", file=sys.stderr)
        return err.exit_code


def train_and_predict(splits, script_args, training_args, model_args) -> int:
    from transformers import AutoTokenizer
    from trl import get_peft_config, get_quantization_config

    from mis_bench_dataset.build import is_synthetic_build
    from mis_bench_dataset.inputs import setting_media
    from raft_trainer.trainer import RAFTTrainer

    check_scoring(splits, script_args.dataset_dir)
    input_source = prepare_inputs(splits, script_args.dataset_dir, training_args.modality, training_args.input_source)
    setting = {
        "modality": training_args.modality,
        "input_source": input_source,
        "prompt_style": training_args.prompt_style,
        "trained": script_args.train,
        # the build report's rule: every output of synthetic data says so (setting.json, scores_test.json, stdout)
        "synthetic": bool(is_synthetic_build(script_args.dataset_dir)),
    }
    if input_source == "features":  # as the harness records it: text descriptors, no plots
        setting["feature_format"] = "text"
    if input_source == "raw" and "video" in setting_media(training_args.modality):
        setting["video"] = training_args.raw_video_sampling.as_record()
    log_device(training_args)
    model = model_args.model_name_or_path
    tokenizer = AutoTokenizer.from_pretrained(
        model, revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code
    )
    processing_class = load_media_processor(model, training_args.modality) if input_source == "raw" else tokenizer
    output_dir = Path(training_args.output_dir)
    eval_dataset = eval_split(splits, training_args, script_args.dataset_dir)

    # As TRL's scripts do: the model's loading arguments come from the model config, the trainer's own win.
    model_args.dtype = model_args.dtype or ("bfloat16" if training_args.bf16 else "float32")
    training_args.model_init_kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
        **(training_args.model_init_kwargs or {}),
    }
    trainer = RAFTTrainer(
        model,
        args=training_args,
        train_dataset=splits["train"],
        eval_dataset=eval_dataset,
        processing_class=processing_class,
        peft_config=get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
    )
    if script_args.train:
        logger.info(
            "training on %d process(es), objective %s, modality %s (input source %s), prompt style %s",
            trainer.accelerator.num_processes,
            training_args.raft_objective,
            training_args.modality,
            input_source,
            training_args.prompt_style,
        )
        train_result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
        trainer.save_model(str(output_dir))
        trainer.save_state()
    if trainer.accelerator.is_main_process:
        output_dir.mkdir(parents=True, exist_ok=True)
        write_atomic(output_dir / "setting.json", json.dumps(setting, indent=2, ensure_ascii=False) + "\n")
        if script_args.train:
            print(
                f"trained {trainer.state.global_step} steps, train loss {train_result.training_loss:.4f}; "
                f"adapter in {output_dir}"
            )
        else:
            print(f"no training (--no_train): predicting with {model} as loaded")
    if not script_args.predict or "test" not in splits:
        return 0
    if trainer.accelerator.is_main_process:
        write_test_predictions(trainer, processing_class, splits["test"], output_dir, script_args, setting)
    trainer.accelerator.wait_for_everyone()
    return 0


def write_test_predictions(trainer, processing_class, test_split, output_dir: Path, script_args, setting: dict) -> None:
    from mis_bench_dataset.loading import gold_references
    from raft_trainer.predict import predict_scores, prediction_records

    args = trainer.args
    model = trainer.accelerator.unwrap_model(trainer.model)
    rows = list(test_split)
    scores = predict_scores(
        model,
        processing_class,
        rows,
        batch_size=script_args.predict_batch_size,
        method=script_args.predict_method,
        max_length=args.max_length,
        renormalize=args.renormalize_digits,
        modality=args.modality,
        input_source="raw" if setting["input_source"] == "raw" else "features",
        prompt_style=args.prompt_style,
        video_sampling=args.raw_video_sampling,
    )
    records = prediction_records(rows, scores)
    path = output_dir / "predictions_test.csv"
    from mis_icc_metric.predictions_io import write_predictions

    write_predictions(path, records)
    print(
        f"wrote {len(records)} test predictions ({setting['modality']}, input source {setting['input_source']}, "
        f"prompt style {setting['prompt_style']}) to {path}"
    )
    labelled = gold_references(rows)
    if len(labelled) < 2:
        return
    from mis_icc_metric import score_predictions
    from mis_icc_metric.scoring import json_safe

    predictions = {(r["video_id"], r["dimension"]): r["prediction"] for r in records}
    result = score_predictions(predictions, labelled, n_bootstrap=1000, seed=args.seed)
    result["setting"] = setting
    result = {"synthetic": setting["synthetic"], **result}
    write_atomic(output_dir / "scores_test.json", json.dumps(json_safe(result), indent=2, allow_nan=False) + "\n")
    print(
        f"test mean ICC(3,1) {result.get('mean_icc')}, overall MSE {result['overall'].get('mse')}"
        + (" (SYNTHETIC data: these numbers say nothing about any model on MIS-Bench)" if setting["synthetic"] else "")
    )


if __name__ == "__main__":
    sys.exit(main())

"""Fine-tune a chat model on MIS-Bench scores with MIS-RAFT (paper §5).

    mis-bench train --model_name_or_path MODEL --dataset_dir DIR [--output_dir OUT] [--num_processes N] [FLAGS]
    accelerate launch raft_trainer/train.py --model_name_or_path MODEL --dataset_dir DIR [FLAGS]
    mis-bench train --config raft_trainer/recipes/paper_d1.yaml --dataset_dir DIR   # the paper's Appendix D.1 setup
    mis-bench train --accelerate_config fsdp|zero2|zero3|multi_gpu|FILE.yaml ...   # accelerate's layouts, as TRL's

Flags (`--help`): every field of `RAFTScriptArguments`, `RAFTConfig` (TRL's SFTConfig plus the MIS-RAFT objective)
and `RAFTModelConfig` (TRL's ModelConfig) in `raft_trainer/arguments.py`, parsed by TRL's `TrlParser`, so a
`--config` YAML recipe sets any of them and flags override it. Runs on one CPU process, one GPU or several (DDP:
`--num_processes N` checks the settings and the data first, then starts the processes with `accelerate launch`;
`--accelerate_config` with one of the shipped accelerate configurations or a file, for FSDP and DeepSpeed).
Writes to OUT (claimed through the output-ownership manifest: a folder holding files the toolkit did not write is
refused): the LoRA adapter and tokenizer, `trainer_state.json`, `setting.json` (modality, input source, prompt
style, raw-video sampling), `predictions_test.csv` (long form, read by `mis-bench score`) and, when the test split
is labelled, `scores_test.json`. Without CUDA it trains in float32 (logged) and refuses, in one line, settings that
need CUDA (4-bit, paged optimizers, bf16). `--no_train` predicts without training (Table 4's raw inference;
`recipes/paper_table4_raw.yaml`): no trainer, no tokenised train rows. Failures follow the toolkit's convention:
one line `PROG: error: WHAT (WHERE); WHAT TO DO`, exit 2 for a bad setting or flag, 1 for bad data.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import sys
import warnings
from pathlib import Path

from mis_bench_dataset.dimensions import SCORE_EXPECTED, SCORE_REGRESSION
from mis_bench_dataset.toolkit.errors import DataError, MisBenchError, UsageError, require_extra
from mis_bench_dataset.toolkit.text_safety import clean_line
from mis_icc_metric.resampling_options import ResamplingOptions

logger = logging.getLogger("raft_trainer.train")
PROG = "train.py"
TRAIN_WRITER = "train"  # the writer name of every file a training run leaves in --output_dir

PROG_ENV = "MIS_BENCH_TRAIN_PROG"  # launched processes: the program name they write their errors as
EXIT_FILE_ENV = "MIS_BENCH_TRAIN_EXIT_FILE"  # launched processes: where a refused one leaves its exit code

# Deprecation warnings TRL and PEFT raise from their own code (their helpers read `is_gradient_checkpointing`):
# nothing a user of this script can change, so not shown. (TRL's configs default the old `gradient_checkpointing`
# name; RAFTConfig gives that default under the new name, so it raises nothing to filter.)
THIRD_PARTY_DEPRECATIONS = (
    r"`is_gradient_checkpointing` is deprecated",
    r"`gradient_checkpointing_(en|dis)able` is deprecated",  # TRL's GRPOTrainer calls the old names (--method grpo)
)


def _filter_third_party_warnings() -> None:
    for message in THIRD_PARTY_DEPRECATIONS:
        warnings.filterwarnings("ignore", message=message, category=FutureWarning)


def _speaks() -> bool:
    """Whether this process prints the run's lines: alone, or the first of a launched group (the others would
    repeat each warning and refusal once per process)."""
    return os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) == "0"


def main(argv: list[str] | None = None, prog: str = PROG) -> int:
    """The script: `run`, with an expected failure printed as one line on stderr and its exit code returned."""
    _filter_third_party_warnings()
    if not _speaks():  # every process checks the same flags and data: the first says what they all found
        warnings.simplefilter("ignore")
        logging.getLogger().setLevel(logging.ERROR)
    try:
        return run(argv, prog)
    except MisBenchError as err:  # also a missing `train` extra: nothing of raft_trainer is imported here
        if _speaks():
            print(clean_line(f"{prog}: error: {err.line()}"), file=sys.stderr, flush=True)
        _report_exit_code(err.exit_code)
        return err.exit_code


def _report_exit_code(code: int) -> None:
    """In a launched process: leave the exit code of a refused run for the parent (the launcher exits 1)."""
    path = os.environ.get(EXIT_FILE_ENV)
    if path and "LOCAL_RANK" in os.environ:
        from mis_bench_dataset.toolkit.atomic import write_atomic

        with contextlib.suppress(OSError):
            write_atomic(path, str(code))


def run(argv: list[str] | None = None, prog: str = PROG) -> int:
    """Parse, check, then train and predict here, or start `--num_processes` processes that do; raises the
    toolkit's errors (`mis_bench_dataset.toolkit.errors`) for the caller to print."""
    require_extra("train", "MIS-RAFT training (raft_trainer/train.py)")
    _filter_third_party_warnings()  # `mis-bench train` calls this function, not `main`
    try:
        (script_args, training_args, model_args), given = parse_with_given(argv, prog)
    except SystemExit as stop:  # --help
        return stop.code if isinstance(stop.code, int) else 0
    logging.basicConfig(
        level=logging.INFO if _speaks() else logging.ERROR, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    with _bars_only_on_a_terminal():
        return _run_parsed(argv, prog, (script_args, training_args, model_args), given)


def _run_parsed(argv, prog: str, parsed: tuple, given: frozenset[str]) -> int:
    """`run` after parsing (the three argument dataclasses, and which flags or recipe keys were `given`):
    `train_from_arguments` (what `raft_trainer.main` runs), told the command line."""
    command_line = list(sys.argv[1:] if argv is None else argv)
    return train_from_arguments(*parsed, command_line=command_line, given=given, prog=prog)


def _max_length_chosen(training_args, given: frozenset[str] | None) -> bool:
    """Whether the user chose `max_length` (kept as it is, refused below the prompt floor) rather than left the
    default (raised to fit the build): the flag or recipe key given on a command line; from Python, a value other
    than the field's default."""
    if given is not None:
        return "max_length" in given
    from dataclasses import fields

    default = next(f.default for f in fields(training_args) if f.name == "max_length")
    return training_args.max_length != default


def train_from_arguments(
    script_args,
    training_args,
    model_args,
    *,
    command_line: list[str] | None = None,
    given: frozenset[str] | None = None,
    prog: str = PROG,
) -> int:
    """What `raft_trainer.main` and `run` (after parsing) do: check the settings and the build, then train and
    predict (or, from a command line with `num_processes` above 1 or `accelerate_config`, start the processes that
    do); 0 when done. Raises the toolkit's errors (`UsageError`, `DataError`) before any model loads for a setting
    or build it refuses.

    `command_line`: the flags the three dataclasses were parsed from (`train.py` passes them, with the flags and
    recipe keys they `given`): what launched processes are started with. From Python (None), start several
    processes with `accelerate launch your_script.py` (each calls `main`, as TRL's scripts do)."""
    from types import SimpleNamespace

    from mis_bench_dataset.dataset.loading import load_build
    from mis_bench_dataset.toolkit.ownership import check_not_overlapping
    from raft_trainer.arguments import refuse_cuda_only_settings
    from raft_trainer.launch import accelerate_config_file, launch_processes, under_launcher
    from raft_trainer.lora_targets import check_lora_targets
    from raft_trainer.methods import check_method

    if model_args.load_in_4bit or model_args.load_in_8bit:
        require_extra("qlora", "--load_in_4bit / --load_in_8bit")
    refuse_cuda_only_settings(SimpleNamespace(**{**vars(model_args), **vars(training_args)}))  # as the parser does
    check_method(script_args, training_args)
    output_dir = Path(training_args.output_dir)
    check_not_overlapping(output_dir, [script_args.dataset_dir], command="train", arg="--output_dir")
    config_file = accelerate_config_file(script_args.accelerate_config) if script_args.accelerate_config else None
    launching = (script_args.num_processes > 1 or config_file) and not under_launcher()
    if launching and command_line is None:
        raise UsageError(
            "main() trains in this process: num_processes and accelerate_config start processes from a command line",
            where="num_processes / accelerate_config",
            hint="run your script with `accelerate launch --num_processes N your_script.py`, or `mis-bench train`",
        )
    chosen = _max_length_chosen(training_args, given)
    with load_build(script_args.dataset_dir, "scoring") as splits:  # a private datasets cache
        check_run(splits, script_args, training_args, model=model_args.model_name_or_path)
        check_lora_targets(model_args, trust_remote_code=training_args.trust_remote_code)
        fit_max_length(splits, training_args, model_args, chosen=chosen)
        if launching:
            return launch_processes(
                script_args.num_processes,
                _argv(command_line),
                prog,
                prog_env=PROG_ENV,
                exit_file_env=EXIT_FILE_ENV,
                config_file=config_file,
            )
        return train_and_predict(splits, script_args, training_args, model_args)


@contextlib.contextmanager
def _bars_only_on_a_terminal():
    """transformers' and datasets' own bars (the Trainer's steps, "Tokenizing train dataset") follow the toolkit's
    rule: drawn on a terminal or with `mis-bench --progress`, never into a redirected stderr. The caller's own
    setting is back afterwards (`run` is called in-process by `mis-bench train`)."""
    from mis_bench_dataset.toolkit.progress import bars_shown

    if bars_shown():
        yield
        return
    import datasets
    import transformers

    datasets_off = datasets.utils.are_progress_bars_disabled()
    transformers_on = transformers.utils.logging.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    transformers.utils.logging.disable_progress_bar()
    try:
        yield
    finally:
        if not datasets_off:
            datasets.enable_progress_bars()
        if transformers_on:
            transformers.utils.logging.enable_progress_bar()


def _recipe_flags() -> str:
    """`methods.RECIPE_FLAGS`, imported when a refusal needs it: this file also runs as a script (`accelerate
    launch raft_trainer/train.py`), where importing the package first would hide its own missing-extra line."""
    from raft_trainer.methods import RECIPE_FLAGS

    return RECIPE_FLAGS


# `mis-bench run --score-from` in the trainer's words: the readout a trained model predicts with is its head's.
# (`raft_trainer.config.LM_HEAD` is "lm"; the regression head shares its readout's name, SCORE_REGRESSION.)
SCORE_FROM_HEADS = {SCORE_EXPECTED: "lm", SCORE_REGRESSION: SCORE_REGRESSION}


def _score_from_as_head(args: list[str]) -> list[str]:
    """`--score-from expected|regression` (the harness's name) as `--head lm|regression`; `text` is refused: the
    trainer reads scores from its head, never by parsing generated text."""
    out: list[str] = []
    values = iter(args)
    for arg in values:
        flag, _, inline = arg.partition("=")
        if flag not in ("--score-from", "--score_from"):
            out.append(arg)
            continue
        value = inline or next(values, "")
        if value not in SCORE_FROM_HEADS:
            raise UsageError(
                f"--score-from {value or '(none)'}: the trainer reads its scores from its head",
                where="--score-from",
                hint="use --score-from expected (the LM head's digits, --head lm) or regression (--head regression)",
            )
        out += ["--head", SCORE_FROM_HEADS[value]]
    return out


def _argv(argv: list[str] | None) -> list[str]:
    """The command line with `--config NAME` read as the shipped recipe of that name (a path wins where one exists:
    the recipe is found from any folder); a value that is neither is one usage line listing the recipes."""
    from raft_trainer.recipes import recipe_names, recipe_path

    args = _score_from_as_head(list(sys.argv[1:] if argv is None else argv))
    for index, arg in enumerate(args):
        if arg == "--config" and index + 1 < len(args):
            value, place = args[index + 1], index + 1
        elif arg.startswith("--config="):
            value, place = arg.split("=", 1)[1], None
        else:
            continue
        path = recipe_path(value)
        if path is None:
            raise UsageError(
                f"--config {value}: neither a recipe file nor a shipped recipe",
                where="--config",
                hint=f"give a YAML file's path or one of {', '.join(recipe_names())}",
            )
        if place is None:
            args[index] = f"--config={path}"
        else:
            args[place] = str(path)
    return args


def parse_arguments(argv: list[str] | None = None, prog: str = PROG):
    """(RAFTScriptArguments, RAFTConfig, RAFTModelConfig) from the flags and `--config`; a bad value, or a
    combination the method does not accept (`methods.check_method`), is a UsageError (exit 2)."""
    return parse_with_given(argv, prog)[0]


def parse_with_given(argv: list[str] | None = None, prog: str = PROG) -> tuple[tuple, frozenset[str]]:
    """`parse_arguments`' three dataclasses, and the fields the user gave (a flag, or a key of the `--config`
    recipe), recorded while parsing (`mis_bench_dataset.toolkit.given`): a value equal to its default may be a
    choice (`--max_length 512` is kept, never raised)."""
    import yaml

    from raft_trainer.arguments import make_parser

    parser = make_parser(prog=prog)
    try:
        parsed = parser.parse_args_and_config(_argv(argv))
    except MisBenchError:
        raise
    except (ValueError, OSError, yaml.YAMLError) as err:
        text = " ".join(str(err).split())
        unused = text.partition("Some specified arguments are not used by the HfArgumentParser: ")[2]
        if unused:  # HfArgumentParser's wording for flags no dataclass has
            raise UsageError(f"unrecognized arguments: {unused}", where="flags", hint=f"see `{prog} --help`") from None
        raise UsageError(text, where=_recipe_flags()) from None
    from raft_trainer.methods import check_method

    check_method(parsed[0], parsed[1])  # the method's table, before any data or model is loaded
    return parsed, parser.given


def check_run(splits, script_args, training_args, *, model: str = "") -> None:
    """Everything about the data and the setting that can be refused before a model is loaded (and before
    processes are started): a train split, the input source (resolved once, stored in `training_args`), a
    labelled validation split when evaluating, and an output folder holding only this writer's files."""
    from mis_bench_dataset.toolkit.ownership import check_replaceable_folder
    from raft_trainer.config import REGRESSION_HEAD

    dataset = script_args.dataset_dir
    if "train" not in splits:
        raise DataError(
            f"the scoring config has no train split (found {', '.join(splits)})",
            where=dataset,
            hint="give a folder written by `mis-bench build`",
        )
    if not script_args.train and training_args.head == REGRESSION_HEAD:
        raise UsageError(
            "--no_train --head regression would score with an untrained, randomly initialised head",
            where=_recipe_flags(),
            hint="train the head (drop --no_train), or predict a saved one with `mis-bench run --backend transformers`",
        )
    training_args.input_source = prepare_inputs(splits, dataset, training_args.modality, training_args.input_source)
    from raft_trainer.methods import check_method

    check_method(script_args, training_args)
    if training_args.completion_style == "cot" and script_args.train and not script_args.generate_rationales:
        attach_split_rationales(splits, script_args, training_args, model)
    if script_args.train:
        eval_split(splits, training_args, dataset)
    if os.environ.get("RANK", os.environ.get("LOCAL_RANK", "0")) == "0":  # before the main process writes anything
        check_replaceable_folder(training_args.output_dir, TRAIN_WRITER, command="train", arg="--output_dir")


TRANSCRIPT_ROOM = 256  # tokens of transcript a raised default max_length leaves beyond the longest prompt


def fit_max_length(splits, training_args, model_args, *, chosen: bool) -> None:
    """A `max_length` every row fits in with at least its prompt: the default (paper D.1: 512) is raised to the
    longest prompt without its transcript plus `TRANSCRIPT_ROOM` when the build's rubrics need more (a warning
    says so); a value the user chose below that floor is a usage error naming the row, before any model loads."""
    if training_args.max_length is None or training_args.input_source == "raw":
        return  # no limit; raw media rows are checked as they are encoded (media tokens are never cut)
    from transformers import AutoTokenizer

    from raft_trainer.cot import COT_COMPLETION, RATIONALE_COLUMN, CotScoringEncoder
    from raft_trainer.data import ScoringEncoder, prompt_floor
    from raft_trainer.digits import DigitTokens

    cot = training_args.completion_style == COT_COMPLETION  # CoT-RAFT's prompt carries its analysis instruction
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            model_args.model_name_or_path,
            revision=model_args.model_revision,
            trust_remote_code=training_args.trust_remote_code,
        )
        encoder = (CotScoringEncoder if cot else ScoringEncoder).for_setting(
            tokenizer, DigitTokens.from_tokenizer(tokenizer), training_args.setting, max_length=None
        )
    except (OSError, ValueError):
        return  # no tokenizer or no chat template: train_and_predict says so in one line
    columns = ["video_id", "dimension", *(["media_context"] if "media_context" in splits["train"].column_names else [])]
    # A CoT row's floor with an empty analysis (its rationale is a completion: never shortened, checked per row)
    rows = (
        {**r, RATIONALE_COLUMN: ""} if cot else r for split in splits.values() for r in split.select_columns(columns)
    )
    floor, row = prompt_floor(encoder, rows)
    if floor <= training_args.max_length:
        return
    where = f"video {row['video_id']}, dimension {row['dimension']}"
    fitted = -(-(floor + TRANSCRIPT_ROOM) // 64) * 64
    if chosen:
        raise UsageError(
            f"max_length {training_args.max_length} is too small: the prompt of {where} needs {floor} tokens with "
            "its transcript removed (instructions and rubric)",
            where="--max_length",
            hint=f"pass --max_length {fitted} or more, or leave it out (the default fits the build)",
        )
    logger.warning(
        "max_length raised from %d (paper D.1) to %d: the prompt of %s needs %d tokens with its transcript removed; "
        "--max_length N sets another",
        training_args.max_length,
        fitted,
        where,
        floor,
    )
    training_args.max_length = fitted


def rationales_dir(script_args, model: str) -> Path:
    """CoT-RAFT's rationale folder: `--rationales_dir`, or the default beside the build."""
    from raft_trainer.rationales import default_rationales_dir

    given = script_args.rationales_dir
    return Path(given) if given else default_rationales_dir(script_args.dataset_dir, model)


def rationale_splits(splits, training_args) -> list[str]:
    """The splits CoT-RAFT trains or evaluates on: train, and validation when evaluating."""
    return ["train"] + (["validation"] if training_args.eval_strategy != "no" and "validation" in splits else [])


def attach_split_rationales(splits, script_args, training_args, model: str) -> None:
    """CoT-RAFT's second stage: the rationales of stage one joined to the train (and validation) rows."""
    from raft_trainer.rationales import attach_rationales, read_rationales

    folder = rationales_dir(script_args, model)
    found = read_rationales(folder)
    for name in rationale_splits(splits, training_args):
        splits[name] = attach_rationales(splits[name], found, f"{folder}, {name} split")


def prepare_inputs(splits, dataset: str, modality: str, requested: str) -> str:
    """Resolve the input source of `modality` and attach each row's media context; returns the source.

    Refuses (an UnsupportedSetting, exit 2, naming the reason) rather than training a multimodal setting on text.
    """
    from mis_bench_dataset.setting_inputs import resolve_input_source
    from raft_trainer.media import attach_feature_context, load_feature_contexts

    source = resolve_input_source(modality, splits["train"], requested)
    if source == "features":
        contexts = load_feature_contexts(dataset, modality, list(splits))
        for name in list(splits):
            splits[name] = attach_feature_context(splits[name], contexts, modality, f"{dataset} {name} split")
        logger.info("%s: feature-derived descriptors from the `features` config for %d videos", modality, len(contexts))
    return source


def load_media_processor(model: str, modality: str):
    """The model's AutoProcessor, refused (a UsageError, with why) unless it takes the setting's media."""
    from transformers import AutoProcessor

    from raft_trainer.media import check_processor_takes_media

    try:
        processor = AutoProcessor.from_pretrained(model)
    except Exception as err:  # e.g. a video processor whose torchvision does not import
        raise UsageError(
            f"--modality {modality} with raw media: cannot load the processor of {model!r} "
            f"({type(err).__name__}: {err})",
            where="--model_name_or_path",
            hint="raw video needs the model's processor with its video dependencies (torchvision); "
            "or use --input_source features",
        ) from err
    check_processor_takes_media(processor, modality)
    return processor


def eval_split(splits, training_args, dataset: str):
    """The validation split when `eval_strategy` asks for evaluation (it must be labelled), else None."""
    if training_args.eval_strategy == "no":
        return None
    validation = splits.get("validation")
    if validation is None or all(s is None for s in validation["score"]):
        raise UsageError(
            f"--eval_strategy {training_args.eval_strategy.value}: {dataset} has no labelled validation split",
            where=_recipe_flags(),
            hint="use --eval_strategy no",
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


def run_setting(script_args, training_args) -> dict:
    """The `setting` block of `setting.json` and `scores_test.json` (the toolkit's one writer of it)."""
    from mis_bench_dataset.dataset.handle import BuiltDataset
    from mis_bench_dataset.protocol import setting_record
    from mis_bench_dataset.setting_inputs import setting_media

    video = training_args.raw_video_sampling if "video" in setting_media(training_args.modality) else None
    return setting_record(
        training_args.modality,
        training_args.prompt_style,
        training_args.input_source,
        feature_format="text",  # as the harness records it: text descriptors, no plots
        video=video,
        trained=script_args.train,
        **method_record(script_args, training_args),
        # the build report's rule: every output of synthetic data says so (setting.json, scores_test.json, stdout)
        synthetic=bool(BuiltDataset.open(script_args.dataset_dir).synthetic),
    )


def method_record(script_args, training_args) -> dict:
    """The run's name in the comparison of methods (`method`: the objective or `regression`; `grpo`; `cot-` and the
    objective for CoT-RAFT; `raw` untrained), and the completion style when it is not the score line (with CoT, the
    analysis' token budget its predictions use: `mis-bench run` on the folder reads it the same way)."""
    from raft_trainer.cot import COT_COMPLETION, SCORE_COMPLETION
    from raft_trainer.methods import RAFT_METHOD

    if not script_args.train:
        method = "raw"
    elif script_args.method != RAFT_METHOD:
        method = script_args.method
    elif training_args.completion_style == COT_COMPLETION:
        method = f"cot-{training_args.method}"
    else:
        method = training_args.method
    record = {"method": method}
    if training_args.completion_style != SCORE_COMPLETION:
        record["completion_style"] = training_args.completion_style
    if training_args.completion_style == COT_COMPLETION:
        record["rationale_max_new_tokens"] = script_args.rationale_max_new_tokens
    return record


def train_and_predict(splits, script_args, training_args, model_args) -> int:
    """Train (unless `--no_train`), save, record the setting and predict the test split; `check_run` first."""
    from accelerate import PartialState
    from transformers import AutoTokenizer

    from mis_bench_dataset.toolkit.ownership import OutputFolder

    model = model_args.model_name_or_path
    try:
        tokenizer = AutoTokenizer.from_pretrained(
            model, revision=model_args.model_revision, trust_remote_code=training_args.trust_remote_code
        )
    except OSError as err:  # no such folder, no tokenizer files, or a Hub id while offline
        raise UsageError(
            f"cannot load the tokenizer of {model!r}: {' '.join(str(err).split())[:300]}",
            where="--model_name_or_path",
            hint="give a local model folder or a Hub id this machine can download",
        ) from None
    raw = training_args.input_source == "raw"
    processing_class = load_media_processor(model, training_args.modality) if raw else tokenizer
    set_model_init_kwargs(training_args, model_args)
    if script_args.generate_rationales:
        return write_split_rationales(splits, script_args, training_args, model_args, tokenizer)
    if script_args.train:
        log_device(training_args)
        trained, note = train(splits, script_args, training_args, model_args, processing_class)
    else:
        trained = load_untrained(model, training_args, model_args)
        note = f"no training (--no_train): predicting with {model} as loaded"
    state = PartialState()
    if state.is_main_process:
        record_trainer_files(training_args.output_dir)
        out = OutputFolder(
            training_args.output_dir, command="train", arg="--output_dir", inputs=[script_args.dataset_dir]
        )
        setting = run_setting(script_args, training_args)
        write_json(out, "setting.json", setting)
        print(note)
        if script_args.predict and "test" in splits:
            write_test_predictions(trained, processing_class, splits["test"], out, script_args, training_args, setting)
    state.wait_for_everyone()
    return 0


def set_model_init_kwargs(training_args, model_args) -> None:
    """As TRL's scripts do: the model's loading arguments come from the model config, the trainer's own win."""
    model_args.dtype = model_args.dtype or ("bfloat16" if training_args.bf16 else "float32")
    training_args.model_init_kwargs = {
        "revision": model_args.model_revision,
        "trust_remote_code": training_args.trust_remote_code,
        "attn_implementation": model_args.attn_implementation,
        "dtype": model_args.dtype,
        **(training_args.model_init_kwargs or {}),
    }


def write_split_rationales(splits, script_args, training_args, model_args, tokenizer) -> int:
    """CoT-RAFT's first stage (TRACT): the base model's rationales of the labelled train (and validation) rows,
    written beside the build (`raft_trainer.rationales.write_rationales`: seeded, resumable)."""
    from raft_trainer.cot import CotScoringEncoder
    from raft_trainer.digits import DigitTokens
    from raft_trainer.rationales import write_rationales

    model = model_args.model_name_or_path
    folder = rationales_dir(script_args, model)
    rows = [row for name in rationale_splits(splits, training_args) for row in splits[name] if row["score"] is not None]
    digits = DigitTokens.from_tokenizer(tokenizer)
    encoder = CotScoringEncoder(tokenizer, digits, training_args.max_length, prompt_style=training_args.prompt_style)
    settings = {
        "model": model,
        "seed": training_args.seed,
        "temperature": script_args.rationale_temperature,
        "max_new_tokens": script_args.rationale_max_new_tokens,
        "max_length": training_args.max_length,
        "synthetic": run_setting(script_args, training_args)["synthetic"],
        "batch_size": script_args.predict_batch_size,
    }
    loaded = load_untrained(model, training_args, model_args)
    written, kept = write_rationales(
        loaded,
        encoder,
        rows,
        folder,
        settings,
        inputs=[script_args.dataset_dir],
    )
    print(f"rationales of {len(rows)} rows in {folder}: {written} parts written, {kept} kept from an earlier run")
    return 0


def train(splits, script_args, training_args, model_args, processing_class):
    """(the trained model, unwrapped; the line that says what was trained): RAFTTrainer (or, with `--method grpo`,
    TRL's GRPOTrainer) on the train split."""
    from trl import get_peft_config, get_quantization_config

    from raft_trainer.methods import GRPO_METHOD
    from raft_trainer.trainer import RAFTTrainer

    if script_args.method == GRPO_METHOD:
        from raft_trainer.grpo import make_grpo_trainer

        trainer = make_grpo_trainer(
            model_args.model_name_or_path,
            training_args,
            script_args,
            splits["train"],
            processing_class,
            peft_config=get_peft_config(model_args),
            quantization_config=get_quantization_config(model_args),
        )
        return _train_and_save(trainer, training_args, "GRPO")
    trainer = RAFTTrainer(
        model_args.model_name_or_path,
        args=training_args,
        train_dataset=splits["train"],
        eval_dataset=eval_split(splits, training_args, script_args.dataset_dir),
        processing_class=processing_class,
        peft_config=get_peft_config(model_args),
        quantization_config=get_quantization_config(model_args),
    )
    logger.info(
        "training on %d process(es), method %s, modality %s (input source %s), prompt style %s",
        trainer.accelerator.num_processes,
        training_args.method,
        training_args.modality,
        training_args.input_source,
        training_args.prompt_style,
    )
    return _train_and_save(trainer, training_args)


def _train_and_save(trainer, training_args, method: str = ""):
    """Train, save the adapter and the state; (the model, unwrapped; the line saying what was trained)."""
    from transformers.trainer_callback import ProgressCallback

    from mis_bench_dataset.toolkit.progress import bars_shown

    if not bars_shown():
        trainer.remove_callback(ProgressCallback)  # its bar; the losses stay in trainer_state.json
    result = trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model(training_args.output_dir)
    trainer.save_state()
    what = f"{method} " if method else ""
    note = (
        f"trained {trainer.state.global_step} {what}steps, train loss {result.training_loss:.4f}; "
        f"adapter in {training_args.output_dir}"
    )
    return trainer.accelerator.unwrap_model(trainer.model), note


def load_untrained(model: str, training_args, model_args):
    """The model as loaded for the raw-inference condition: TRL's loader with the run's dtype and quantization,
    no trainer (so no train rows are tokenised) and no adapter (a fresh LoRA adapter is the identity)."""
    from trl import get_quantization_config
    from trl.trainer.utils import create_model_from_path

    kwargs = dict(training_args.model_init_kwargs)
    quantization = get_quantization_config(model_args)
    if quantization is not None:
        kwargs["quantization_config"] = quantization
    return create_model_from_path(model, **kwargs)


def record_trainer_files(output_dir: str | Path) -> None:
    """Record the files the trainer wrote (adapter, tokenizer, state, checkpoints) as this writer's in the
    folder's ownership manifest: `check_run` refused a folder holding anything else, so every file in it is the
    run's, and the next run may replace them."""
    from mis_bench_dataset.toolkit.ownership import LOCK_NAME, MANIFEST_NAME, read_manifest, update_manifest

    root = Path(output_dir)
    root.mkdir(parents=True, exist_ok=True)
    owned = read_manifest(root)
    files = [p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() or p.is_symlink()]
    new = {rel: TRAIN_WRITER for rel in files if rel not in (MANIFEST_NAME, LOCK_NAME) and rel not in owned}
    if new:
        update_manifest(root, new)  # under the folder's lock, like every other writer


def write_json(out, name: str, obj: dict) -> Path:
    """Claim `name` in the output folder and write `obj` to it atomically, NaN as null."""
    from mis_bench_dataset.toolkit.atomic import write_atomic
    from mis_bench_dataset.toolkit.jsonio import json_safe

    path = out.claim(name, TRAIN_WRITER)
    write_atomic(path, json.dumps(json_safe(obj), indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    return path


def write_test_predictions(model, processing_class, test_split, out, script_args, config, setting: dict) -> None:
    """`predictions_test.csv` and, when the split is labelled, `scores_test.json` (with the setting)."""
    from mis_bench_dataset.dataset.loading import gold_references
    from mis_bench_dataset.dimensions import PAPER_BOOTSTRAP_RESAMPLES
    from mis_bench_dataset.wording import SYNTHETIC_LINE
    from mis_icc_metric import score_predictions
    from mis_icc_metric.predictions_io import write_predictions
    from raft_trainer.predict import ReadoutOptions, predict_scores, prediction_records

    rows = list(test_split)
    if config.completion_style == "cot":
        scores = predict_cot(model, processing_class, rows, script_args, config)
    else:
        scores = predict_scores(
            model,
            processing_class,
            rows,
            config,
            readout=ReadoutOptions(batch_size=script_args.predict_batch_size, method=script_args.predict_method),
        )
    records = prediction_records(rows, scores)
    path = write_predictions(out.claim("predictions_test.csv", TRAIN_WRITER), records)
    print(
        f"wrote {len(records)} test predictions ({setting['modality']}, input source {setting['input_source']}, "
        f"prompt style {setting['prompt_style']}) to {path}"
    )
    labelled = gold_references(rows)
    if len(labelled) < 2:
        return
    predictions = {(r["video_id"], r["dimension"]): r["prediction"] for r in records}
    result = score_predictions(
        predictions, labelled, resampling=ResamplingOptions(n_bootstrap=PAPER_BOOTSTRAP_RESAMPLES, seed=config.seed)
    )
    result = {"synthetic": setting["synthetic"], **result, "setting": setting}
    write_json(out, "scores_test.json", result)
    print(score_line(result) + (f" ({SYNTHETIC_LINE.rstrip('.')})" if setting["synthetic"] else ""))


def predict_cot(model, processing_class, rows, script_args, config):
    """A CoT-RAFT model's test scores: its greedy analysis, then the expected final score
    (`raft_trainer.rationales.predict_cot_scores`)."""
    from raft_trainer.cot import CotScoringEncoder
    from raft_trainer.digits import DigitTokens
    from raft_trainer.predict import ReadoutOptions
    from raft_trainer.rationales import predict_cot_scores

    tokenizer = getattr(processing_class, "tokenizer", processing_class)
    encoder = CotScoringEncoder(
        tokenizer, DigitTokens.from_tokenizer(tokenizer), config.max_length, prompt_style=config.prompt_style
    )
    return predict_cot_scores(
        model,
        encoder,
        rows,
        max_new_tokens=script_args.rationale_max_new_tokens,
        readout=ReadoutOptions(
            batch_size=script_args.predict_batch_size,
            method=script_args.predict_method,
            renormalize=config.renormalize_digits,
        ),
    )


def score_line(result: dict) -> str:
    """The test split's scores as `mis-bench score` prints them: ICC in percent to one decimal, with its 95% CI."""
    from mis_bench_dataset.toolkit.numbers import ci_pct, num, pct

    overall = result["overall"]

    def ci(entry: dict, key: str) -> str:  # a withheld CI (mis_icc_metric.reporting_floor) says why
        reason = (entry.get("withheld") or {}).get(key)
        return f"(CI withheld: {reason})" if reason else f"{ci_pct(entry.get(key))} (95% CI)"

    return (
        f"test mean ICC(3,1) {pct(result.get('mean_icc'))}% {ci(result, 'mean_icc_ci')}, "
        f"overall ICC {pct(overall.get('icc'))}% {ci(overall, 'icc_ci')}, MSE {num(overall.get('mse'))}"
    )


if __name__ == "__main__":
    sys.exit(main(prog=os.environ.get(PROG_ENV, PROG)))

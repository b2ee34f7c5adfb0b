"""`--num_processes N` / `--accelerate_config NAME|PATH`: start `raft_trainer/train.py` in several processes with
`accelerate launch`, the toolkit's way.

`--accelerate_config` takes a file shipped in `raft_trainer/accelerate_configs` by name (DDP, FSDP2, DeepSpeed
ZeRO-2/3, as TRL ships them) or a path to the user's own; it is read with accelerate's own loader before anything
starts (an unknown key is refused), and FSDP or DeepSpeed on a machine without CUDA is refused in one line
(accelerate runs CPU processes as DDP whatever the file says, so the layout asked for would not be the one run).

The parent has already parsed the flags and checked the data and the setting (`train.check_run`), so a bad setting
is refused in one line before any process starts. Every launcher setting is passed explicitly (no "values were not
passed to `accelerate launch`" block); the children write their errors as the parent's program name, and when one
fails its one line is kept and the launcher's own traceback (accelerate's `CalledProcessError`, torch elastic's
`ChildFailedError` report) is dropped; the exit code is the child's (2 usage, 1 data).
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

TRAIN_SCRIPT = Path(__file__).with_name("train.py")


def under_launcher() -> bool:
    """Whether this process is one of a launched group (torch.distributed / accelerate set LOCAL_RANK)."""
    return "LOCAL_RANK" in os.environ


def launch_command(num_processes: int, argv: list[str], config_file: Path | None = None) -> list[str]:
    """`accelerate launch` of train.py: without `config_file`, DDP in `num_processes` processes on this machine (gloo
    on a CPU, NCCL on GPUs); with it, the file's layout, machines and process count (`num_processes` above 1
    overrides the count). TrainingArguments' bf16/fp16 decide the precision, whatever `--mixed_precision no` says."""
    if config_file is None:
        layout = ["--multi_gpu", "--num_processes", str(num_processes), "--num_machines", "1"]
    else:
        layout = ["--config_file", str(config_file)]
        layout += ["--num_processes", str(num_processes)] if num_processes > 1 else []
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        *layout,
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        str(TRAIN_SCRIPT),
        *argv,
    ]


def accelerate_config_file(value: str, *, cuda: bool | None = None) -> Path:
    """The accelerate configuration `--accelerate_config` names: a shipped one by name, else a file's path; read with
    accelerate's loader. Raises a UsageError for an unknown name, a file accelerate refuses, or FSDP / DeepSpeed
    without CUDA (`cuda`: whether this machine has it; asked of torch when None)."""
    from mis_bench_dataset.toolkit.errors import UsageError
    from raft_trainer.accelerate_configs import ACCELERATE_CONFIGS, NEEDS_CUDA, config_path

    path = config_path(value) if value in ACCELERATE_CONFIGS else Path(value).expanduser()
    names = ", ".join(ACCELERATE_CONFIGS)
    if not path.is_file():
        raise UsageError(
            f"--accelerate_config {value}: neither a shipped configuration nor a file",
            where="--accelerate_config",
            hint=f"give one of {names} or the path of an accelerate YAML file",
        )
    layout = load_accelerate_config(path, value)
    if layout in NEEDS_CUDA and not (_cuda_available() if cuda is None else cuda):
        raise UsageError(
            f"--accelerate_config {value}: {layout} needs CUDA GPUs (accelerate runs CPU processes as DDP)",
            where="--accelerate_config",
            hint="on a CPU use --accelerate_config multi_gpu or --num_processes N",
        )
    return path


def load_accelerate_config(path: Path, value: str | None = None) -> str:
    """The file's `distributed_type` ("MULTI_GPU", "FSDP", "DEEPSPEED", ...), read by accelerate's own loader (an
    unknown key or value is refused there: a UsageError naming the file)."""
    from accelerate.commands.config.config_args import load_config_from_file

    from mis_bench_dataset.toolkit.errors import UsageError

    try:
        return str(load_config_from_file(str(path)).distributed_type.value)
    except (ValueError, TypeError, KeyError, AttributeError, OSError, yaml_error()) as err:
        reason = " ".join(str(err).replace(str(path), "it").split())[:240]
        raise UsageError(
            f"--accelerate_config {value or path}: accelerate cannot read it ({reason})",
            where="--accelerate_config",
            hint="fix the file (`accelerate config --config_file FILE` writes one)",
        ) from None


def yaml_error() -> type[Exception]:
    import yaml

    return yaml.YAMLError


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def launch_processes(
    num_processes: int,
    argv: list[str],
    prog: str,
    *,
    prog_env: str,
    exit_file_env: str,
    config_file: Path | None = None,
) -> int:
    """Run the launched group, its stderr shown as it comes but for the launcher's report of a failed child.

    `prog_env` / `exit_file_env`: the environment variables `train.py` reads in a launched process (its program
    name, where a refused process leaves its exit code); they are train.py's, so this module imports nothing of it.
    """
    with tempfile.TemporaryDirectory(prefix="mis_bench_launch_") as tmp:
        exit_file = Path(tmp) / "exit"
        env = dict(os.environ, **{prog_env: prog, exit_file_env: str(exit_file)})
        env.setdefault("TOKENIZERS_PARALLELISM", "false")
        command = launch_command(num_processes, argv, config_file)
        proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
        errors = filter_stderr(proc.stderr, f"{prog}: error: ")
        code = proc.wait()
        if code == 0:
            return 0
        if errors and exit_file.is_file():
            return int(exit_file.read_text().strip() or 1)
        return code


def filter_stderr(stream, error_prefix: str, out=None) -> list[str]:
    """Copy `stream` to `out` (stderr) line by line until a child's one-line error, which is shown once; the
    launcher's traceback after it is dropped. Returns the error lines seen."""
    out = out or sys.stderr
    errors: list[str] = []
    for line in stream:
        if line.startswith(error_prefix):
            if line not in errors:
                out.write(line)
                out.flush()
            errors.append(line)
        elif not errors:
            out.write(line)
            out.flush()
    return errors

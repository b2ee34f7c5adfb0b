"""`--num_processes N`: start `raft_trainer/train.py` in N processes with `accelerate launch`, the toolkit's way.

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


def launch_command(num_processes: int, argv: list[str]) -> list[str]:
    """`accelerate launch` of train.py in `num_processes` processes on this machine (gloo on a CPU, NCCL on GPUs);
    TrainingArguments' bf16/fp16 decide the precision, whatever `--mixed_precision no` says."""
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        str(num_processes),
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        str(TRAIN_SCRIPT),
        *argv,
    ]


def launch_processes(num_processes: int, argv: list[str], prog: str, *, prog_env: str, exit_file_env: str) -> int:
    """Run the launched group, its stderr shown as it comes but for the launcher's report of a failed child.

    `prog_env` / `exit_file_env`: the environment variables `train.py` reads in a launched process (its program
    name, where a refused process leaves its exit code); they are train.py's, so this module imports nothing of it.
    """
    with tempfile.TemporaryDirectory(prefix="mis_bench_launch_") as tmp:
        exit_file = Path(tmp) / "exit"
        env = dict(os.environ, **{prog_env: prog, exit_file_env: str(exit_file)})
        env.setdefault("TOKENIZERS_PARALLELISM", "false")
        proc = subprocess.Popen(launch_command(num_processes, argv), env=env, stderr=subprocess.PIPE, text=True)
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

"""accelerate configuration files for `mis-bench train --accelerate_config NAME|PATH` (a package so that setup.cfg's
package_data ships them), modelled on TRL's `examples/accelerate_configs`: DDP on several GPUs, FSDP2, DeepSpeed
ZeRO-2 and ZeRO-3, each with the settings a LoRA / QLoRA run needs (the comments in each file).

`mixed_precision` is 'no' in every file, as `raft_trainer.launch` passes it: the run's `--bf16` / `--fp16` decide the
precision (transformers hands them to accelerate and DeepSpeed), so a recipe means the same under every layout.
`num_processes` is 2 (two GPUs); `mis-bench train --num_processes N` overrides it.
"""

from pathlib import Path

ACCELERATE_CONFIGS_DIR = Path(__file__).resolve().parent
# name -> (file, what it is); the names `--accelerate_config` takes
ACCELERATE_CONFIGS = {
    "multi_gpu": "DDP: one full copy of the model (and its LoRA adapter) per GPU",
    "fsdp": "FSDP2: parameters, gradients and optimizer states sharded over the GPUs",
    "zero2": "DeepSpeed ZeRO-2: optimizer states and gradients sharded",
    "zero3": "DeepSpeed ZeRO-3: parameters sharded too",
}
# accelerate turns CPU processes into DDP (`MULTI_CPU`) whatever the file says: these need CUDA GPUs.
NEEDS_CUDA = ("FSDP", "DEEPSPEED")


def config_path(name: str) -> Path:
    """The shipped file of `name` (one of ACCELERATE_CONFIGS)."""
    return ACCELERATE_CONFIGS_DIR / f"{name}.yaml"

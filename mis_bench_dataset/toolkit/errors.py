"""The toolkit's expected failures, defined once, so the CLI can print each as one line.

Every layer raises these (or subclasses of them) for failures a user can fix; the `mis-bench`
CLI prints `mis-bench CMD: error: WHAT (WHERE); WHAT TO DO` and exits with `exit_code`:
2 usage (a bad argument, a missing optional dependency), 1 data (a bad file or folder),
3 failed model requests. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import importlib
import importlib.util
from pathlib import Path
from types import ModuleType

EXIT_DATA = 1
EXIT_USAGE = 2
EXIT_REQUESTS = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143  # 128 + SIGTERM, as a shell reports a process SIGTERM ended


class MisBenchError(Exception):
    """A failure the user can fix: what went wrong, where, and what to do about it."""

    exit_code = EXIT_DATA

    def __init__(self, what: str, *, where: str | None = None, hint: str | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.where = where
        self.hint = hint

    def line(self) -> str:
        """The one-line form: `WHAT (WHERE); WHAT TO DO`."""
        text = self.what
        if self.where:
            text += f" ({self.where})"
        if self.hint:
            text += f"; {self.hint}"
        return text

    def __str__(self) -> str:
        return self.line()


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C's KeyboardInterrupt (the CLI installs the handler), so every `finally`
    and cleanup runs: temporary files and staging folders are removed, finished outputs are kept."""


class UsageError(MisBenchError, ValueError):
    """A bad argument or a command that cannot run as asked (exit 2). A ValueError for library callers."""

    exit_code = EXIT_USAGE


class DataError(MisBenchError, ValueError):
    """A bad, missing or foreign file or folder (exit 1). A ValueError for library callers."""

    exit_code = EXIT_DATA


# What an operating-system error at a path means and what to do, per errno: the one wording for every command
# (`mis-bench` prints `os_error_line`; argument checks put it under the flag).
_OS_ERRORS: dict[int, tuple[str, str]] = {
    errno.EACCES: ("permission denied", "give your user access to it (read an input, write an output), or use a copy"),
    errno.EPERM: ("operation not permitted", "give your user access to it, or choose another path"),
    errno.ENOTDIR: ("a file where a folder is expected", "give a folder, or remove the file in the way"),
    errno.EISDIR: ("a folder where a file is expected", "give a file path, or remove the folder in the way"),
    errno.ENAMETOOLONG: ("file name too long", "use a shorter path (each name at most 255 bytes)"),
    errno.ELOOP: ("too many levels of symbolic links", "the path's links loop; fix or remove the link"),
    errno.EIO: ("input/output error", "the disk or share failed to read or write: check the device, then rerun"),
    errno.ENOENT: ("no such file or folder", "check the path"),
    errno.ENOSPC: ("no space left on the device", "free space, or choose an output on another disk"),
    errno.EROFS: ("read-only file system", "choose an output on a writable disk"),
}


def os_error_line(err: OSError, where: str | None = None) -> str:
    """`WHAT (PATH); WHAT TO DO` for an operating-system error at a path (`where`: the path, default the error's)."""
    what, todo = _OS_ERRORS.get(
        err.errno, (err.strerror or type(err).__name__, "check the path, or rerun with --debug")
    )
    path = where or err.filename
    return f"{what}" + (f" ({path})" if path else "") + f"; {todo}"


class MissingExtraError(UsageError):
    """An optional dependency is not installed; names the extra that brings it."""


# The importable packages each extra brings that the toolkit checks for (setup.cfg's extras list
# their distributions; tests/test_packaging.py keeps the two in step). A plain install has none.
EXTRA_MODULES: dict[str, tuple[str, ...]] = {
    "train": ("torch", "transformers", "trl", "peft", "accelerate"),
    "qlora": ("bitsandbytes",),
    "space": ("starlette", "uvicorn"),
}


# The torch wheel the docs and CI install first, so that an extra's `torch` requirement is met by the build the
# user chose instead of whatever the index serves (on Linux, PyPI's torch is a multi-GB CUDA build with its NVIDIA
# packages). A CPU-only machine takes PyTorch's CPU wheel index (pip's `--index-url`; what the tests need); a CUDA
# machine the default wheel. README.md, docs/installation.md and scripts/check give the same two commands.
TORCH_PIN = "torch==2.13.0"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
TORCH_CPU_COMMAND = f"pip install {TORCH_PIN} --index-url {TORCH_CPU_INDEX}"
TORCH_CUDA_COMMAND = f"pip install {TORCH_PIN}"
DISTRIBUTION = "mis-bench"


def checkout_root() -> Path | None:
    """The source checkout the toolkit runs from (an editable install or PYTHONPATH), or None when it was
    installed from a wheel (the packages then sit in site-packages, with no setup.cfg beside them)."""
    root = Path(__file__).resolve().parents[2]  # mis_bench_dataset/toolkit/errors.py -> the checkout
    setup = root / "setup.cfg"
    try:
        declared = setup.is_file() and f"name = {DISTRIBUTION}" in setup.read_text(encoding="utf-8")
    except OSError:
        declared = False
    return root if declared else None


def install_hint(extra: str) -> str:
    """The install command that works for how the toolkit was installed.

    From a checkout the extra is installed from the checkout (`mis-bench` is not on the package index);
    from a wheel, as the installed distribution's extra. Extras that bring torch start with the pinned
    torch for the machine: the CPU wheel index on a CPU-only machine, the default (CUDA) wheel with a GPU.
    """
    root = checkout_root()
    if root is None:
        target = f"pip install '{DISTRIBUTION}[{extra}]'"
    else:
        where = "." if Path.cwd().resolve() == root else str(root)
        target = f'pip install -e "{where}[{extra}]"'
    if "torch" in EXTRA_MODULES.get(extra, ("torch",)):
        return (
            f"install it with: {TORCH_CPU_COMMAND} (a CPU-only machine; with a CUDA GPU: {TORCH_CUDA_COMMAND}), "
            f"then {target}"
        )
    return f"install it with: {target}"


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import `module`, or raise MissingExtraError saying which extra to install for `purpose`."""
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(
            f"{purpose} needs the Python package {module.split('.')[0]!r}, which is not installed",
            where=str(err),
            hint=install_hint(extra),
        ) from err


def require_extra(extra: str, purpose: str) -> None:
    """Raise MissingExtraError unless every package of `extra` is importable (checked without importing)."""
    missing = [name for name in EXTRA_MODULES[extra] if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtraError(
            f"{purpose} needs the {extra!r} extra; not installed: {', '.join(missing)}",
            hint=install_hint(extra),
        )

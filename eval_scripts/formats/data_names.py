"""How an output names the data it was made from, and whether it says SYNTHETIC.

One rule for "is this synthetic": the build report's `synthetic` field
(`mis_bench_dataset.BuiltDataset.synthetic`), which a run carries into its results' `dataset`
block. Data is named by its name (the default synthetic sample, the build's path or folder name),
the content fingerprint second, shortened: `sha256:1823...` alone tells a reader nothing.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterable
from pathlib import Path

from mis_bench_dataset.wording import SYNTHETIC_MARK

DEFAULT_SAMPLE_NAME = "the default synthetic sample"
FINGERPRINT_CHARS = 19  # "sha256:" and 12 hex digits


def short_fingerprint(fingerprint: str | None) -> str:
    text = str(fingerprint or "")
    return text if len(text) <= FINGERPRINT_CHARS else text[:FINGERPRINT_CHARS] + "..."


def _default_build_dir() -> Path:
    from mis_bench_dataset.synth.generator import GENERATOR_VERSION
    from mis_bench_dataset.toolkit.cache_folder import cache_root

    return cache_root() / f"default-sample-v{GENERATOR_VERSION}" / "mis-bench"


def is_default_sample(path: str | Path) -> bool:
    """Whether `path` is the embedded default sample's build (never generates it)."""
    try:
        return Path(path).expanduser().resolve() == _default_build_dir().resolve()
    except OSError:
        return False


@functools.lru_cache(maxsize=8)
def _default_fingerprints(build_dir: str, split: str) -> frozenset[str]:
    from mis_bench_dataset.dataset.handle import BuiltDataset

    try:
        return frozenset(BuiltDataset.open(build_dir).fingerprints(split))
    except Exception:  # noqa: BLE001 - no sample (or a broken one) is simply not the default sample
        return frozenset()


def is_default_fingerprint(fingerprint: str | None, split: str) -> bool:
    """Whether a results file's fingerprint is the default sample's (when the sample exists on this machine)."""
    build = _default_build_dir()
    if not fingerprint or not (build / "README.md").is_file():
        return False
    return fingerprint in _default_fingerprints(str(build), split)


def source_synthetic(source: object) -> bool | None:
    """Synthetic per the build report of a built folder, or per the `dataset` block of a results JSON
    (which a run copies from the build report); None when the source does not say."""
    from mis_bench_dataset.dataset.handle import BuiltDataset
    from mis_bench_dataset.toolkit.errors import MisBenchError

    if isinstance(source, BuiltDataset):
        return source.synthetic
    if not isinstance(source, (str, Path)):
        return None
    path = Path(source)
    if path.is_dir():
        try:
            return BuiltDataset.open(path).synthetic
        except (MisBenchError, OSError, ValueError):  # not a build (or a broken one): it does not say
            return None
    if path.suffix.lower() == ".json" and path.is_file():
        try:
            return results_synthetic(json.loads(path.read_text(encoding="utf-8")))
        except (OSError, ValueError, AttributeError):
            return None
    return None


def results_synthetic(results: dict) -> bool | None:
    """What a results JSON's `dataset` block says (a run copies it from the build report); None when silent."""
    value = (results.get("dataset") or {}).get("synthetic")
    return value if isinstance(value, bool) else None


def any_synthetic(sources: Iterable[object]) -> bool:
    """True when any source says it is synthetic (an output made from it is then marked)."""
    return any(source_synthetic(source) for source in sources)


def build_name(path: str | Path) -> str:
    """A built folder by its name: the default synthetic sample, else its path."""
    return f"{DEFAULT_SAMPLE_NAME} ({path})" if is_default_sample(path) else str(path)


def dataset_name(name: str | None, fingerprint: str | None, split: str, *, synthetic: bool = False) -> str:
    """A results file's dataset by its name, the fingerprint second: `the default synthetic sample
    (sha256:1823cb48a3b9...)`, `'my-build' (SYNTHETIC, sha256:...)`, `'my-build' (sha256:...)`."""
    short = short_fingerprint(fingerprint)
    if is_default_fingerprint(fingerprint, split):
        return f"{DEFAULT_SAMPLE_NAME} ({short})"
    label = repr(name) if name else "an unnamed dataset"
    return f"{label} ({SYNTHETIC_MARK}, {short})" if synthetic else f"{label} ({short})"

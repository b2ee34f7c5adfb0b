"""Shared test set-up: offline Hub, no telemetry, private caches, and the ../shared data when present.

The suite never writes into the user's caches: before anything imports `datasets`, `huggingface_hub`,
`transformers` or `evaluate`, `HF_HOME` points to a temporary folder (removed at exit) and every
variable that would send one of their caches elsewhere is removed; `MIS_BENCH_CACHE` (the default
sample) is temporary too. Subprocesses inherit both. tests/test_caches.py checks it.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest  # imports none of the libraries whose caches are redirected below

# Where the user's caches are (the environment as the suite found it), for tests/test_caches.py.
USER_HF_HOME = Path(
    os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "huggingface"
).expanduser()
USER_CACHE_VARIABLES = {
    name: os.environ.get(name)
    for name in (
        "HF_HOME",
        "HF_DATASETS_CACHE",
        "HF_HUB_CACHE",
        "HUGGINGFACE_HUB_CACHE",
        "HF_MODULES_CACHE",
        "HF_EVALUATE_CACHE",
        "HF_METRICS_CACHE",
        "HF_ASSETS_CACHE",
        "HF_XET_CACHE",
        "TRANSFORMERS_CACHE",
        "MIS_BENCH_CACHE",
    )
}
_PRIVATE_CACHES = Path(tempfile.mkdtemp(prefix="mis-bench-tests-"))
atexit.register(shutil.rmtree, _PRIVATE_CACHES, ignore_errors=True)
for _name in USER_CACHE_VARIABLES:
    os.environ.pop(_name, None)
os.environ["HF_HOME"] = str(_PRIVATE_CACHES / "huggingface")
os.environ["MIS_BENCH_CACHE"] = str(_PRIVATE_CACHES / "mis-bench")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ.setdefault("TRANSFORMERS_NO_ADVISORY_WARNINGS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
# Under pytest-xdist the workers share the machine's cores: one thread each for torch's and the BLAS's
# pools (inherited by every subprocess), since a pool per worker sized to all the cores spins against the other
# worker's (measured: a tiny model's training steps 2.5x slower under `-n 2` on 2 cores).
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _threads in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_threads, "1")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = REPO_ROOT.parent / "shared" / "data"
SUBSET10 = SHARED_DATA / "MIS-Bench_subset10"
REAL_TRANSCRIPTS = SHARED_DATA / "mis-bench-transcripts.csv"
AUTHORS = SHARED_DATA / "authors"
AUTHORS_FILES = ("coding.csv", "raw_inference.csv", "finetune.csv", "finetune_raft.csv")


# The suite's longest tests (seconds measured with --durations on a 2-core machine, in the quick suite and with
# RUN_SLOW=1; a renamed test only loses its place): a docs page's test by its id, a module by its path (all its tests
# stay together, so its module fixtures are made once). They run first, in two groups of about equal time, one at the
# head of each half of the collection: work stealing starts each worker on one half and steals from the end of a
# queue, so the long tests start early on both workers and the short ones fill in, instead of one worker ending the
# run alone with a long one.
PAGE_TEST = "tests/test_docs_blocks.py::test_every_block_of_the_page_runs_and_prints_what_it_shows[{}]"
LONG_TESTS: dict[str, tuple[int, int]] = {  # (quick suite, RUN_SLOW=1), measured after issue 47's suite work
    "tests/test_harness_server_down.py": (8, 40),  # mostly waiting out --down-after: little CPU
    PAGE_TEST.format("docs/reproducing.md"): (0, 57),
    PAGE_TEST.format("docs/training.md"): (0, 47),  # its trainings fork from one preloaded process (_docs_zygote)
    PAGE_TEST.format("docs/reports.md"): (0, 43),
    "tests/test_raft_train_script.py": (4, 32),
    "tests/test_trust_page.py": (0, 27),
    "tests/test_estimate_design.py": (3, 26),
    "tests/test_harness_real_server.py": (0, 22),
    PAGE_TEST.format("docs/workflow.md"): (0, 17),
    "tests/test_calibrate_cli.py": (3, 15),
    "tests/test_real_leaderboard_page.py": (0, 15),
    "tests/test_protocol_trainer.py": (13, 14),
    PAGE_TEST.format("README.md"): (0, 13),
    "tests/test_main_job.py": (25, 5),  # the README's default job is made here unless a slow page made it first
    "tests/test_fetch.py": (2, 11),
    PAGE_TEST.format("docs/dataset.md"): (0, 11),
    "tests/test_atomic_outputs.py": (7, 10),
    PAGE_TEST.format("docs/estimates.md"): (0, 10),
    "tests/test_progress_redirected.py": (0, 10),
    "tests/test_synthetic_marking.py": (10, 9),
    "tests/test_cli_robustness.py": (10, 6),
    "tests/test_deadlines.py": (8, 8),
    PAGE_TEST.format("docs/metric.md"): (0, 7),
    "tests/test_docs_site.py": (1, 7),
    "tests/test_harness_openai.py": (7, 7),
    "tests/test_lean_imports.py": (7, 7),
    "tests/test_harness_timeouts.py": (6, 6),
    PAGE_TEST.format("docs/calibration.md"): (0, 6),
    "tests/test_quiet_output.py": (3, 6),
    PAGE_TEST.format("docs/scaling.md"): (0, 6),
    "tests/test_report_agreement.py": (4, 5),
}


# Tests marked `slow` (over 5 s each here under -n 2: whole docs pages, launches, longer trainings, real-data runs; or
# starting headless Chromium or `transformers serve`) are skipped unless RUN_SLOW is set, transformers' convention:
# `pytest -q -n 2` is the quick suite one runs while working, and `scripts/check` (what CI runs) sets RUN_SLOW=1, so
# every test runs in CI. The README's first command (tests/test_main_job.py) stays in the quick suite.
RUN_SLOW_YES, RUN_SLOW_NO = ("1", "true", "yes", "on"), ("", "0", "false", "no", "off")


def run_slow() -> bool:
    """Whether RUN_SLOW asks for the slow tests; a value that is neither yes nor no is a usage error, not a no."""
    value = os.environ.get("RUN_SLOW", "").strip().lower()
    if value not in RUN_SLOW_YES + RUN_SLOW_NO:
        raise pytest.UsageError(f"RUN_SLOW={value!r}: expected 1 (run the slow tests too) or 0 (skip them)")
    return value in RUN_SLOW_YES


def pytest_collection_modifyitems(session, config, items) -> None:
    """Slow tests skipped unless RUN_SLOW; then the long tests that run first in each half of the collection
    (LONG_TESTS), the rest in pytest's order."""
    slow_too = run_slow()
    if not slow_too:
        skip = pytest.mark.skip(reason="slow (over 5 s, or a browser or server start): RUN_SLOW=1 runs it, as CI does")
        for item in items:
            if item.get_closest_marker("slow"):
                item.add_marker(skip)
    seconds = {key: pair[slow_too] for key, pair in LONG_TESTS.items()}
    units: dict[str, list] = {}
    for item in items:
        if item.get_closest_marker("skip"):
            continue
        key = item.nodeid if item.nodeid in LONG_TESTS else item.nodeid.split("::")[0]
        if seconds.get(key):
            units.setdefault(key, []).append(item)
    if not units:
        return
    heads: list[list] = [[], []]
    loads = [0, 0]
    for key in sorted(units, key=lambda k: -seconds[k]):
        lighter = loads.index(min(loads))
        heads[lighter] += units[key]
        loads[lighter] += seconds[key]
    moved = {id(item) for unit in units.values() for item in unit}
    rest = [item for item in items if id(item) not in moved]
    first_half = max(0, len(items) // 2 - len(heads[0]))
    items[:] = heads[0] + rest[:first_half] + heads[1] + rest[first_half:]


def pytest_xdist_make_scheduler(config, log):
    """Under `-n`, work stealing: an idle worker takes tests queued for a busy one, so the long docs pages do not
    end the run alone (an explicit `--dist` other than the default is kept)."""
    if config.getoption("dist") != "load":
        return None
    from xdist.scheduler import WorkStealingScheduling

    return WorkStealingScheduling(config, log)


def shared_once(tmp_path_factory, name: str, make) -> Path:
    """`name`'s folder, made once for the whole run by `make(folder)` and shared read-only by every xdist worker.

    Under pytest-xdist the workers' base temps sit in one folder of this run; the first worker to ask makes
    the folder under a file lock while the others wait, then all use it (a folder left half-made by a killed
    worker has no `.done` mark and is made again). Without xdist it is this session's own folder.
    """
    import shutil

    from mis_bench_dataset.toolkit.atomic import file_lock

    base = tmp_path_factory.getbasetemp()
    parent = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, done = parent / f"shared-{name}", parent / f"shared-{name}.done"
    with file_lock(parent / f"shared-{name}.lock"):
        if not done.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            make(folder)
            done.touch()
    return folder


@pytest.fixture(scope="session")
def subset10_dir() -> Path:
    """The real public release subset; skips when ../shared is absent."""
    if not SUBSET10.is_dir():
        pytest.skip(f"{SUBSET10} not present (../shared is only laid out for developers and CI)")
    return SUBSET10


@pytest.fixture(scope="session")
def real_transcripts_csv() -> Path:
    """The 996 real transcripts; skips when ../shared is absent."""
    if not REAL_TRANSCRIPTS.is_file():
        pytest.skip(f"{REAL_TRANSCRIPTS} not present")
    return REAL_TRANSCRIPTS


@pytest.fixture(scope="session")
def authors_dir() -> Path:
    """The authors' public files (coding.csv and the three Table 4 prediction files, byte for byte from
    their repository); skips when ../shared is absent. Read-only."""
    missing = [name for name in AUTHORS_FILES if not (AUTHORS / name).is_file()]
    if missing:
        pytest.skip(f"{AUTHORS} lacks {', '.join(missing)} (../shared is only laid out for developers and CI)")
    return AUTHORS


@pytest.fixture(scope="session")
def real_text_build(authors_dir, real_transcripts_csv, tmp_path_factory) -> Path:
    """The real text-only MIS-Bench: the 996 transcripts and the authors' coding.csv, split by video (seed 0),
    built once per session with `mis_bench_dataset.build_dataset`. Read-only."""
    from mis_bench_dataset import build_dataset

    def make(root: Path) -> None:
        build_dataset(
            None,
            root / "mis-bench",
            labels=authors_dir / "coding.csv",
            transcripts=real_transcripts_csv,
            progress=False,
        )

    return shared_once(tmp_path_factory, "real_text_build", make) / "mis-bench"


@pytest.fixture(scope="session")
def real_text_oof(real_text_build, tmp_path_factory) -> Path:
    """The text ridge's out-of-fold predictions on all 996 real videos (5 folds grouped by clinician, fold seed
    0: every video predicted by a ridge fitted without its clinician), as a predictions CSV, made once per run.
    The judge the paper's Table 3 protocol scores on every video; the trust statistics are shown on it."""
    from eval_scripts.baselines.crossval import all_feature_rows, clinician_folds, out_of_fold_predictions
    from mis_icc_metric import write_predictions

    def make(folder: Path) -> None:
        rows = all_feature_rows(real_text_build)
        predicted = out_of_fold_predictions(rows, "features", "text", clinician_folds(rows, 5, 0), {})
        records = [{"video_id": v, "dimension": d, "prediction": p} for (v, d), p in sorted(predicted.items())]
        write_predictions(folder / "ridge-oof.csv", records)

    return shared_once(tmp_path_factory, "real-text-oof", make) / "ridge-oof.csv"


# `mis-bench reproduce table4 --from AUTHORS --transcripts ... --bootstrap 200 --json`: the ridge column refits every
# dimension on the real transcripts, so the run is made once per test run (tests/test_reproduce_ridge.py checks it,
# tests/test_fetch.py compares the run from a fetched folder with it).
REPRODUCE_TABLE4_BOOTSTRAP = 200


@pytest.fixture(scope="session")
def reproduced_table4(authors_dir, real_transcripts_csv, tmp_path_factory) -> dict:
    """The JSON `reproduce table4` prints from ../shared's authors' folder and transcripts (skips without them)."""
    import contextlib
    import io

    from eval_scripts.cli import main

    def make(folder: Path) -> None:
        args = ["reproduce", "table4", "--from", str(authors_dir), "--transcripts", str(real_transcripts_csv)]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            assert main([*args, "--bootstrap", str(REPRODUCE_TABLE4_BOOTSTRAP), "--json"]) == 0
        (folder / "table4.json").write_text(printed.getvalue())

    return json.loads((shared_once(tmp_path_factory, "reproduced-table4", make) / "table4.json").read_text())


@pytest.fixture(scope="session")
def synthetic_build(tmp_path_factory) -> Path:
    """A small labelled SYNTHETIC build (40 short videos, seed 0, split by video).

    Built with `mis_bench_dataset.build_dataset` from `generate_synthetic_release`;
    `load_dataset(str(path), "scoring", split="test")` works on it; the release tree it was
    built from (with `ratings.csv`) is `path.parent / "release"`. Read-only: copy it
    before changing anything.
    """
    from mis_bench_dataset import build_dataset, generate_synthetic_release

    def make(root: Path) -> None:
        release = generate_synthetic_release(root / "release", n_videos=40, seed=0)
        build_dataset(release.release_dir, root / "mis-bench", labels=release.ratings_csv, progress=False)

    return shared_once(tmp_path_factory, "synthetic_build", make) / "mis-bench"


@pytest.fixture(scope="module")
def train_rows(synthetic_build) -> list[dict]:
    """The `features` rows of `synthetic_build`'s train split (`load_feature_rows`), read once per test module."""
    from eval_scripts.baselines.baseline_run import load_feature_rows

    return load_feature_rows(synthetic_build, "train")


@pytest.fixture(scope="module")
def test_rows(synthetic_build) -> list[dict]:
    """The `features` rows of `synthetic_build`'s test split, read once per test module."""
    from eval_scripts.baselines.baseline_run import load_feature_rows

    return load_feature_rows(synthetic_build, "test")


@pytest.fixture(scope="session")
def unmarked_build(tmp_path_factory) -> Path:
    """A labelled build whose build report says `synthetic: false`: the generator's release (40 videos, seed 0)
    with its manifest's `synthetic` flag set to false before `build_dataset`, so every output made from it must
    carry no SYNTHETIC mark (the counterpart of `synthetic_build` for marking tests). Read-only."""
    import json

    from mis_bench_dataset import build_dataset, generate_synthetic_release

    def make(root: Path) -> None:
        release = generate_synthetic_release(root / "release", n_videos=40, seed=0)
        manifest = release.release_dir / "subset_manifest.json"
        manifest.write_text(json.dumps({**json.loads(manifest.read_text()), "synthetic": False}))
        build_dataset(release.release_dir, root / "plain-build", labels=release.ratings_csv, progress=False)

    return shared_once(tmp_path_factory, "unmarked_build", make) / "plain-build"


@pytest.fixture(scope="session")
def default_sample_cache(tmp_path_factory) -> Path:
    """A cache folder holding the embedded default sample (SYNTHETIC, 996 short videos, seed 0),
    generated once per test run (shared by the xdist workers): pass it as `MIS_BENCH_CACHE` or to
    `default_sample(path)`.

    The sample is what `mis-bench run` uses by default, so tests of the default job and of the
    generator's calibration look at the real thing. Read-only.
    """
    return shared_once(tmp_path_factory, "default-sample", _first_uses_of_the_default_sample) / "cache"


# Two processes ask for the default sample at once, as two terminals' first `mis-bench run` would: one generates it
# under the sample's lock, the other waits and uses it (tests/test_default_sample_lock.py reads what they printed).
FIRST_USE = (
    "import logging; logging.basicConfig(level=logging.INFO, format='%(name)s: %(message)s')\n"
    "from mis_bench_dataset import default_sample\n"
    "print(default_sample().build_dir)\n"
)


def _first_uses_of_the_default_sample(folder: Path) -> None:
    """`folder/cache`: the sample, made by two concurrent first uses; `folder/first-uses.json`: their
    [returncode, stdout, stderr]."""
    env = {**os.environ, "MIS_BENCH_CACHE": str(folder / "cache")}
    logs = [(folder / f"use{n}.out", folder / f"use{n}.err") for n in (1, 2)]
    uses = []
    for out, err in logs:
        with open(out, "wb") as stdout, open(err, "wb") as stderr:
            uses.append(subprocess.Popen([sys.executable, "-c", FIRST_USE], env=env, stdout=stdout, stderr=stderr))
    codes = [use.wait(timeout=900) for use in uses]
    outcomes = [[code, out.read_text(), err.read_text()] for code, (out, err) in zip(codes, logs, strict=True)]
    (folder / "first-uses.json").write_text(json.dumps(outcomes))
    assert all(code == 0 for code in codes), outcomes


@pytest.fixture(scope="session")
def default_sample_first_uses(default_sample_cache) -> list[subprocess.CompletedProcess]:
    """The two concurrent first uses that made `default_sample_cache` (its generation, run once per test run)."""
    outcomes = json.loads((default_sample_cache.parent / "first-uses.json").read_text())
    return [subprocess.CompletedProcess(["python3", "-c", FIRST_USE], *outcome) for outcome in outcomes]


@dataclass(frozen=True)
class DefaultJobRun:
    work: Path  # the checkout view it ran in: its results are `work / "mis-bench-results"`
    done: subprocess.CompletedProcess


@pytest.fixture(scope="session")
def readme_default_job(default_sample_cache, tmp_path_factory) -> DefaultJobRun:
    """The README's first command, `mis-bench run`, run once per test run exactly as the README's page runs
    it (tests/_docs_runner.py: a fresh checkout view, the cached default sample, the default options):
    tests/test_main_job.py checks what it wrote and printed, and the pages that start with it replay it.
    Shared by the xdist workers; read-only."""
    from _docs_runner import run_default_job

    def make(folder: Path) -> None:
        done = run_default_job(folder / "page", default_sample_cache)
        (folder / "done.json").write_text(json.dumps([done.returncode, done.stdout, done.stderr]))

    folder = shared_once(tmp_path_factory, "readme-default-job", make)
    returncode, stdout, stderr = json.loads((folder / "done.json").read_text())
    args = ["bash", "-c", "mis-bench run"]
    return DefaultJobRun(folder / "page" / "checkout", subprocess.CompletedProcess(args, returncode, stdout, stderr))


@pytest.fixture
def tiny_disk(tmp_path):
    """`tiny_disk(kib)` -> a folder on a fresh tmpfs of that size: a real full disk for the ENOSPC tests.

    Mounting needs root (CAP_SYS_ADMIN); elsewhere the tests that need it skip, saying so (the faked
    ENOSPC tests cover the same code everywhere). Unmounted at teardown.
    """
    import shutil
    import subprocess

    mounted: list[Path] = []

    def mount(kib: int) -> Path:
        folder = tmp_path / f"disk{len(mounted)}"
        folder.mkdir()
        if os.geteuid() != 0 or shutil.which("mount") is None:
            pytest.skip("a tmpfs needs root: the real full-disk test runs only where mounting is allowed")
        done = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={kib}k", "tmpfs", str(folder)], capture_output=True, text=True
        )
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


AUTHORS_ANSWERS = AUTHORS / "answers_dev.json"


@pytest.fixture(scope="session")
def authors_answers() -> list[dict]:
    """Real answers of the authors' fine-tuned judges, hand-labelled (`text`, `score` or null); skips without
    ../shared."""
    import json

    if not AUTHORS_ANSWERS.is_file():
        pytest.skip(f"{AUTHORS_ANSWERS} not present")
    return json.loads(AUTHORS_ANSWERS.read_text(encoding="utf-8"))


@pytest.fixture
def dataset(synthetic_build, tmp_path) -> Path:
    """A private copy of the synthetic build, for tests that put a file inside it (a cache, a stray file)."""
    return Path(shutil.copytree(synthetic_build, tmp_path / "bld"))


@pytest.fixture(scope="module")
def chat_server():
    """`chat_server(**options)`: the tests' one fake model server (`_harness_helpers.ChatServer`, Chat Completions on
    127.0.0.1, with its fault plan, delay, port or `respond`), started; stopped at the end of a `with` block, else
    when the module's tests are done (module-scoped, so a module's fixtures serve from it too).
    `chat_server(kind=Kind, ...)` starts a server of another kind with the same life: a `ChatServer` subclass
    (one that dies mid-run) or `_harness_helpers.TricklingServer` (a byte at a time). For faults a real server will
    not produce on demand; `transformers serve` (`_server_helpers`) is the real one."""
    from _harness_helpers import ChatServer

    started: list = []

    def start(*args, kind: type = ChatServer, **options):
        server = kind(*args, **options).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)

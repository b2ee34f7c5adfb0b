"""Training recipes for `raft_trainer/train.py --config FILE` (a package so that setup.cfg package_data ships them)."""

from pathlib import Path

RECIPES_DIR = Path(__file__).resolve().parent
PAPER_D1_RECIPE = RECIPES_DIR / "paper_d1.yaml"  # the paper's Appendix D.1 setup
COT_RAFT_RECIPE = RECIPES_DIR / "cot_raft.yaml"  # CoT-RAFT (TRACT) on D.1's setup: rationales, then training
# D.1's budget with a regression head (`head: regression`), the comparison the RAFT paper makes first.
PAPER_D1_REGRESSION_RECIPE = RECIPES_DIR / "paper_d1_regression.yaml"
TABLE4_CONDITIONS = ("raw inference", "standard fine-tuning", "MIS-RAFT")
_FILES = dict(zip(TABLE4_CONDITIONS, ("raw", "ce", "raft"), strict=True))
# The paper's Table 4 conditions as the authors ran them (their public code: prompt, frames, full-softmax digits,
# loss scale, early stopping) on D.1's setup; docs/protocol.md lists each difference.
PAPER_TABLE4_RECIPES = {condition: RECIPES_DIR / f"paper_table4_{name}.yaml" for condition, name in _FILES.items()}
# The same conditions with the authors' prompt and the toolkit's sound defaults (renormalised digits, eq. 12's
# scale, the 32-frame rule, no early stopping).
SOUND_TABLE4_RECIPES = {condition: RECIPES_DIR / f"sound_table4_{name}.yaml" for condition, name in _FILES.items()}


def recipe_names() -> list[str]:
    """The shipped recipes' names, as `--config NAME` takes them (the file name without `.yaml`)."""
    return sorted(path.stem for path in RECIPES_DIR.glob("*.yaml"))


def recipe_path(value: str) -> Path | None:
    """The recipe `--config VALUE` means: a file at that path (relative to the working directory), else the shipped
    recipe of that name (`cot_raft`, `cot_raft.yaml`), else None."""
    path = Path(value).expanduser()
    if path.is_file():
        return path
    shipped = RECIPES_DIR / f"{Path(value).stem}.yaml"
    return shipped if Path(value).parent == Path(".") and shipped.is_file() else None

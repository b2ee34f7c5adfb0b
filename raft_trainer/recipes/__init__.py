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

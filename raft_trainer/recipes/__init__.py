"""Training recipes for `raft_trainer/train.py --config FILE` (a package so that setup.cfg package_data ships them)."""

from pathlib import Path

RECIPES_DIR = Path(__file__).resolve().parent
PAPER_D1_RECIPE = RECIPES_DIR / "paper_d1.yaml"  # the paper's Appendix D.1 setup
# The paper's Table 4 conditions with the authors' own protocol (prompt_style: paper) and D.1's setup.
PAPER_TABLE4_RECIPES = {
    "raw inference": RECIPES_DIR / "paper_table4_raw.yaml",
    "standard fine-tuning": RECIPES_DIR / "paper_table4_ce.yaml",
    "MIS-RAFT": RECIPES_DIR / "paper_table4_raft.yaml",
}

"""Training recipes for `raft_trainer/train.py --config FILE` (a package so that setup.cfg package_data ships them)."""

from pathlib import Path

RECIPES_DIR = Path(__file__).resolve().parent
PAPER_D1_RECIPE = RECIPES_DIR / "paper_d1.yaml"  # the paper's Appendix D.1 setup

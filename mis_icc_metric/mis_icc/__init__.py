"""The `evaluate` metric module lives in mis_icc.py (this file only makes the folder ship with the package)."""

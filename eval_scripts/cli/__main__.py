"""`python -m eval_scripts.cli ...`: the `mis-bench` console script without the installed entry point."""

import sys

from eval_scripts.cli import main

sys.exit(main())

"""The report's user-facing choices, in a module light enough for the CLI to import for `--help`."""

# Predicted-vs-gold scatters: each system's best configuration, every run, or none.
SCATTER_CHOICES: tuple[str, ...] = ("best", "all", "none")

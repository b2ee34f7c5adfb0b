"""The synthetic release (planted signal, always marked SYNTHETIC) and the embedded default sample."""

# The one mark every output of synthetic data carries (terminal lines, figure titles, leaderboard rows), defined
# here, in the ground layer, so the trainer's outputs and the build's figures use the same words as the CLI's.
SYNTHETIC_MARK = "SYNTHETIC"
SYNTHETIC_LINE = f"{SYNTHETIC_MARK} data: these numbers say nothing about any model on MIS-Bench."

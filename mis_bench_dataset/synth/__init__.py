"""The synthetic release (planted signal, always marked SYNTHETIC) and the embedded default sample."""

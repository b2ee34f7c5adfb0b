"""The synthetic release (planted signal, always marked SYNTHETIC: `wording.SYNTHETIC_MARK`) and the embedded
default sample."""

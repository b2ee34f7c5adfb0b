"""The synthetic release (planted signal, always marked SYNTHETIC: `dimensions.SYNTHETIC_MARK`) and the embedded
default sample."""

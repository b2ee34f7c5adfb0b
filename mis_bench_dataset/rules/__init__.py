"""Toolkit-wide rules: errors, output ownership, the atomic writer, escaping, strict JSON, numbers, progress, options,
lazy exports."""

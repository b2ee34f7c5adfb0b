"""Toolkit-wide rules: errors, output ownership, the atomic writer, escaping, strict JSON, numbers, lazy exports."""

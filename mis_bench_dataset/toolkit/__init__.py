"""Toolkit-wide rules: errors, output ownership, the atomic writer, reusable figures, escaping, strict JSON, numbers,
progress, options, lazy exports."""

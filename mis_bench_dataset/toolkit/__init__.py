"""Toolkit-wide rules: errors, output ownership, the atomic writer, reusable figures, escaping, strict JSON, numbers,
progress, options (and which ones a command line gave: `given`), lazy exports."""

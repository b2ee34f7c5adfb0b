"""The zero-shot harness in small pieces, each with one job.

- `context`: `RunConfig` (what the user asked for) and `prepare_run`, which builds the
  `RunContext` of one setting once: rows, input source, prompts, cache keys, dataset identity.
- `prompting`: which input source a backend can take, feature-derived blocks, rendered prompts.
- `caching`: `CachingBackend`, a wrapper around any backend that answers from the append-only
  response cache and records every new outcome (the idea of lmms-eval's `CachingLM`).
- `outputs`: the one writer of a run's files (predictions, raw responses, scored results JSON),
  shared by model runs and the CPU baselines.
- `ordering`: prefix-friendly request order (grouped by modality setting and dimension) and how
  much of it a prefix cache can reuse.
- `batch`: OpenAI Batch API / vLLM `run_batch` files: custom ids, export lines, reading output
  lines, and `BatchOutputBackend`, which answers a run from them behind `CachingBackend`.
- `estimate`: prompt-token (local tokenizer or characters/4) and cost estimates for dry runs.

`eval_scripts.runner` strings them together (`run_setting`, `run_grid`, `dry_run`, `export_batch`,
`import_batch`).
"""

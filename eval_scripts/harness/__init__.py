"""The zero-shot harness in small pieces, each with one job.

- `context`: `RunConfig` (what the user asked for) and `prepare_run`, which builds the
  `RunContext` of one setting once: rows, input source, prompts, cache keys, dataset identity.
- `prompting`: which input source a backend can take, feature-derived blocks, rendered prompts.
- `caching`: `CachingBackend`, a wrapper around any backend that answers from the append-only
  response cache and records every new outcome (the idea of lmms-eval's `CachingLM`).
- `outputs`: the one writer of a run's files (predictions, raw responses, scored results JSON),
  shared by model runs and the CPU baselines.

`eval_scripts.runner` strings them together (`run_setting`, `run_grid`).
"""

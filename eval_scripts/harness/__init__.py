"""The zero-shot harness in small pieces, each with one job; `runner` strings them together.

- `runner`: one setting x prompt style end to end, resumable (`run_setting`), grids (`run_grid`), dry runs and batches.
- `config`: `RunConfig`, what the user asked for, each harness option's flag, default and help on its field (a
  backend's options are its `Options`', carried as `backend_options`).
- `context`: `prepare_run`, which builds the `RunContext` of one setting once from a `RunConfig`.
- `prompting`: which input source a backend can take, feature-derived blocks, rendered prompts.
- `execution`: one setting's requests and files: what a live run, an imported batch and a grid share.
- `response_cache`: the append-only JSONL response cache, proven before use, that never loses or duplicates a row.
- `cached_backend`: `CachingBackend`, any backend behind the response cache (lmms-eval's `CachingLM` idea).
- `cache_maintenance`: `mis-bench cache check|merge`: what a cache holds, one cache from several machines' caches.
- `readouts`: how a row's answers become its score (parser or expected score, then the mean over samples).
- `row_counts`: what happened to each row of a run, counted once for every reader.
- `readout_agreement`: a judge's agreement with itself (two readouts, two samples, two runs).
- `reparse`: the saved answers of a run re-parsed with the current parser (`mis-bench parse`).
- `run_writer`: the one writer of a run's files, shared by model runs and the CPU baselines.
- `ordering`: prefix-friendly request order and how much of it a prefix cache can reuse.
- `batch_files`: OpenAI Batch API / vLLM `run_batch` files: export lines, read output lines, `BatchOutputBackend`.
- `offline_runs`: dry runs and batch files: a run's settings prepared, then estimated, exported or answered from files.
- `perturbed`: `mis-bench run --perturb`: the unperturbed arm from the cache, each perturbed arm, their shift tables.
- `cost_estimate`: prompt-token and cost estimates for dry runs.
- `trained_setting`: how a trained model folder's `setting.json` says to ask it, unless the flags say otherwise.
"""

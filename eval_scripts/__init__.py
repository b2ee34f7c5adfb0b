"""eval_scripts: the zero-shot harness (prompts, parser, backends, resumable runs), reports and leaderboard."""

from mis_bench_dataset.toolkit.lazy import lazy_exports

__all__ = ["parse_score"]

# Lazy: the parser imports numpy; `mis-bench --help` imports this package and needs none of it.
__getattr__ = lazy_exports(__name__, {"parse_score": "eval_scripts.answers.score_parser"})

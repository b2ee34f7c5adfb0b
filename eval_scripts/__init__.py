"""eval_scripts: the zero-shot harness (prompts, parser, backends, resumable runs), reports and leaderboard."""

from eval_scripts.answers.parse import parse_score

__all__ = ["parse_score"]

"""One model answer, from the prompt to its score: the bottom room of the harness (it imports no other room). The
parser g that reads a score from an answer is `mis_icc_metric.score_parser`, the one the trainer uses too.

- `prompts`: the eight prompt templates (4 modality settings x direct/CoT), the `paper` style, rendering and hashes.
- `expected_score`: the probability-weighted score from the digit distributions a server or model returns.
- `answer_status`: one answer's status (ok, failed, truncated), the truncation rule and what may be cached or served.
- `perturbations`: seeded transcript and prompt changes that should not change a score; the pinned paraphrases.
- `feature_plots`: feature-derived media of a prompt (descriptor text, plots for vision models).
"""

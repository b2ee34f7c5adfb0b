"""Prefix-friendly request order: requests that share their instructions go one after another.

Servers with prefix caching (vLLM's automatic prefix caching, SGLang's radix cache, OpenAI's
prompt caching) reuse the computed prefix a request shares with the ones just before it. The
version-2 templates (`answers.prompts`) start every prompt of a dimension with the same task
text, rubric and few-shot examples, whatever the video and the modality setting, and end with the
response (transcript, media) and the answer instruction; so requests are sorted by (dimension,
prompt text): a dimension's requests are contiguous (every setting of a grid export together),
and sorting the text puts the prompts that share the most next to each other (the settings'
own wording clusters, then a response's direct and chain-of-thought prompts, equal up to the
answer instruction). The version-1 templates name the dimension in their second paragraph, so
the same order shares their task text and that paragraph.

The order only changes when a request is sent: predictions are keyed by (video, dimension) and
written in the rows' order, so no result depends on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from eval_scripts.answers.prompts import MODALITIES, Prompt
from mis_bench_dataset.dimensions import DIMENSION_KEYS

_DIMENSION_RANK = {key: rank for rank, key in enumerate(DIMENSION_KEYS)}
_MODALITY_RANK = {modality: rank for rank, modality in enumerate(MODALITIES)}


def prefix_group(modality: str, prompt: Prompt) -> tuple[int, int]:
    """The instructions a prompt starts with: its modality setting's template and its dimension."""
    return _MODALITY_RANK[modality], _DIMENSION_RANK[prompt.dimension]


def prefix_order(requests: Sequence[tuple[str, Prompt]]) -> list[int]:
    """Indices of `(modality, prompt)` requests in prefix-friendly order (deterministic): dimension-major, then
    by prompt text (see the module's docstring)."""
    return sorted(
        range(len(requests)),
        key=lambda i: (
            _DIMENSION_RANK[requests[i][1].dimension],
            requests[i][1].text,
            _MODALITY_RANK[requests[i][0]],
            requests[i][1].prompt_hash,
            i,
        ),
    )


def common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix (binary search over C-speed slice comparisons)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


@dataclass(frozen=True)
class PrefixStats:
    """How much of a request sequence a prefix cache can reuse.

    `same_prefix`: requests whose prefix group (modality setting, dimension) equals the previous
    request's; `reused_chars`: prompt characters that repeat the start of the previous request's
    prompt (what a cache holding only the previous request could skip). Shares are of all requests
    and of all prompt characters.
    """

    requests: int = 0
    same_prefix: int = 0
    prompt_chars: int = 0
    reused_chars: int = 0

    @property
    def same_prefix_share(self) -> float | None:
        return self.same_prefix / self.requests if self.requests else None

    @property
    def reused_chars_share(self) -> float | None:
        return self.reused_chars / self.prompt_chars if self.prompt_chars else None

    def __add__(self, other: PrefixStats) -> PrefixStats:
        """Sequences sent one after the other (the grid's settings), not counting the pair at the seam."""
        return PrefixStats(
            self.requests + other.requests,
            self.same_prefix + other.same_prefix,
            self.prompt_chars + other.prompt_chars,
            self.reused_chars + other.reused_chars,
        )

    def as_dict(self) -> dict:
        return {
            "requests": self.requests,
            "same_prefix_share": self.same_prefix_share,
            "reused_chars_share": self.reused_chars_share,
        }


def prefix_stats(requests: Sequence[tuple[str, Prompt]]) -> PrefixStats:
    """`PrefixStats` of requests in the order they are sent."""
    same = reused = 0
    for (previous_modality, previous), (modality, prompt) in zip(requests, requests[1:], strict=False):
        same += prefix_group(previous_modality, previous) == prefix_group(modality, prompt)
        reused += common_prefix_length(previous.text, prompt.text)
    return PrefixStats(len(requests), same, sum(len(prompt.text) for _, prompt in requests), reused)

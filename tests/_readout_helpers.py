"""Test helpers for the readouts: Chat Completions bodies with given log-probabilities, and the hand computation.

`logprob_answer(reply, distributions)` writes the body a vLLM/OpenAI server returns with `logprobs:
true, top_logprobs: k`: one position per character of `reply` (digits and the point are single
tokens), each with the given top-k candidates; `hand_expected` computes the expectation the way the
issue states it, by hand, for the tests to compare with.
"""

from __future__ import annotations

import math
import re

from _harness_helpers import fake_usage, prompt_text

# Top-k candidates (token, probability) of the integer and the fractional digit positions; the mass they
# leave out stands for non-digit tokens ("The", "\n") so renormalisation matters.
INTEGER_TOP = [("3", 0.5), ("4", 0.3), (" 2", 0.1), ("The", 0.05)]
FRACTION_TOP = [("5", 0.4), ("0", 0.4), ("\n", 0.2)]


def hand_expected(integer_top=INTEGER_TOP, fraction_top=FRACTION_TOP) -> float:
    """E[int] + 0.1 E[frac], each over the digit candidates only, renormalised."""

    def expectation(top):
        digits = [(int(t.strip()), p) for t, p in top if t.strip().isdigit() and len(t.strip()) == 1]
        mass = sum(p for _, p in digits)
        return sum(d * p for d, p in digits) / mass

    return expectation(integer_top) + 0.1 * expectation(fraction_top)


def _position(token: str, top: list[tuple[str, float]]) -> dict:
    listed = dict(top)
    listed.setdefault(token, 0.5)
    return {
        "token": token,
        "logprob": math.log(listed[token]),
        "bytes": list(token.encode()),
        "top_logprobs": [{"token": t, "logprob": math.log(p), "bytes": list(t.encode())} for t, p in top],
    }


def logprob_answer(
    text: str, reply: str, finish_reason: str = "stop", integer_top=INTEGER_TOP, fraction_top=FRACTION_TOP
) -> dict:
    """A Chat Completions body answering `reply`, one token per character; the first score's integer digit
    and first decimal get `integer_top` / `fraction_top` (which must list the digits written), other
    positions a sure choice."""
    match = re.search(r"\d", reply)
    positions = []
    for offset, char in enumerate(reply):
        if match is not None and offset == match.start():
            top = integer_top
        elif match is not None and offset == match.start() + 2 and reply[offset - 1] == ".":
            top = fraction_top
        else:
            top = [(char, 0.999)]
        positions.append(_position(char, top))
    return {
        "id": "cmpl-test",
        "object": "chat.completion",
        "model": "fake",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": reply},
                "logprobs": {"content": positions},
                "finish_reason": finish_reason,
            }
        ],
        "usage": fake_usage(text, reply),
    }


def logprob_responder(reply_for):
    """A `ChatServer(respond=...)` answering each request with `reply_for(prompt text)` and the given logprobs;
    a request without `logprobs: true` gets no logprobs, as a real server."""

    def respond(body: dict) -> tuple[int, dict]:
        text = prompt_text(body)
        answer = logprob_answer(text, reply_for(text))
        if not body.get("logprobs"):
            del answer["choices"][0]["logprobs"]
        return 200, answer

    return respond

"""A simulated batch provider (OpenAI Batch API / vLLM run_batch output files) and a live twin of it.

`simulate_provider` reads exported batch input files and writes an output file the way a provider
does, with the faults a real one shows: lines in shuffled order, error lines in both shapes
(`"error": {...}` and a non-200 `response`), answers cut by the token limit, a malformed body,
requests with no output line, a line repeated, and a line for an id that was never exported.
`Fates.respond` answers a live request exactly as the simulated provider answered the same prompt,
for the local `ChatServer`, so an import and a live run can be compared byte for byte.
"""

from __future__ import annotations

import json
import random
import socket
from dataclasses import dataclass, field
from pathlib import Path

from _harness_helpers import chat_completion, fake_reply, fake_usage, prompt_text

# How many requests get each fault; the rest are answered.
FAULTS = {"error": 2, "http_error": 2, "length": 2, "malformed": 1, "missing": 2}
TRUNCATED_REPLY = "3."
UNKNOWN_ID = "text__direct/ZZ9999_T1_Nobody/wau/000000000000000000000000"


@dataclass
class Fates:
    """What the simulated provider did with each request: by custom_id and by prompt text."""

    by_id: dict[str, str] = field(default_factory=dict)
    by_text: dict[str, str] = field(default_factory=dict)
    bodies: dict[str, dict] = field(default_factory=dict)  # custom_id -> exported request body

    def ids(self, *fates: str) -> set[str]:
        return {request_id for request_id, fate in self.by_id.items() if fate in fates}

    def response(self, text: str, fate: str) -> tuple[int, dict]:
        """(HTTP status, body) a server gives for a request with this fate."""
        if fate in ("ok", "length"):
            return 200, chat_completion(
                text, reply=reply_for(text, fate), finish_reason="length" if fate == "length" else "stop"
            )
        if fate == "malformed":
            return 200, {"id": "cmpl-test", "object": "chat.completion", "choices": []}
        # A server error: live, it is retried and then recorded as failed, as a batch error line is (a 4xx
        # would stop a live run at once: the request itself is refused, for every row).
        return 500, {"error": {"message": f"simulated {fate}", "type": "server_error", "code": fate}}

    def respond(self, body: dict) -> tuple[int, dict]:
        text = prompt_text(body)
        return self.response(text, self.by_text[text])

    def expected_usage(self) -> dict:
        """Token totals of the answered and truncated responses, from the simulator's own counts."""
        totals = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "requests": 0}
        for request_id, fate in self.by_id.items():
            if fate in ("ok", "length"):
                text = prompt_text(self.bodies[request_id])
                usage = fake_usage(text, reply_for(text, fate))
                for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
                    totals[key] += usage[key]
                totals["requests"] += 1
        return totals


def reply_for(text: str, fate: str) -> str:
    return TRUNCATED_REPLY if fate == "length" else fake_reply(text)


def read_batch_input(paths: list[Path]) -> list[dict]:
    return [json.loads(line) for path in paths for line in path.read_text(encoding="utf-8").splitlines()]


def simulate_provider(inputs: list[Path], output: Path, seed: int = 0) -> Fates:
    """Answer exported requests as a provider would, faults included (see the module docstring)."""
    rng = random.Random(seed)
    requests = read_batch_input(inputs)
    shuffled = list(range(len(requests)))
    rng.shuffle(shuffled)
    kinds = [kind for kind, n in FAULTS.items() for _ in range(n)]
    fates = Fates()
    for rank, index in enumerate(shuffled):
        request = requests[index]
        fate = kinds[rank] if rank < len(kinds) else "ok"
        fates.by_id[request["custom_id"]] = fate
        fates.by_text[prompt_text(request["body"])] = fate
        fates.bodies[request["custom_id"]] = request["body"]
    lines = []
    for n, request in enumerate(requests):
        fate = fates.by_id[request["custom_id"]]
        if fate == "missing":
            continue
        line = {"id": f"batch_req_{n}", "custom_id": request["custom_id"], "response": None, "error": None}
        if fate == "error":  # OpenAI's error file: no response, an error object
            line["error"] = {"code": "server_error", "message": "simulated failure"}
        else:
            status, body = fates.response(prompt_text(request["body"]), fate)
            line["response"] = {"status_code": status, "request_id": f"req_{n}", "body": body}
        lines.append(line)
    answered = [line for line in lines if fates.by_id[line["custom_id"]] == "ok"]
    lines.append(dict(answered[0]))  # a provider that wrote one line twice
    lines.append(
        {
            "id": "batch_req_x",
            "custom_id": UNKNOWN_ID,
            "response": {"status_code": 200, "request_id": "req_x", "body": chat_completion("Nobody, step 1.")},
            "error": None,
        }
    )
    rng.shuffle(lines)
    output.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return fates


def closed_port_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (the port was free a moment ago)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"

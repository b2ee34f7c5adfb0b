"""Test helpers for the harness: a tiny chat model, scoring rows, a fault-injecting Chat Completions server."""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from mis_bench_dataset import DIMENSION_BY_KEY, DIMENSION_KEYS, RUBRIC

# How often a test server's `serve_forever` looks for `shutdown()`: the standard library's 0.5 s made every stop
# wait about half a second once the last request was answered (measured: about 100 quick-suite tests idled
# 0.5-1 s each in their servers' shutdowns). Pass it as `serve_forever(poll_interval=SHUTDOWN_POLL_S)`.
SHUTDOWN_POLL_S = 0.02

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def make_tiny_chat_model(folder: Path, seed: int = 0, answer_tokens: tuple[str, str] | None = None) -> Path:
    """A randomly initialised 2-layer Qwen2 and a byte-level BPE tokenizer with a chat template.

    With `answer_tokens=(a, b)` the output head is rewired so that greedy decoding
    always emits `a` or `b` (chosen by the sign of one hidden unit, so it depends
    on the input) and then the end-of-sequence token: a random model whose answer is a
    parseable score that ends by itself (finish_reason "stop" given two new tokens).
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config, Qwen2ForCausalLM

    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    corpus = [RUBRIC[d].criterion for d in DIMENSION_KEYS] + ["Final score: 3.5", "1.0 2.5 4.9 5.0"]
    trainer = trainers.BpeTrainer(
        vocab_size=400, special_tokens=specials, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    )
    tokenizer.train_from_iterator(corpus, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|im_end|>", pad_token="<|endoftext|>", bos_token=None
    )
    fast.chat_template = CHAT_TEMPLATE
    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(fast),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=answer_tokens is None,
    )
    model = Qwen2ForCausalLM(config)
    if answer_tokens is not None:
        first, second = fast.convert_tokens_to_ids(list(answer_tokens))
        with torch.no_grad():
            model.model.norm.weight.zero_()
            model.model.norm.weight[:2] = 1.0
            model.lm_head.weight.zero_()
            model.lm_head.weight[first, 0] = 1.0
            model.lm_head.weight[second, 0] = -1.0
            # Hidden unit 1 holds only an "answer token" flag from the embeddings (no layer writes to it),
            # so after an answer token the end-of-sequence token wins by far, and nowhere else.
            for layer in model.model.layers:
                layer.self_attn.o_proj.weight[1].zero_()
                layer.mlp.down_proj.weight[1].zero_()
            model.model.embed_tokens.weight[:, 1] = 0.0
            model.model.embed_tokens.weight[[first, second], 1] = 100.0
            model.lm_head.weight[fast.eos_token_id, 1] = 10.0
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    fast.save_pretrained(folder)
    return folder


def make_fixed_answer_model(folder: Path, answer: str = "3.5") -> Path:
    """A tiny Qwen2 whose greedy answer to any prompt is `answer` followed by the end-of-sequence token.

    The layers write nothing (zero output projections), so the last hidden state is the current
    token's embedding: every token embeds to one "start" direction except the answer's tokens, which
    get one direction each, and the output head maps each direction to the next token of the chain
    start -> answer tokens -> EOS. Digits are single tokens, so a 2-token limit cuts "3.5" to "3.".
    """
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from _raft_helpers import make_tokenizer

    tokenizer = make_tokenizer(split_digits=True)
    chain = [*tokenizer(answer, add_special_tokens=False).input_ids, tokenizer.eos_token_id]
    assert len(set(chain)) == len(chain), f"{answer!r} repeats a token: greedy bigram decoding would loop"
    hidden = 32
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=8192,
        tie_word_embeddings=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    model = Qwen2ForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        embeddings = model.model.embed_tokens.weight
        embeddings.zero_()
        embeddings[:, 0] = 1.0
        model.lm_head.weight.zero_()
        for step, token in enumerate(chain):
            if step < len(chain) - 1:
                embeddings[token].zero_()
                embeddings[token, step + 1] = 1.0
            model.lm_head.weight[token, step] = 10.0  # direction `step` -> the chain's token `step`
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def scoring_rows(n_videos: int = 3, seed: int = 0, dimensions=DIMENSION_KEYS) -> list[dict]:
    """Rows with the contract's `scoring` columns (hand-made, labelled)."""
    rng = random.Random(seed)
    stimuli = ["Jessica", "Luke", "Bethany", "Savannah"]
    rows = []
    for v in range(n_videos):
        video_id = f"ZZ{1000 + v}_T{1 + v % 3}_{stimuli[v % len(stimuli)]}"
        clinician, time_point, stimulus = video_id.split("_")
        transcript = f"I hear that this feels hard for you. Let us work on it together, step {v}."
        for d in dimensions:
            rubric = RUBRIC[d]
            rows.append(
                {
                    "video_id": video_id,
                    "clinician": clinician,
                    "time_point": time_point,
                    "stimulus": stimulus,
                    "dimension": d,
                    "dimension_name": DIMENSION_BY_KEY[d].name,
                    "transcript": transcript,
                    "criterion": rubric.criterion,
                    **{f"rubric_{i}": rubric.description(i) for i in range(1, 6)},
                    "score": round(rng.uniform(2.0, 4.8), 1),
                }
            )
    return rows


class FaultPlan:
    """Which fault a request gets, decided by (prompt digest, attempt) so reruns are reproducible."""

    FAULTS = ("ok", "429", "500", "503", "slow", "malformed", "drop", "empty_choices")
    # Also served on demand (never drawn at random): "truncated", the answer cut at the token limit.

    def __init__(self, seed: int, fault_rate: float = 0.35, permanent_rate: float = 0.05):
        self.seed, self.fault_rate, self.permanent_rate = seed, fault_rate, permanent_rate
        self.attempts: dict[str, int] = {}
        self.lock = threading.Lock()

    def next(self, digest: str) -> str:
        with self.lock:
            attempt = self.attempts.get(digest, 0)
            self.attempts[digest] = attempt + 1
        rng = random.Random(f"{self.seed}:{digest}:{attempt}")
        if random.Random(f"{self.seed}:{digest}:permanent").random() < self.permanent_rate:
            return "500"  # this prompt always fails: must end up recorded as failed
        if rng.random() >= self.fault_rate:
            return "ok"
        return rng.choice(self.FAULTS[1:])


def fake_usage(prompt_text: str, reply: str) -> dict:
    """The token counts the fake servers report: whitespace-separated words of prompt and reply."""
    prompt_tokens, completion_tokens = len(prompt_text.split()), len(reply.split())
    return {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }


def fake_reply(text: str) -> str:
    """What the fake server answers for a prompt: a score from the transcript's `step N.` (CoT: with analysis)."""
    match = re.search(r"step (\d+)\.", text)
    value = 1.0 + (int(match.group(1)) % 40) / 10 if match else 3.0
    if "Final score: x.y" in text:
        return f"The therapist is calm.\nFinal score: {value:.1f}"
    if text.endswith("###Score:"):  # the `paper` style: answer as MIS-RAFT is trained to
        return f"The score prediction is: {value:.1f}"
    return f"{value:.1f}"


def chat_completion(
    text: str, reply: str | None = None, finish_reason: str = "stop", model: str = "fake-model"
) -> dict:
    """A Chat Completions response body answering prompt `text` (default reply `fake_reply(text)`), with usage,
    naming `model` as the model that answered (the tests' runs ask for `fake-model`)."""
    reply = fake_reply(text) if reply is None else reply
    return {
        "id": "cmpl-test",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": finish_reason}],
        "usage": fake_usage(text, reply),
    }


def prompt_text(body: dict) -> str:
    """The user message's text of a Chat Completions request body (after any system message)."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else " ".join(p.get("text", "") for p in content)


class ChatServer:
    """A real HTTP server on 127.0.0.1 speaking Chat Completions, with optional faults and delay.

    `respond(body) -> (status, payload dict)` replaces the default answer (`chat_completion`), e.g.
    to answer exactly what a simulated batch provider answered for the same request.
    """

    def __init__(
        self, plan: FaultPlan | None = None, delay_s: float = 0.0, slow_s: float = 1.0, respond=None, port: int = 0
    ):
        self.plan, self.delay_s, self.slow_s, self.respond = plan, delay_s, slow_s, respond
        self.requests = 0
        self.auth_headers: list[str | None] = []
        self.bodies: list[dict] = []
        self.paths: list[str] = []  # every request's path, query string included
        self.sent: list[dict] = []  # every 200 response body, in the order sent
        self._lock = threading.Lock()
        self._stopped = False
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # no 40 ms delayed-ACK stalls on keep-alive
            wbufsize = -1  # headers and body leave in one write

            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length))
                with server._lock:
                    server.requests += 1
                    server.auth_headers.append(self.headers.get("Authorization"))
                    server.bodies.append(body)
                    server.paths.append(self.path)
                text = prompt_text(body)
                asked = body.get("model", "fake-model")  # named back as the model that answered, as vLLM does
                digest = hashlib.sha1(text.encode()).hexdigest()
                fault = server.plan.next(digest) if server.plan else "ok"
                if server.delay_s:
                    time.sleep(server.delay_s)
                if server.respond is not None:
                    status, payload = server.respond(body)
                    if status == 200:
                        with server._lock:
                            server.sent.append(payload)
                    self._send(status, json.dumps(payload).encode())
                elif fault.isdigit():
                    message = json.dumps({"error": {"message": f"injected {fault} for this request"}}).encode()
                    self._send(int(fault), message, retry_after="0")
                elif fault == "slow":
                    time.sleep(server.slow_s)
                    self._send(200, self._answer(text, model=asked))
                elif fault == "malformed":
                    self._send(200, b'{"choices": [ {"message": ')
                elif fault == "empty_choices":
                    self._send(200, b'{"choices": []}')
                elif fault == "truncated":
                    self._send(200, self._answer(text, finish_reason="length", cut=2, model=asked))
                elif fault == "drop":
                    self.close_connection = True
                    self.connection.shutdown(2)
                else:
                    self._send(200, self._answer(text, model=asked))

            def _answer(
                self, text: str, finish_reason: str = "stop", cut: int | None = None, model: str = "fake-model"
            ) -> bytes:
                reply = fake_reply(text)
                if cut is not None:
                    reply = reply[: len(reply) - 3 + cut]  # "3.5" -> "3.": what a token limit leaves
                payload = chat_completion(text, reply=reply, finish_reason=finish_reason, model=model)
                with server._lock:
                    server.sent.append(payload)
                return json.dumps(payload).encode()

            def _send(self, status: int, payload: bytes, retry_after: str | None = None):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if retry_after is not None:
                    self.send_header("Retry-After", retry_after)
                self.end_headers()
                self.wfile.write(payload)

        class QuietServer(ThreadingHTTPServer):
            def handle_error(self, request, client_address):  # clients time out on slow replies
                pass

        self.httpd = QuietServer(("127.0.0.1", port), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": SHUTDOWN_POLL_S}, daemon=True
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        """Starts serving (once: the `chat_server` fixture hands out started servers, which `with` may enter)."""
        if not self.thread.is_alive() and not self._stopped:
            self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        """Stops serving (once: a server the `with` block stopped is left alone at the fixture's teardown)."""
        if not self._stopped:
            if self.thread.is_alive():  # shutdown() waits for a loop that runs (KillableServer's may have ended)
                self.httpd.shutdown()
            self.httpd.server_close()
        self._stopped = True


def serve_forever_main(port_file: str, delay_s: float = 0.0, port: int = 0) -> None:
    """Entry point for a server subprocess (the tests that kill a server): writes its base URL to `port_file`."""
    with ChatServer(delay_s=delay_s, port=port) as server:
        Path(port_file + ".tmp").write_text(server.base_url)
        Path(port_file + ".tmp").replace(port_file)
        while True:
            time.sleep(3600)


class TricklingServer:
    """A raw socket server that answers every request with a valid Chat Completions body, one byte every
    `interval_s` (the headers too with `trickle_headers`): each read gets data long before any read timeout,
    so only a total deadline ends the request. Counts the connections and requests it got."""

    def __init__(self, interval_s: float = 0.25, trickle_headers: bool = False, reply: str = "3.5") -> None:
        import socket

        self.interval_s, self.trickle_headers, self.reply = interval_s, trickle_headers, reply
        self.requests = 0
        self._stop = threading.Event()
        self._sock = socket.socket()
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(64)
        self._sock.settimeout(0.1)
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}/v1"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn) -> None:
        with contextlib.suppress(OSError), conn:
            conn.settimeout(5.0)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, _, body = data.partition(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1))
            while len(body) < length:
                body += conn.recv(65536)
            self.requests += 1
            text = prompt_text(json.loads(body))
            payload = json.dumps(chat_completion(text, reply=self.reply)).encode()
            headers = (
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
            ).encode()
            if not self.trickle_headers:
                conn.sendall(headers)
            for byte in (headers if self.trickle_headers else b"") + payload:
                if self._stop.wait(self.interval_s):
                    return
                conn.sendall(bytes([byte]))

    def __enter__(self) -> TricklingServer:
        if not self._thread.is_alive() and not self._stop.is_set():  # once (see ChatServer.__enter__)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join(timeout=5)
            self._sock.close()

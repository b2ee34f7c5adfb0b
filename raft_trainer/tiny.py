"""A tiny, randomly initialised chat model and its tokenizer, built offline, for demos and tests.

`save_tiny_model(folder)` writes a Qwen2 causal LM (hidden size 32, 2 layers, about 90 k parameters)
and a byte-level BPE tokenizer trained on the toolkit's own prompt texts (the rubric, the system
instruction, the completion) into `folder`, ready for `train.py --model_name_or_path folder` or
`AutoModelForCausalLM.from_pretrained(folder)`. Nothing is downloaded; the model knows nothing, so its
scores only show that the pipeline runs. Digits are split one per token, as Qwen2's tokenizer does.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path

from mis_bench_dataset.dimensions import DIMENSION_KEYS, RUBRIC

CHATML = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
WORDS = ["warm", "calm", "kind", "clear", "hope", "bond", "the", "client", "therapist", "feel", "you", "we"]


def _corpus() -> list[str]:
    from raft_trainer.data import SYSTEM_INSTRUCTION, user_prompt

    texts = [SYSTEM_INSTRUCTION, "The score prediction is: 3.4", " ".join(WORDS)]
    for key in DIMENSION_KEYS:
        texts.append(user_prompt(key, "warm calm kind"))
        texts.extend([RUBRIC[key].criterion, *RUBRIC[key].scores])
    return texts * 3


@functools.cache
def _trained_tokenizer_json(split_digits: bool, vocab_size: int) -> str:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    byte_level = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.pre_tokenizer = (
        pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True), byte_level])
        if split_digits
        else byte_level
    )
    tok.decoder = decoders.ByteLevel()
    corpus = _corpus()
    if not split_digits:  # make " 3" and "3.4"-like merges likely
        corpus += [f"The score prediction is: {i}.{j}" for i in range(1, 6) for j in range(10)] * 20
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus, trainer)
    return tok.to_str()


def tiny_tokenizer(split_digits: bool = True, vocab_size: int = 1200):
    """A byte-level BPE tokenizer with a ChatML template (a fresh object each call; training is cached).

    With `split_digits` the pre-tokenizer isolates every digit (as Qwen2's does); without it, merges such
    as " 3" are likely (the tokenizer the trainer must refuse).
    """
    from tokenizers import Tokenizer
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer.from_str(_trained_tokenizer_json(split_digits, vocab_size))
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    fast.chat_template = CHATML
    return fast


@dataclass(frozen=True)
class TinySize:
    """The size of a `tiny_model`, for benchmarks: `hidden` and `layers`; `vocab_size` pads the LM head beyond the
    tokenizer's vocabulary (a real model's head is ~150 k wide); the others are Qwen2Config's (`heads`,
    `kv_heads`, the feed-forward width as `ffn_factor` x `hidden`, tied embeddings, `max_positions`)."""

    hidden: int = 32
    layers: int = 2
    vocab_size: int = 0
    heads: int = 4
    kv_heads: int = 2
    ffn_factor: int = 2
    tie_word_embeddings: bool = True
    max_positions: int = 4096


def tiny_model(tokenizer, seed: int = 0, size: TinySize = TinySize()):
    """A randomly initialised `Qwen2ForCausalLM` sized for `tokenizer` (seeded: the same seed, the same weights)
    and by `size` (`TinySize`: the default is the tests' model)."""
    hidden, layers, vocab_size, heads = size.hidden, size.layers, size.vocab_size, size.heads
    kv_heads, ffn_factor, tie_word_embeddings, max_positions = (
        size.kv_heads,
        size.ffn_factor,
        size.tie_word_embeddings,
        size.max_positions,
    )
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=max(vocab_size, len(tokenizer)),
        hidden_size=hidden,
        intermediate_size=ffn_factor * hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=max_positions,
        tie_word_embeddings=tie_word_embeddings,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    return Qwen2ForCausalLM(config)


def save_tiny_model(folder: str | Path, seed: int = 0) -> Path:
    """Write the tiny model and its tokenizer into `folder` (created if needed); returns the folder.

    Saved into a scratch folder first, then published through the one atomic writer: an interrupted
    call leaves `folder` as it was, never a half-written model; other files in `folder` are kept.
    """
    import tempfile

    from mis_bench_dataset.toolkit.atomic import AtomicFiles

    tokenizer = tiny_tokenizer()
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mis-bench-tiny-") as scratch, AtomicFiles() as files:
        tiny_model(tokenizer, seed=seed).save_pretrained(scratch)
        tokenizer.save_pretrained(scratch)
        for path in sorted(Path(scratch).rglob("*")):
            if path.is_file():
                target = out / path.relative_to(scratch)
                target.parent.mkdir(parents=True, exist_ok=True)
                files.write(target, path.read_bytes())
    return out

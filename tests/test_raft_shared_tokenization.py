"""The encoder tokenizes each row's chat text once (`raft_trainer.data._ids_sharing_the_prompt`): its ids, labels,
score positions and padded batches equal the plain rendering's (prompt and full text tokenized separately), for
tokenizers of several families (byte-level BPE; Metaspace "first", whose first piece alone gets a "▁", and
"always"; a lower-casing WordPiece with stripping and normalised added tokens) and chat templates (ChatML,
Llama-2-like, one whose prompt is no prefix of the full text, one without added tokens), on varied rows, truncated
or not, in both prompt styles and both paddings."""

from __future__ import annotations

from unittest import mock

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mis_bench_dataset import DIMENSION_KEYS
from raft_trainer import DigitTokens, RAFTDataCollator, ScoreTokenizationError, data
from raft_trainer.tiny import CHATML, tiny_tokenizer

LLAMA2 = (
    "{% for m in messages %}{% if m['role'] == 'system' %}<s>[INST] <<SYS>>\n{{ m['content'] }}\n<</SYS>>\n\n"
    "{% elif m['role'] == 'user' %}{{ m['content'] }} [/INST]{% else %} {{ m['content'] }} </s>{% endif %}"
    "{% endfor %}"
)
# the generation prompt says "model", the rendered answer "assistant": the prompt is no prefix of the full text
MISMATCHED = CHATML.replace("<|im_start|>assistant\n{% endif %}", "<|im_start|>model\n{% endif %}")
PLAIN_TEXT = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"


def _reference_render(tokenizer, messages, completion, template=None):
    """The plain rendering: prompt and full text tokenized separately, the prompt length their common prefix."""
    template = template or tokenizer
    prompt_text = template.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    full = [*messages, {"role": "assistant", "content": completion}]
    full_text = template.apply_chat_template(full, tokenize=False)
    prompt_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    full_ids = tokenizer(full_text, add_special_tokens=False)["input_ids"]
    n = 0
    while n < min(len(prompt_ids), len(full_ids)) and prompt_ids[n] == full_ids[n]:
        n += 1
    return full_ids, n


def _corpus() -> list[str]:
    from raft_trainer.tiny import _corpus as tiny_corpus

    return tiny_corpus() + [f"The score prediction is: {i}.{j}" for i in range(10) for j in range(10)]


def _fast(tok, template: str, **specials):
    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(tokenizer_object=tok, **specials)
    fast.chat_template = template
    return fast


def _metaspace(prepend_scheme: str, template: str = LLAMA2):
    from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.Metaspace(prepend_scheme=prepend_scheme)]
    )
    specials = ["<unk>", "<s>", "</s>", "[INST]", "[/INST]", "<|im_start|>", "<|im_end|>"]
    tok.train_from_iterator(_corpus(), trainers.BpeTrainer(vocab_size=600, special_tokens=specials))
    tok.add_tokens([AddedToken("<<SYS>>", normalized=True), AddedToken("<</SYS>>", normalized=True)])
    return _fast(tok, template, eos_token="</s>", pad_token="<unk>", unk_token="<unk>")


def _wordpiece(template: str):
    from tokenizers import AddedToken, Tokenizer, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    specials = ["[UNK]", "[PAD]", "<|im_start|>", "<|im_end|>"]
    tok.train_from_iterator(_corpus(), trainers.WordPieceTrainer(vocab_size=700, special_tokens=specials))
    tok.add_special_tokens([AddedToken("[MASK]", lstrip=True, rstrip=True)])
    tok.add_tokens([AddedToken("client said", normalized=True)])
    return _fast(tok, template, eos_token="<|im_end|>", pad_token="[PAD]", unk_token="[UNK]")


def _chatml_with(template: str):
    tok = tiny_tokenizer()
    tok.chat_template = template
    return tok


TOKENIZERS = {
    "byte-level BPE, ChatML": tiny_tokenizer,
    "Metaspace first, Llama-2-like": lambda: _metaspace("first"),
    "Metaspace first, ChatML": lambda: _metaspace("first", CHATML),
    "Metaspace always, Llama-2-like": lambda: _metaspace("always"),
    "lower-casing WordPiece, ChatML": lambda: _wordpiece(CHATML),
    "prompt no prefix of the full text": lambda: _chatml_with(MISMATCHED),
    "template without added tokens": lambda: _chatml_with(PLAIN_TEXT),
}
PIECES = st.sampled_from(
    ["warm", " calm", "Kind", "\n", "  ", "\t", "3.4", "7", ".", ",", "é", "中文", "client said", "[MASK]", " [MASK] "]
    + ["<|im_start|>", "<|im_end|>", "<s>", "</s>", "[/INST]", "<<SYS>>", "assistant\n", "▁x"]
)
ROWS = st.fixed_dictionaries(
    {
        "video_id": st.just("AB0001_T1_Stim1"),
        "dimension": st.sampled_from(DIMENSION_KEYS),
        "transcript": st.lists(st.one_of(PIECES, st.text(max_size=6)), max_size=40).map("".join),
        "score": st.integers(10, 50).map(lambda k: k / 10),
    }
)


@pytest.fixture(scope="module", params=list(TOKENIZERS))
def tokenizer(request):
    return TOKENIZERS[request.param]()


def _digits(tokenizer) -> DigitTokens:
    """The digit ids by vocabulary (a Metaspace tokenizer writes a lone '3' as ['▁', '3'])."""
    vocab = tokenizer.get_vocab()
    return DigitTokens(digit_ids=tuple(vocab[str(d)] for d in range(10)), point_id=vocab["."])


def _encode(encoder, row):
    try:
        return encoder.encode_training_row(row)
    except (ValueError, ScoreTokenizationError) as error:  # too long, or a score merged: the same refusal both ways
        return str(error)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(row=ROWS, prompt_style=st.sampled_from(data.TRAINER_PROMPT_STYLES), max_length=st.sampled_from([None, 900]))
def test_each_row_encodes_as_the_plain_rendering_does(tokenizer, row, prompt_style, max_length):
    encoder = data.ScoringEncoder(tokenizer, _digits(tokenizer), max_length, "text", prompt_style)
    fast = _encode(encoder, row)
    with mock.patch.object(data, "render_with_completion", _reference_render):
        plain = _encode(encoder, row)
    assert fast == plain


@pytest.mark.parametrize("transcript", ["warm calm 3.4", "warm <|im_start|> calm [/INST] 3.4"])
def test_the_shared_tokenization_is_taken_where_it_applies(tokenizer, transcript):
    """It runs for templates whose prompt the full text extends, and is declined for the others (unless the
    transcript itself holds an added token to split at); where it runs it gives the plain rendering's ids."""
    messages = data.prompt_messages({"dimension": "empathy", "transcript": transcript})
    prompt_text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    full = [*messages, {"role": "assistant", "content": data.completion_text("3.4")}]
    full_text = tokenizer.apply_chat_template(full, tokenize=False)
    shared = data._ids_sharing_the_prompt(tokenizer, prompt_text, full_text)
    marked = "<|im_start|>" in transcript and "<|im_start|>" in tokenizer.get_vocab()
    declined = tokenizer.chat_template == MISMATCHED or (tokenizer.chat_template == PLAIN_TEXT and not marked)
    assert (shared is None) == declined
    if not declined:
        assert shared == _reference_render(tokenizer, messages, data.completion_text("3.4"))


@pytest.mark.parametrize("padding_side", ["left", "right"])
def test_padded_batches_equal_the_plain_renderings(padding_side):
    import random

    tokenizer = _metaspace("first")
    rng = random.Random(0)
    words = ["warm", "calm", "kind", "3.4", "\n", "é", "<s>", "[/INST]"]
    rows = [
        {
            "video_id": f"AB{i:04d}_T1_Stim1",
            "dimension": DIMENSION_KEYS[i % len(DIMENSION_KEYS)],
            "transcript": " ".join(rng.choice(words) for _ in range(rng.randint(0, 60))),
            "score": rng.randint(10, 50) / 10,
        }
        for i in range(12)
    ]
    encoder = data.ScoringEncoder(tokenizer, _digits(tokenizer), None)
    collate = RAFTDataCollator(tokenizer.pad_token_id, padding_side, pad_to_multiple_of=8)
    fast = collate([encoder.encode_training_row(r) for r in rows])
    with mock.patch.object(data, "render_with_completion", _reference_render):
        plain = collate([encoder.encode_training_row(r) for r in rows])
    assert fast.keys() == plain.keys()
    for key in fast:
        assert torch.equal(fast[key], plain[key]), key


def test_prepared_rows_keep_the_types_datasets_would_infer():
    """`prepare_raft_dataset` names its features up front; they, the column order and every value equal those of
    the same map with the types inferred."""
    import datasets

    from _raft_helpers import toy_dataset

    tokenizer = tiny_tokenizer()
    encoder = data.ScoringEncoder(tokenizer, DigitTokens.from_tokenizer(tokenizer), max_length=None)
    rows = toy_dataset(6, seed=3).cast_column("score", datasets.Value("float32"))
    prepared = data.prepare_raft_dataset(rows, encoder)
    with mock.patch.object(data, "_encoded_features", lambda features, keep: None):
        inferred = data.prepare_raft_dataset(rows, encoder)
    assert prepared.features == inferred.features and prepared.column_names == inferred.column_names
    assert prepared.data.table.schema.equals(inferred.data.table.schema)
    assert prepared.to_dict() == inferred.to_dict()
    assert prepared.features["input_ids"] == datasets.List(datasets.Value("int32"))

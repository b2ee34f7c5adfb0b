"""The perturbations (`eval_scripts.answers.perturbations`): each change as documented, seeded, byte-identical
under the same seed; the rubric paraphrases pinned by hash; unknown names refused in one line."""

from __future__ import annotations

import hashlib
import re

import pytest

from eval_scripts import Prompt, render_paper_prompt, render_prompt
from eval_scripts.answers import perturbations as P
from mis_bench_dataset import DIMENSION_KEYS, RUBRIC
from mis_bench_dataset.toolkit.errors import DataError, UsageError

from _harness_helpers import scoring_rows

TEXT = "Um, I I think, you know, that wh- what you feel is real. Uh, so yeah, it makes sense to me."


def test_unknown_perturbation_is_one_usage_line() -> None:
    with pytest.raises(UsageError) as caught:
        P.parse_perturbations("no-fillers,shuffle")
    assert "unknown perturbation 'shuffle'" in str(caught.value) and "\n" not in str(caught.value)
    assert P.parse_perturbations("padded, first-half,padded") == ("padded", "first-half")


def test_no_fillers_removes_fillers_repeats_and_false_starts() -> None:
    assert P.remove_fillers(TEXT) == "I think that what you feel is real. so yeah, it makes sense to me."
    assert P.count_fillers(TEXT) == 3  # um, you know, uh


def test_filler_rate_is_fillers_per_word_by_hand() -> None:
    corpus = ["um I see", "you know it is hard", "fine"]  # 2 fillers; 3 + 5 + 1 words
    assert P.filler_rate(corpus) == pytest.approx(2 / 9)


def test_first_half_keeps_the_first_half_of_the_words() -> None:
    assert P.first_half("a b c d e") == "a b c"
    assert P.first_half("a b c d") == "a b"


@pytest.mark.parametrize("name", P.TRANSCRIPT_PERTURBATIONS)
def test_same_seed_same_bytes_other_seed_other_draws(name) -> None:
    transcripts = {f"ZZ100{i}_T1_Luke": f"{TEXT} I hear how hard this week was for you, number {i}." for i in range(6)}
    first, record = P.perturb_transcripts(name, transcripts, seed=3)
    again, _ = P.perturb_transcripts(name, dict(reversed(transcripts.items())), seed=3)  # row order does not matter
    assert first == again and record["seed"] == 3
    if name in ("add-fillers", "asr-errors", "padded"):
        other, _ = P.perturb_transcripts(name, transcripts, seed=4)
        assert other != first


def test_asr_errors_drop_and_substitute_at_the_stated_rate() -> None:
    words = [f"w{i}" for i in range(20_000)]
    out = P.asr_errors(" ".join(words), 0.25, P.rng_for(0, "ZZ1000_T1_Luke")).split()
    dropped = 1 - len(out) / len(words)
    assert dropped == pytest.approx(0.125, abs=0.01)
    # a kept word continues the original order (a small step forward); a substitute is a word from anywhere
    indices = [int(w[1:]) for w in out]
    in_place, last = 0, -1
    for index in indices:
        if 0 < index - last < 50:
            in_place, last = in_place + 1, index
    substituted = 1 - in_place / len(words) - dropped
    assert substituted == pytest.approx(0.125, abs=0.01)


def test_add_fillers_inserts_at_the_corpus_rate() -> None:
    words = " ".join(f"w{i}" for i in range(40_000))
    out = P.add_fillers(words, 0.05, P.rng_for(1, "ZZ1000_T1_Luke"))
    assert P.count_fillers(out) / 40_000 == pytest.approx(0.05, abs=0.005)
    assert P.remove_fillers(out) == words  # exactly what no-fillers takes away


def test_padded_appends_neutral_sentences_of_half_the_length() -> None:
    out = P.pad_neutral(TEXT, P.rng_for(0, "v"))
    assert out.startswith(TEXT)
    added = out[len(TEXT) :].split()
    assert len(TEXT.split()) // 2 <= len(added) <= len(TEXT.split()) // 2 + 12
    assert all(s.strip() in P.NEUTRAL_SENTENCES for s in re.findall(r"[^.]+\.", out[len(TEXT) :].strip()) if s.strip())


def test_paraphrases_are_pinned_and_complete() -> None:
    for variant, digest in P.PARAPHRASE_SHA256.items():
        path = P.PARAPHRASE_DIR / f"rubric_{variant}.json"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
        data = P.load_paraphrase(variant)
        assert set(DIMENSION_KEYS) <= data.keys()
        assert all(len(data[k]["levels"]) == 5 for k in DIMENSION_KEYS)


def test_a_changed_paraphrase_is_refused(tmp_path, monkeypatch) -> None:
    (tmp_path / "rubric_a.json").write_text('{"about": "edited"}')
    monkeypatch.setattr(P, "PARAPHRASE_DIR", tmp_path)
    P.load_paraphrase.cache_clear()
    try:
        with pytest.raises(DataError, match="not the pinned"):
            P.load_paraphrase("a")
    finally:
        P.load_paraphrase.cache_clear()


def _prompt(style: str, dimension: str = "empathy") -> Prompt:
    row = next(r for r in scoring_rows(1) if r["dimension"] == dimension)
    if style == "paper":
        paper = render_paper_prompt(row, "text")
        return Prompt(row["video_id"], dimension, paper.user, system=paper.system)
    return Prompt(row["video_id"], dimension, render_prompt(row, "text", style))


@pytest.mark.parametrize("style", ["direct", "cot", "paper"])
def test_prompt_perturbations_change_only_what_they_say(style) -> None:
    prompt = _prompt(style)
    rubric = RUBRIC["empathy"]
    para = P.perturb_prompt("rubric-paraphrase-b", prompt)
    assert rubric.criterion not in para.text and P.load_paraphrase("b")["empathy"]["criterion"] in para.text
    assert all(rubric.description(level) not in para.text for level in range(1, 6))
    flipped = P.perturb_prompt("rubric-reversed", prompt)
    assert flipped.text.index("Score 5") < flipped.text.index("Score 1")
    assert sorted(flipped.text.splitlines()) == sorted(prompt.text.splitlines())  # the same lines, reordered
    reworded = P.perturb_prompt("instruction-reworded", prompt)
    assert reworded.text != prompt.text and reworded.system == prompt.system
    assert P.perturb_prompt("rubric-paraphrase-b", prompt) == para  # deterministic
    if style == "paper":
        moved = P.perturb_prompt("system-in-user", prompt)
        assert moved.system is None and moved.text == f"{prompt.system}\n\n{prompt.text}"
    else:
        with pytest.raises(UsageError, match="no system message"):
            P.perturb_prompt("system-in-user", prompt)

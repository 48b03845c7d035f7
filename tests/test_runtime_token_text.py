"""Token texts for display (`specviz.runtime.token_text.decode_tokens`): byte-level pieces of a character never show "\ufffd"."""
from __future__ import annotations

import pytest

from specviz.runtime.token_text import decode_tokens

TEXT = "café 😀 ▁ naïve — 日本語 😀😀"


@pytest.fixture(scope="module")
def byte_level():
    """A tiny byte-level BPE (GPT-2 alphabet, as Qwen's) trained so multi-byte characters span tokens."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(["hello world café", "the cat sat"] * 20, trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<eos>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>")


def test_no_replacement_character_and_bytes_shown(byte_level):
    ids = byte_level.encode(TEXT)
    assert "\ufffd" in "".join(byte_level.batch_decode([[i] for i in ids]))   # the problem this solves
    texts = decode_tokens(byte_level, ids)
    assert len(texts) == len(ids)
    assert not any("\ufffd" in t for t in texts)
    joined = "".join(texts)
    assert "⟨F0⟩" in joined or "⟨F0 9F⟩" in joined or "⟨F0 9F 98⟩" in joined   # the emoji's first byte(s)
    assert "caf" in joined and "the" not in joined
    # whole characters inside one token stay text
    assert decode_tokens(byte_level, byte_level.encode("hello")) == byte_level.batch_decode(
        [[i] for i in byte_level.encode("hello")])


def test_byte_pieces_join_back_to_the_text(byte_level):
    """Reading the ⟨..⟩ pieces as bytes gives the original text back: nothing is lost."""
    import re

    ids = byte_level.encode(TEXT)
    raw = b""
    for t in decode_tokens(byte_level, ids):
        for part in re.split(r"(⟨[0-9A-F ]+⟩)", t):
            raw += bytes.fromhex(part[1:-1]) if part.startswith("⟨") else part.encode()
    assert raw.decode() == TEXT


def test_sentencepiece_byte_fallback_and_unknown_pieces():
    class Fallback:
        def batch_decode(self, seqs):
            return ["\ufffd" for _ in seqs]

        def convert_ids_to_tokens(self, ids):
            return {1: "<0xF0>", 2: "<0x9F>", 3: "▁weird"}.get(ids[0]) and [
                {1: "<0xF0>", 2: "<0x9F>", 3: "▁weird"}[i] for i in ids]

    assert decode_tokens(Fallback(), [1, 2]) == ["⟨F0⟩", "⟨9F⟩"]
    assert decode_tokens(Fallback(), [3]) == ["⟨?⟩"]
    assert decode_tokens(None, [5]) == ["<5>"]

"""Each token's text on its own, for display (the live text, the round cards, the target alone's steps).

Apart from the decoder's forwards (runtime.decoding) because it is its own concern: bytes of a byte-level or
SentencePiece vocabulary turned into text that never shows U+FFFD.
"""
from __future__ import annotations

import functools
import re


def decode_tokens(tokenizer, ids: list[int]) -> list[str]:
    """Each token's text on its own, for display; never U+FFFD.

    A byte-level token that holds only part of a multi-byte UTF-8 character
    decodes to "\ufffd" on its own: it is shown as its bytes instead, e.g.
    "⟨F0 9F⟩" (the valid parts of the token stay text). The bytes come from
    `convert_ids_to_tokens` through the GPT-2 byte alphabet, or from
    SentencePiece byte-fallback tokens such as "<0xF0>".
    """
    if tokenizer is None:
        return [f"<{i}>" for i in ids]
    texts = tokenizer.batch_decode([[i] for i in ids])
    bad = [n for n, text in enumerate(texts) if "\ufffd" in text]
    if bad:
        try:
            pieces = tokenizer.convert_ids_to_tokens([ids[n] for n in bad])
        except Exception:  # noqa: BLE001 - a tokenizer without it: mark the broken bytes only
            pieces = [None] * len(bad)
        for n, piece in zip(bad, pieces):
            raw = _token_bytes(piece)
            texts[n] = _bytes_text(raw) if raw is not None else texts[n].replace("\ufffd", "⟨?⟩")
    return texts


def _byte_decoder() -> dict[str, int]:
    """GPT-2's byte-level alphabet, reversed: the printable stand-in character -> the byte it encodes."""
    keep = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in keep:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


_BYTE_DECODER = _byte_decoder()
_BYTE_FALLBACK = re.compile(r"<0x([0-9A-Fa-f]{2})>")


def _token_bytes(piece) -> bytes | None:
    """A token's raw bytes from its vocabulary string, or None when it is not a byte-level token."""
    if not isinstance(piece, str) or not piece:
        return None
    fallback = _BYTE_FALLBACK.fullmatch(piece)
    if fallback:
        return bytes([int(fallback.group(1), 16)])
    if all(ch in _BYTE_DECODER for ch in piece):
        return bytes(_BYTE_DECODER[ch] for ch in piece)
    return None


def _bytes_text(raw: bytes) -> str:
    """UTF-8 text where it is valid, each run of broken bytes as ⟨E2 96⟩."""
    out = []
    while raw:
        try:
            out.append(raw.decode("utf-8"))
            break
        except UnicodeDecodeError as e:
            out.append(raw[:e.start].decode("utf-8"))
            end = e.end
            while end < len(raw):   # swallow the following broken bytes into the same ⟨…⟩
                try:
                    raw[end:end + 4].decode("utf-8")
                    break
                except UnicodeDecodeError as e2:
                    if e2.start != 0:
                        break
                    end += e2.end
            out.append("⟨" + " ".join(f"{b:02X}" for b in raw[e.start:end]) + "⟩")
            raw = raw[end:]
    return "".join(out)

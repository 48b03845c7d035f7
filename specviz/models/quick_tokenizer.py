"""A saved tokenizer folder rewritten so that it loads in a third of the time, and only where it loads the same.

Why: a GGUF's tokenizer is written once into the model cache (models.gguf_file) and read back at every load. Read
the ordinary way, a Qwen2 tokenizer folder took ~0.9 s of a 2-core machine's ~4.5 s warm load: transformers parses
the 11 MB tokenizer.json in Python twice (once for its added tokens, once for the vocabulary and merges, which the
Qwen2 class then rebuilds its backend from). Rewritten here, the folder holds the backend exactly as that load built
it, named as the generic class (`PreTrainedTokenizerFast`: its backend is read by the `tokenizers` library in Rust,
~0.3 s) with its added tokens listed in tokenizer_config.json (so no Python parse of tokenizer.json for them).

The rewrite is kept only when the two loads agree on everything a run uses (`differences`): vocabulary, added and
special tokens, the chat template, and the ids and text of probe strings; otherwise the ordinary folder stays.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

QUICK_CLASS = "PreTrainedTokenizerFast"
# Strings whose ids and decoded text must agree: Unicode that normalization changes, special tokens written as text,
# code, whitespace runs, digits, scripts other than Latin.
PROBES = ("Hello world", "e\u0301 caf\u00e9 \ufb01 \u212b", "<|im_end|> x<|endoftext|> <s></s>",
          "def f(x):\n\treturn x  # \u4e2d\u6587 \U0001f600", "  lots   of\n\n\nspaces 12345 3.14159",
          "\u00bfQu\u00e9 tal? \u00d1and\u00fa", "\u0417\u0434\u0440\u0430\u0432\u0441\u0442\u0432\u0443\u0439")
CONVERSATION = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi \u00e9"}]


def make_quick(folder: Path) -> bool:
    """Rewrite the saved tokenizer in `folder` to load quickly where that load agrees with the ordinary one; returns
    whether it did."""
    from transformers import AutoTokenizer

    ordinary = AutoTokenizer.from_pretrained(str(folder))
    if type(ordinary).__name__ == QUICK_CLASS:
        return False
    with tempfile.TemporaryDirectory(prefix="quick-", dir=folder.parent) as work:
        quick_folder = Path(work)
        for path in folder.iterdir():
            if path.is_file():
                shutil.copy2(path, quick_folder / path.name)
        ordinary.backend_tokenizer.save(str(quick_folder / "tokenizer.json"))
        config_path = quick_folder / "tokenizer_config.json"
        config = json.loads(config_path.read_text(encoding="utf-8"))
        config["tokenizer_class"] = QUICK_CLASS
        config["added_tokens_decoder"] = {str(i): _added(t) for i, t in ordinary.added_tokens_decoder.items()}
        config_path.write_text(json.dumps(config, indent=2, ensure_ascii=False), encoding="utf-8")
        if differences(ordinary, AutoTokenizer.from_pretrained(str(quick_folder))):
            return False
        for name in ("tokenizer.json", "tokenizer_config.json"):
            shutil.copy2(quick_folder / name, folder / name)
    return True


def _added(token) -> dict:
    return {"content": token.content, "lstrip": token.lstrip, "normalized": token.normalized, "rstrip": token.rstrip,
            "single_word": token.single_word, "special": token.special}


def differences(a, b) -> list[str]:
    """What two tokenizers disagree on, among what a run uses (empty: none)."""
    found = []
    if a.get_vocab() != b.get_vocab() or len(a) != len(b):
        found.append("vocabulary")
    if {i: _added(t) for i, t in a.added_tokens_decoder.items()} != {i: _added(t) for i, t in b.added_tokens_decoder.items()}:
        found.append("added tokens")
    for name in ("bos_token", "eos_token", "pad_token", "unk_token"):
        if (getattr(a, name), getattr(a, f"{name}_id")) != (getattr(b, name), getattr(b, f"{name}_id")):
            found.append(name)
    if a.all_special_ids != b.all_special_ids or a.chat_template != b.chat_template:
        found.append("special ids or chat template")
    for text in PROBES:
        ids = a(text)["input_ids"]
        if ids != b(text)["input_ids"] or a.decode(ids) != b.decode(ids):
            found.append(f"ids or text of {text!r}")
    if a.chat_template and (a.apply_chat_template(CONVERSATION, tokenize=False, add_generation_prompt=True)
                            != b.apply_chat_template(CONVERSATION, tokenize=False, add_generation_prompt=True)):
        found.append("the chat template's text")
    return found

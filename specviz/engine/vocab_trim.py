"""A trimmed draft vocabulary (FR-Spec, arXiv 2502.14856; VocabTrim): the table, the subset, the head.

The draft's output layer is restricted to the N most frequent tokens, so a draft
step multiplies the hidden state by N rows of the output weight instead of all
V (on the 0.5B Qwen draft the tied head is ~136M of 494M parameters). q is then
a distribution over the subset and zero elsewhere; the rejection rule stays
exact for any q, so tokens outside the subset still reach the output through
the residual and the bonus, both drawn from the target.

The ranking comes from a shipped table (assets/vocab/, made by
scripts/make_vocab.py): token ids ranked by how often the target emitted
them, then every unseen id in ascending id order (the prior, see the table's
metadata). A table belongs to one tokenizer: its fingerprint and vocabulary
size are checked before use, and a mismatch is refused with a clear error.
"""
from __future__ import annotations

import hashlib
import json
import weakref
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import torch

from ..errors import KeyedError
from ..limits import REPO_ROOT
from ..runtime.state import runtime_of

TABLE_FORMAT = "specviz-vocab-table/1"
VOCAB_DIR = REPO_ROOT / "assets" / "vocab"
DEFAULT_TABLE = VOCAB_DIR / "qwen2.5-coder.vocab.json"
DEFAULT_SIZE = 32768   # FR-Spec's and VocabTrim's range is 16k-32k; 32k keeps ~all of the target's mass here


class VocabTableError(KeyedError):
    """The table cannot serve this tokenizer or model (wrong fingerprint, size, or a malformed file): a keyed
    sentence (`vocab.*` in specviz.strings), so a page says it in its own language."""


# ---------------------------------------------------------------- the tokenizer's side
def tokenizer_fingerprint(tokenizer) -> str:
    """sha256 (first 16 hex digits) of every (token, id) pair: two tokenizers agree iff their ids mean the same."""
    pairs = sorted(tokenizer.get_vocab().items(), key=lambda kv: (kv[1], kv[0]))
    return hashlib.sha256(json.dumps(pairs, ensure_ascii=False).encode("utf-8")).hexdigest()[:16]


# A loaded tokenizer's fingerprint, kept while the tokenizer lives: it took 0.6 s of every trimmed run's set-up on the
# packaged 151,665-token tokenizer (a tokenizer's vocabulary does not change once loaded).
_FINGERPRINTS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _fingerprint_of(tokenizer) -> str:
    try:
        return _FINGERPRINTS[tokenizer]
    except (KeyError, TypeError):   # TypeError: an object that takes no weak reference is fingerprinted each time
        fp = tokenizer_fingerprint(tokenizer)
        try:
            _FINGERPRINTS[tokenizer] = fp
        except TypeError:
            pass
        return fp


_WHITESPACE_BYTES = frozenset("ĠĊĉč")   # GPT-2 byte alphabet: space, \n, \t, \r


def always_kept_ids(tokenizer) -> list[int]:
    """Ids every subset keeps: special and added tokens (EOS, chat, FIM) and pure-whitespace tokens.

    Whitespace runs carry code indentation: dropping one would make the draft
    miss every line at that depth.
    """
    keep = {int(i) for i in tokenizer.all_special_ids}
    keep |= {int(i) for i in getattr(tokenizer, "added_tokens_decoder", None) or {}}
    for token, i in tokenizer.get_vocab().items():
        if token and (all(ch in _WHITESPACE_BYTES for ch in token) or token.isspace()):
            keep.add(int(i))
    return sorted(keep)


def check_tokenizer(table: VocabTable, tokenizer) -> None:
    """Refuse a table made for another tokenizer."""
    size, fp = len(tokenizer), _fingerprint_of(tokenizer)
    if size != table.meta["tokenizer_size"] or fp != table.meta["tokenizer_fingerprint"]:
        raise VocabTableError("vocab.other_tokenizer", name=table.path.name, table_size=table.meta["tokenizer_size"],
                              table_fp=table.meta["tokenizer_fingerprint"], size=size, fp=fp)


# ---------------------------------------------------------------- the table
@dataclass(frozen=True)
class VocabTable:
    path: Path
    meta: dict
    observed: tuple[int, ...]   # ids the target emitted, most frequent first
    counts: tuple[int, ...]     # how often each was emitted
    always: tuple[int, ...]     # ids every subset keeps (specials, whitespace)

    @property
    def model_vocab(self) -> int:
        return int(self.meta["model_vocab"])

    def ranking(self) -> torch.Tensor:
        """Every id of the model's vocabulary, most likely first: the observed ones, then the prior (id order)."""
        seen = torch.tensor(self.observed, dtype=torch.long)
        rest = torch.ones(self.model_vocab, dtype=torch.bool)
        rest[seen] = False
        return torch.cat([seen, rest.nonzero().flatten()])


@lru_cache(maxsize=4)
def load_table(path: str | Path = DEFAULT_TABLE) -> VocabTable:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise VocabTableError("vocab.not_found", path=str(path)) from None
    except (OSError, ValueError) as e:
        raise VocabTableError("vocab.unreadable", path=str(path), reason=str(e)[:200]) from None
    if not isinstance(data, dict) or data.get("format") != TABLE_FORMAT:
        raise VocabTableError("vocab.not_table", path=str(path), format=TABLE_FORMAT)
    meta, observed = data["meta"], tuple(int(i) for i in data["observed"])
    if any(not 0 <= i < int(meta["model_vocab"]) for i in observed) or len(set(observed)) != len(observed):
        raise VocabTableError("vocab.bad_ids", path=str(path))
    return VocabTable(path, meta, observed, tuple(int(c) for c in data["counts"]),
                      tuple(int(i) for i in data["always"]))


def check_model_vocab(table: VocabTable, vocab: int) -> None:
    """The drafter's vocabulary (the models' common prefix) must be the table's."""
    if vocab != table.model_vocab:
        raise VocabTableError("vocab.model_size", name=table.path.name, table_vocab=table.model_vocab, vocab=vocab)


def vocab_subset(table: VocabTable, size: int = DEFAULT_SIZE, extra_ids=()) -> torch.Tensor:
    """The sorted ids of a size-`size` subset: the table's always-kept ids, `extra_ids` (e.g. EOS), then the ranking."""
    fixed = sorted(set(table.always) | {int(i) for i in extra_ids})
    if not len(fixed) <= size <= table.model_vocab:
        raise ValueError(f"a trimmed vocabulary needs {len(fixed)} <= N <= {table.model_vocab}, got N = {size}")
    return subset_from_ranking(table.ranking(), size, fixed)


def subset_from_ranking(ranking: torch.Tensor, size: int, fixed=()) -> torch.Tensor:
    """`fixed` plus the best-ranked other ids up to `size` ids, sorted ascending."""
    keep = torch.zeros(int(ranking.max()) + 1 if len(ranking) else 0, dtype=torch.bool)
    fixed = torch.as_tensor(list(fixed), dtype=torch.long)
    keep[fixed] = True
    others = ranking[~keep[ranking]][: size - int(keep.sum())]
    keep[others] = True
    return keep.nonzero().flatten()


# ---------------------------------------------------------------- the head
def trimmed_head(model, subset: torch.Tensor) -> torch.nn.Module:
    """nn.Linear(H, N) holding the subset's rows of the output weight, on the model's kernel path (the
    Runtime's store_linear, set by specviz.models.quant); built once per model and subset (kept in its Runtime)."""
    out = model.get_output_embeddings()
    if getattr(out, "bias", None) is not None:
        raise ValueError("trimmed heads support output layers without a bias (Qwen2, Llama)")
    runtime = runtime_of(model)
    # Keyed by the output module, not its weight: on the oneDNN path the dense weight is a fresh copy.
    key = (hashlib.sha1(subset.cpu().numpy().tobytes()).hexdigest(), id(out), runtime.linear_path)
    heads = runtime.trimmed_heads
    if key not in heads:
        with torch.no_grad():
            rows = _dense_rows(out, subset)
            # No random init of weights about to be replaced (29 M of them for the packaged draft), no copy.
            head = torch.nn.utils.skip_init(torch.nn.Linear, rows.shape[1], rows.shape[0], bias=False,
                                            device=rows.device, dtype=rows.dtype)
            head.weight = torch.nn.Parameter(rows, requires_grad=False)
            del rows
        heads.clear()   # one subset per model in practice: do not keep old copies of 100+ MB alive
        heads[key] = runtime.store_linear(head.eval()) if runtime.store_linear else head.eval()
    return heads[key]


def _dense_rows(linear: torch.nn.Module, subset: torch.Tensor) -> torch.Tensor:
    """The subset's rows of an output layer's dense [V, H] weight on any kernel path: a packed 4-bit layer
    dequantizes only the tiles that hold them (`dense_rows`: 0.3 s and ~0.1 GB instead of 1.1 s and 0.5 GB for the
    packaged draft), any other specviz linear type offers `dense_weight()` (specviz.models.quant), a plain nn.Linear
    its `weight`."""
    pick = getattr(linear, "dense_rows", None)
    if callable(pick):
        return pick(subset)
    dense = getattr(linear, "dense_weight", None)
    weight = dense() if callable(dense) else linear.weight
    return weight.index_select(0, subset.to(weight.device))

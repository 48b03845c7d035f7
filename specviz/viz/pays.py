"""Whether speculation can pay for the current pair and device, said in one sentence with its numbers.

The inputs are measured elsewhere (`specviz.ui.pays`: c and verify_cost from
bare forwards, the run's α, the theory's speedup, the measured speedup against
the target alone when the run has one); this module only decides whether to
speak and renders the sentence in the page's language, every value formatted
here and escaped on its way into markup.

    theory < 1               "cannot pay": c, verify cost, α and the theory, plus the measured speedup when there
                             is one, and a pair with a larger gap that does pay; never when the run measured
                             1× or more (the measurement wins over the model)
    theory ≥ 1, measured < 1 "did not pay in this run": the theory allows it, the decoder's overhead ate it
    otherwise (or a number   nothing
    is missing)
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from ..strings import DEFAULT_LANG, t
from .format import esc, display_number, weights_text


@dataclass(frozen=True)
class PaysCheck:
    c: float                        # one draft forward / one target forward (bare forwards, measured)
    verify_cost: float              # one target forward over K+1 positions / one over 1 (measured)
    k: int
    alpha: float                    # the run's per-token acceptance (alpha_verified)
    theory: float                   # theory_speedup(alpha, K, c, verify_cost)
    measured: float = math.nan      # speculative tokens/s over the target alone's, when the run has it
    device: str = "cpu"             # "cpu" or "cuda": which pair with a larger gap to point to
    weights: str = ""               # how the target stored its weights (the baseline named: "int4", ...)
    # A draft tree: the round's measured tokens τ over its cost, not the chain's α formula.
    reads: float = math.nan         # draft forwards per round (the tree's depth), mean over the run
    tau: float = math.nan           # tokens per round, measured

    @property
    def tree(self) -> bool:
        return _finite(self.reads)


def _finite(*xs: float) -> bool:
    return all(isinstance(x, (int, float)) and math.isfinite(x) for x in xs)


def verdict(check: PaysCheck | None) -> str | None:
    """"cannot" (the theory is below 1), "did_not" (the theory allows it, the run measured below 1) or None."""
    if check is None or not _finite(check.c, check.verify_cost, check.theory):
        return None
    if not (_finite(check.tau) if check.tree else _finite(check.alpha)):
        return None
    measured = _finite(check.measured)
    if measured and check.measured >= 1:
        return None
    if check.theory < 1:
        return "cannot"
    return "did_not" if measured else None


def sentence(check: PaysCheck | None, lang: str = DEFAULT_LANG) -> str | None:
    """The plain text in `lang`, or None when speculation pays (or a number is missing)."""
    kind = verdict(check)
    if kind is None:
        return None
    values = dict(c=display_number(check.c, 2), k=check.k, verify=display_number(check.verify_cost, 1), alpha=display_number(check.alpha, 2),
                  theory=display_number(check.theory, 2))
    if check.tree:
        values = dict(c=values["c"], k=check.k, verify=values["verify"], theory=values["theory"],
                      reads=display_number(check.reads, 1), tau=display_number(check.tau, 2),
                      cost=display_number(check.reads * check.c + check.verify_cost, 1))
    hint = t("pays.hint_gpu" if str(check.device).startswith("cuda") else "pays.hint_cpu", lang)
    if check.weights:
        hint = t("pays.weights", lang, weights=weights_text(check.weights, lang)) + " " + hint
    if kind == "did_not":
        key = "pays.tree_did_not" if check.tree else "pays.did_not"
        return t(key, lang, speedup=display_number(check.measured, 2), **values) + " " + hint
    text = t("pays.tree_cannot" if check.tree else "pays.cannot", lang, **values)
    if _finite(check.measured):
        text += " " + t("pays.measured", lang, speedup=display_number(check.measured, 2))
    return text + " " + hint


def html(check: PaysCheck | None, lang: str = DEFAULT_LANG) -> str:
    """The sentence as a note for the metrics panel; "" when there is nothing to say."""
    text = sentence(check, lang)
    if text is None:
        return ""
    return (f'<div class="sv-pays" role="note" data-pays="{esc(verdict(check))}" '
            f'data-theory="{esc(display_number(check.theory, 3))}" data-c="{esc(display_number(check.c, 3))}">⚠ {esc(text)}</div>')

"""A round as a card (drafted tokens with their q and p bars, a with u marked, verdicts, correction, bonus), and
`RoundLog`, the cards of a run newest first. Escaping and markers as in `html.py`."""
from __future__ import annotations

import math
from collections import deque
from typing import Sequence

from ..strings import DEFAULT_LANG, t
from ..trace.records import Alt, Round
from .format import MARKERS, display_number, esc, rich, round_drafter_text, token_display
from .html import source_class, verdict_word
from .tree import tree_html


def _bar(value: float, kind: str, label: str) -> str:
    width = 0.0 if value is None or math.isnan(value) else max(0.0, min(1.0, value)) * 100
    return (f'<span class="sv-bar" data-tip="{esc(label)} = {esc(display_number(value))}">'
            f'<span class="sv-bar-fill sv-bar-{kind}" style="width:{width:.1f}%"></span></span>'
            f'<span class="sv-num">{esc(display_number(value))}</span>')


def _accept_bar(a: float, u: float) -> str:
    """The acceptance probability a as a filled bar, with u marked as a tick: u left of the edge = accept."""
    aw = 0.0 if math.isnan(a) else max(0.0, min(1.0, a)) * 100
    uw = None if math.isnan(u) else max(0.0, min(1.0, u)) * 100
    tick = "" if uw is None else f'<span class="sv-u" style="left:{uw:.1f}%"></span>'
    rel = "" if uw is None else ("&lt;" if u < a else "≥")
    return (f'<span class="sv-abar" data-tip="a = min(1, p/q) = {esc(display_number(a))}; u = {esc(display_number(u))}">'
            f'<span class="sv-abar-fill" style="width:{aw:.1f}%"></span>{tick}</span>'
            f'<span class="sv-num">u {esc(display_number(u, 2))} {rel} a {esc(display_number(a, 2))}</span>')


def _card_row(rnd: Round, i: int, greedy: bool, qh: str, ph: str, lang: str) -> str:
    tk, verdict = rnd.drafted[i], rnd.verdict(i)
    qv, pv = (tk.q_confidence, tk.p_confidence) if greedy else (tk.q, tk.p)
    check = _accept_bar(tk.accept_prob, tk.u) if verdict != "discarded" else \
        f'<span class="sv-muted">{esc(t("card.not_checked", lang))}</span>'
    return (f'<tr class="sv-row-{verdict}" data-pos="{i + 1}">'
            f'<td class="sv-pos">{i + 1}</td>'
            f'<td><span class="sv-tok sv-{verdict}{source_class(tk.source)}" data-source="{esc(tk.source)}">'
            f'{esc(token_display(tk.text, True))}</span></td>'
            f'<td>{_bar(qv, "q", qh)}</td><td>{_bar(pv, "p", ph)}</td><td>{check}</td>'
            f'<td><span class="sv-verdict sv-v-{verdict}">{MARKERS[verdict]} {esc(verdict_word(verdict, lang))}'
            f'</span></td></tr>')


def _card_extras(rnd: Round, greedy: bool, lang: str) -> list[str]:
    extra = []
    if rnd.correction is not None:
        c = rnd.correction
        extra.append(
            f'<div class="sv-card-extra"><span class="sv-tok sv-correction">{esc(token_display(c.text, True))}</span> '
            f'{rich("card.correction", lang, pos=(rnd.rejected_at or 0) + 1, r=display_number(c.prob))} {_alt_chips(c.top)}</div>')
    if rnd.bonus is not None:
        b = rnd.bonus
        extra.append(
            f'<div class="sv-card-extra"><span class="sv-tok sv-bonus">{esc(token_display(b.text, True))}</span> '
            f'{rich("card.bonus_conf" if greedy else "card.bonus", lang, pos=rnd.k + 1, p=display_number(b.prob))} '
            f'{_alt_chips(b.top)}</div>')
    if rnd.eos:
        extra.append(f'<div class="sv-card-extra sv-muted">{esc(t("card.eos", lang))}</div>')
    return extra


def round_card_html(rnd: Round, greedy: bool, lang: str = DEFAULT_LANG) -> str:
    """One card per round: drafted tokens with q/p bars, a with u marked, verdicts, correction, bonus."""
    ms = lambda s: f"{1000 * s:.0f}"  # noqa: E731
    head = (f'<div class="sv-card-head"><b>{esc(t("card.title", lang, round=rnd.index + 1))}</b>'
            f'<span>{esc(t("card.counts", lang, k=rnd.k, accepted=rnd.n_accepted, emitted=len(rnd.emitted)))}</span>'
            f'<span class="sv-card-drafter" data-drafter="{esc(rnd.drafter)}">'
            f'{esc(round_drafter_text(rnd, lang))}</span>'
            f'<span class="sv-card-time">'
            f'{esc(t("card.time", lang, draft=ms(rnd.draft_seconds), verify=ms(rnd.verify_seconds)))}</span></div>')
    qh, ph = (t("card.q_conf", lang), t("card.p_conf", lang)) if greedy else (t("card.q", lang), t("card.p", lang))
    heads = ["#", t("card.token", lang), qh, ph, t("card.accept", lang), t("card.verdict", lang)]
    rows = ["<tr>" + "".join(f"<th>{esc(h)}</th>" for h in heads) + "</tr>"]
    rows += [_card_row(rnd, i, greedy, qh, ph, lang) for i in range(rnd.k)]
    table = f'<table class="sv-card-table">{"".join(rows)}</table>' if rnd.drafted else \
        f'<div class="sv-muted">{esc(t("card.no_draft", lang))}</div>'
    extras = "".join(_card_extras(rnd, greedy, lang)) + tree_html(rnd, lang)   # a tree round: its whole tree
    return f'<div class="sv-card" data-round="{rnd.index + 1}">{head}{table}{extras}</div>'


def _alt_chips(alts: Sequence[Alt]) -> str:
    return " ".join(f'<span class="sv-chip">{esc(token_display(a.text, True))} <i>{esc(display_number(a.prob, 2))}</i></span>'
                    for a in alts[:5]) or "—"


class RoundLog:
    """Cards cached per round; shown newest first, the newest `limit` of them."""

    def __init__(self, greedy: bool, limit: int = 40, lang: str = DEFAULT_LANG):
        self.greedy, self.limit, self.lang = greedy, limit, lang
        # (round, its card once drawn), only the shown ones: a long replay stays small and draws only what is shown
        self._cards: deque[list] = deque(maxlen=limit)
        self._n = 0

    def add(self, rnd: Round) -> None:
        self._cards.append([rnd, None])
        self._n += 1

    def __len__(self) -> int:
        return self._n

    def html(self) -> str:
        if not self._cards:
            return f'<div class="sv-muted">{esc(t("log.empty", self.lang))}</div>'
        for card in self._cards:
            if card[1] is None:
                card[1] = round_card_html(card[0], self.greedy, self.lang)
        shown = [card[1] for card in reversed(self._cards)]
        note = "" if self._n <= self.limit else \
            f'<div class="sv-muted">{esc(t("log.truncated", self.lang, limit=self.limit, n=self._n))}</div>'
        return note + "".join(shown)

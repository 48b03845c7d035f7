"""The frame both step-mode stages are drawn in: a chain's round (`classroom.stage_html`) and a draft tree's
(`classroom_tree.tree_stage_html`).

The frame draws what the two have in common: the box with the stop's place as
data attributes, "where we are", the stop's picture and words, the page's note
and the round's summary (kept back in predict mode). Each kind of round supplies
only its own picture, words and summary (`StageParts`). Pure HTML, no Gradio;
every string of the frame reaches markup through `esc`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..classroom.steps import Stop, stops
from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .format import esc


@dataclass(frozen=True)
class StageOptions:
    """How the page shows a stage (the same for a chain and a tree), apart from what the round holds."""

    hidden: bool = False                 # predict mode, at a test whose u is not shown yet
    show_summary: bool = True            # False: the round's summary is kept back (a test of it not yet shown)
    note: str = ""                       # plain text the page adds (a re-drawn u); "" for none
    reject_chance: float | None = None   # the mass picture's rejection chance, said at a correction (None: not said)


@dataclass(frozen=True)
class StageParts:
    """What one kind of round draws for the stop under the cursor; the frame puts it in place."""

    kind_key: str            # the string key of the stop's kind ("cls.kind_test", ...)
    picture: str             # HTML: the drafted tokens (a strip, a tree) with their states so far
    body: str                # HTML: the stop's explanation
    summary: str             # plain text: the round in one line
    extra: str = ""          # HTML after the explanation, before the note (who drafted a round)
    box_class: str = ""      # a class added to the box
    pos_attr: str = "pos"    # the data attribute naming the stop's place (a tree's stop names a node)


def stage_frame(rnd: Round, n_rounds: int, stop_index: int, options: StageOptions,
                parts: Callable[[Stop], StageParts], lang: str = DEFAULT_LANG) -> str:
    """The whole stage of one stop (`stop_index` clamped to the round's stops): `parts(stop)` draws the kind's
    own pieces, the frame the rest."""
    all_stops = stops(rnd)
    stop = all_stops[max(0, min(stop_index, len(all_stops) - 1))]
    own = parts(stop)
    head = t("cls.where", lang, round=rnd.index + 1, rounds=n_rounds, stop=stop_index + 1, stops=len(all_stops),
             kind=t(own.kind_key, lang))
    summ = own.summary if options.show_summary else t("cls.sum_hidden", lang)
    note = f'<p class="sv-cls-note" role="note">{esc(options.note)}</p>' if options.note else ""
    box = f"sv-cls-stage-box {own.box_class}" if own.box_class else "sv-cls-stage-box"
    return (f'<div class="{esc(box)}" data-round="{rnd.index + 1}" data-stop="{stop_index + 1}" '
            f'data-kind="{esc(stop.kind)}" data-{esc(own.pos_attr)}="{"" if stop.pos is None else stop.pos + 1}">'
            f'<div class="sv-cls-where">{esc(head)}</div>{own.picture}'
            f'<div class="sv-cls-body">{own.body}</div>{own.extra}{note}'
            f'<p class="sv-cls-summary" role="status" aria-live="polite">{esc(summ)}</p></div>')

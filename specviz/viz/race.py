"""The drafter race (specviz.classroom.race) as HTML: the figures side by side, then each lane's text with every
token coloured by who proposed it (the draft model, prompt lookup, or the target itself).

Every string that reaches markup (token texts from the tokenizer, the strings tables, numbers) goes through
`format.esc`. The colours are Okabe & Ito's, each with its own underline so they also read without colour.
"""
from __future__ import annotations

import math
from typing import Callable, Sequence

from ..classroom.race import ENTRANTS, LANES, SOURCES, TARGET, Lane, verdict
from ..strings import DEFAULT_LANG, t
from .format import display_number, drafter_name, esc, pct, token_display

SOURCE_COLOURS = {"model": "#E69F00", "ngram": "#56B4E9", TARGET: "#555555"}
_SOURCE_KEYS = {"model": "race.src_model", "ngram": "race.src_ngram", TARGET: "race.src_target"}
HEADS = ("race.col_drafter", "race.col_tau", "race.col_accept", "race.col_tps", "race.col_speedup", "race.col_lookup",
         "race.col_same")


def lane_name(lane: str, lang: str = DEFAULT_LANG) -> str:
    return t("race.target", lang) if lane == TARGET else drafter_name(lane, lang)


def source_word(source: str, lang: str = DEFAULT_LANG) -> str:
    key = _SOURCE_KEYS.get(source)
    return t(key, lang) if key else drafter_name(source, lang)


def _num(x: float, digits: int = 2) -> str:
    return display_number(x, digits) if isinstance(x, (int, float)) and math.isfinite(x) else "—"


def legend_html(lang: str = DEFAULT_LANG) -> str:
    items = "".join(f'<span class="sv-race-tok sv-race-{s}" data-source="{s}">{esc(source_word(s, lang))}</span> '
                    for s in SOURCES)
    return f'<p class="sv-race-legend">{esc(t("race.legend", lang))} {items}</p>'


def tokens_html(lane: Lane, text_of: Callable[[int], str], lang: str = DEFAULT_LANG) -> str:
    """The lane's text, one span per token, classed and tagged by its source."""
    words = {s: source_word(s, lang) for s in SOURCES}
    spans = []
    for i, piece in enumerate(lane.pieces):
        src = piece.source if piece.source in SOURCES else TARGET
        tip = t("race.tip", lang, i=i + 1, source=words[src])
        spans.append(f'<span class="sv-race-tok sv-race-{src}" data-source="{src}" title="{esc(tip)}">'
                     f'{esc(token_display(text_of(piece.token_id)))}</span>')
    return f'<div class="sv-race-text" dir="auto">{"".join(spans)}</div>'


def _same_cell(reference: Lane | None, lane: Lane, lang: str) -> tuple[str, str]:
    """(text, data-same) of the last column: the reference says so, the others compare with it."""
    if lane.entrant == TARGET:
        return t("race.reference", lang), "reference"
    if reference is None:
        return "—", "unknown"
    v = verdict(reference, lane)
    return (t("race.same", lang), "yes") if v.same else (t("race.differs", lang, n=v.first_diff + 1), "no")


def _row(reference: Lane | None, lane: Lane, lang: str) -> str:
    base = reference.tokens_per_s if reference is not None else float("nan")
    speedup = lane.tokens_per_s / base if lane.entrant != TARGET and base > 0 else float("nan")
    same, flag = _same_cell(reference, lane, lang)
    lookup = pct(lane.share("ngram")) if lane.entrant in ("ngram", "hybrid") else "—"
    cells = [_num(lane.tau), pct(lane.acceptance), _num(lane.tokens_per_s, 1),
             f"{_num(speedup)}×" if math.isfinite(speedup) else "—", lookup, same]
    # Each cell carries its column's name: on a phone the rows become cards and say it beside the value
    # (a scrolling table hid the verdict column there, the fault a walk of the page found in the round table).
    return (f'<tr data-lane="{esc(lane.entrant)}" data-tau="{lane.tau:.4f}" data-tokens="{lane.tokens}" '
            f'data-same="{flag}"><th scope="row">{esc(lane_name(lane.entrant, lang))}</th>'
            + "".join(f'<td data-label="{esc(t(key, lang))}">{esc(c)}</td>' for key, c in zip(HEADS[1:], cells))
            + "</tr>")


def table_html(lanes: Sequence[Lane], lang: str = DEFAULT_LANG) -> str:
    """The figures of every lane that has run, side by side (on a phone, one card per lane)."""
    reference = next((lane for lane in lanes if lane.entrant == TARGET), None)
    head = "".join(f'<th scope="col">{esc(t(key, lang))}</th>' for key in HEADS)
    rows = "".join(_row(reference, lane, lang) for lane in lanes)
    return (f'<div class="sv-race-scroll" tabindex="0"><table class="sv-race-table"><thead><tr>{head}</tr></thead>'
            f'<tbody>{rows}</tbody></table></div>')


def race_html(lanes: Sequence[Lane], text_of: Callable[[int], str], lang: str = DEFAULT_LANG) -> str:
    """The whole race so far: the figures, the legend, then one card per lane that has run (in LANES order)."""
    if not lanes:
        return ""
    by_name = {lane.entrant: lane for lane in lanes}
    ordered = [by_name[name] for name in LANES if name in by_name]
    cards = "".join(f'<section class="sv-race-lane" data-lane="{esc(lane.entrant)}">'
                    f'<h4>{esc(lane_name(lane.entrant, lang))}</h4>{tokens_html(lane, text_of, lang)}</section>'
                    for lane in ordered)
    return (f'<div class="sv-race" data-lanes="{len(ordered)}" data-of="{len(LANES)}">{table_html(ordered, lang)}'
            f'<p class="sv-muted">{esc(t("race.figures_note", lang))}</p>{legend_html(lang)}'
            f'<div class="sv-race-lanes">{cards}</div></div>')


def done_message(lanes: Sequence[Lane], lang: str = DEFAULT_LANG) -> tuple[str, str]:
    """(sentence, status kind) once every lane has run: all equal to the target alone, or which ones differ."""
    reference = next(lane for lane in lanes if lane.entrant == TARGET)
    differ = [lane_name(lane.entrant, lang) for lane in lanes
              if lane.entrant in ENTRANTS and not verdict(reference, lane).same]
    if not differ:
        return t("race.done_same", lang, n=reference.tokens), "ok"
    return t("race.done_differs", lang, lanes=", ".join(differ)), "warn"


def race_css() -> str:
    """The race's styles: a colour per source, each with its own underline (read without colour too)."""
    c = SOURCE_COLOURS
    return f"""
.sv-race-scroll {{ overflow-x: auto; max-width: 100%; }}
.sv-race-table {{ border-collapse: collapse; font-size: 14px; font-variant-numeric: tabular-nums; }}
.sv-race-table th, .sv-race-table td {{ border-bottom: 1px solid #d0d7de; padding: 4px 8px; text-align: left; }}
.sv-race-table tr[data-same=no] td:last-child {{ color: #CC79A7; font-weight: 700; }}
.sv-race-lanes {{ display: grid; grid-template-columns: repeat(auto-fit, minmax(240px, 1fr)); gap: 10px; }}
.sv-race-lane {{ border: 1px solid #d0d7de; border-radius: 8px; padding: 8px 10px; background: #fff; color: #1f2328;
  min-width: 0; }}
.sv-race-lane h4 {{ margin: 0 0 6px 0; font-size: 14px; }}
.sv-race-text {{ font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 13px; white-space: pre-wrap;
  overflow-wrap: anywhere; line-height: 1.55; }}
.sv-race-tok {{ border-radius: 3px; text-decoration-thickness: 2px; text-underline-offset: 3px; }}
.sv-race-model {{ background: {c['model']}33; text-decoration: underline solid {c['model']}; }}
.sv-race-ngram {{ background: {c['ngram']}40; text-decoration: underline double {c['ngram']}; }}
.sv-race-target {{ color: {c['target']}; text-decoration: underline dotted {c['target']}; }}
.sv-race-legend .sv-race-tok {{ padding: 0 4px; margin-right: 6px; font-size: 13px; }}
@media (max-width: 640px) {{
  .sv-race .sv-race-table thead {{ display: none; }}
  .sv-race .sv-race-table, .sv-race .sv-race-table tbody {{ display: block; border: none; }}
  .sv-race .sv-race-table tr {{ display: flex; flex-wrap: wrap; gap: 2px 14px; border: 1px solid #d0d7de;
    border-radius: 6px; margin-bottom: 6px; padding: 4px 8px; }}
  .sv-race .sv-race-table th {{ flex-basis: 100%; }}
  .sv-race .sv-race-table th, .sv-race .sv-race-table td {{ display: block; border: none; padding: 0; background: none; }}
  .sv-race .sv-race-table td::before {{ content: attr(data-label) ": "; color: #57606a; }}
}}
"""

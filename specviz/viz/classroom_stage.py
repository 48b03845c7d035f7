"""The step mode's stage: one stop of a round drawn whole, a chain's and a draft tree's alike.

Pure HTML from a recorded `Round` and the walk of `specviz.classroom.steps`, which
reads a chain as a tree of one branch; no Gradio. The stage is a box with the stop's
place as data attributes, "where we are", the picture of the nodes with their states
so far, the stop's words (`classroom_words`), the page's note and the round's summary
(kept back in predict mode). A one-branch tree is drawn in a row (a chip per
position), a tree as a nested list (it indents little, so it fits a phone). Every
state is shown as a glyph and a word as well as a colour (✓ accepted, ✗ rejected,
· discarded, ↻ correction, ★ bonus, ? not yet tested, – never tried), the node under
the cursor is framed, and every string reaches markup through `esc`.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..classroom.steps import Stop, accepted_path, children, node_states, nodes, stops
from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .classroom_words import GLYPHS, body, state_word, summary
from .format import display_number, esc, round_drafter_text, token_display

_KIND_KEYS = {"draft": "cls.kind_draft", "verify": "cls.kind_verify", "test": "cls.kind_test", "node": "cls.kind_test",
              "tree": "ctree.kind_tree", "residual": "ctree.kind_residual", "correction": "cls.kind_correction",
              "bonus": "cls.kind_bonus"}


@dataclass(frozen=True)
class StageOptions:
    """How the page shows a stage, apart from what the round holds."""

    hidden: bool = False                 # predict mode, at a test whose u is not shown yet
    show_summary: bool = True            # False: the round's summary is kept back (a test of it not yet shown)
    note: str = ""                       # plain text the page adds (a re-drawn u); "" for none
    reject_chance: float | None = None   # the mass picture's rejection chance, said at a rejection (None: not said)


def _ending(rnd: Round, stop: Stop):
    """(the correction or the bonus, its state) once the walk has reached it, else None."""
    if stop.kind == "correction" and rnd.correction is not None:
        return rnd.correction, "correction"
    if stop.kind == "bonus" and rnd.bonus is not None:
        return rnd.bonus, "bonus"
    return None


# ---------------------------------------------------------------- a one-branch tree: a row of chips
def _chip(text: str, state: str, pos: int | None, current: bool, lang: str, extra: str = "") -> str:
    cls = "sv-cls-chip sv-cls-current" if current else "sv-cls-chip"
    data = "" if pos is None else f' data-pos="{pos + 1}"'
    return (f'<span class="{cls}" data-state="{esc(state)}"{data}>'
            f'<span class="sv-cls-glyph" aria-hidden="true">{GLYPHS[state]}</span>'
            f'<span class="sv-tok sv-{esc(state)}">{esc(token_display(text, True))}</span>'
            f'<span class="sv-sr"> {esc(state_word(state, lang))}</span>{extra}</span>')


def _row_html(rnd: Round, stop: Stop, states: list[str], lang: str) -> str:
    """The branch's tokens in a row with q (and p once verified), then the correction or bonus once reached."""
    chips = []
    for i, node in enumerate(nodes(rnd)):
        nums = f'<span class="sv-cls-num">q {esc(display_number(node.q, 2))}</span>'
        if stop.kind != "draft":
            nums += f'<span class="sv-cls-num">p {esc(display_number(node.p, 2))}</span>'
        chips.append(_chip(node.text, states[i], i, stop.kind == "test" and stop.pos == i, lang, nums))
    end = _ending(rnd, stop)
    if end is not None:
        chips.append(_chip(end[0].text, end[1], None, True, lang))
    return f'<div class="sv-cls-strip">{"".join(chips)}</div>'


# ---------------------------------------------------------------- a tree: a nested list
def _node_html(text: str, state: str, current: bool, lang: str, i: int | None = None, nums: str = "") -> str:
    """A node of the list (`i` its index, None for the correction or bonus hung below the path)."""
    cls = "sv-ctree-node sv-cls-current" if current else "sv-ctree-node"
    data = "" if i is None else f' data-node="{i + 1}"'
    tail = f' <span class="sv-cls-num">{esc(nums)}</span>' if nums else ""
    return (f'<span class="{cls}"{data} data-state="{esc(state)}">'
            f'<span class="sv-cls-glyph" aria-hidden="true">{GLYPHS[state]}</span> '
            f'<span class="sv-tok">{esc(token_display(text, True))}</span>'
            f'<span class="sv-sr"> {esc(state_word(state, lang))}</span>{tail}</span>')


def _subtree(rnd: Round, parent: int, stop: Stop, states: list[str], end_at: int, lang: str) -> str:
    tree = nodes(rnd)
    items = []
    for i in children(tree, parent):
        nums = f"q {display_number(tree[i].q, 2)} · p {display_number(tree[i].p, 2)}"
        here = stop.kind in ("node", "residual") and stop.pos == i
        items.append(f'<li>{_node_html(tree[i].text, states[i], here, lang, i, nums)}'
                     f'{_subtree(rnd, i, stop, states, end_at, lang)}</li>')
    if parent == end_at:   # the correction or the bonus, hung where the walk stopped
        end = _ending(rnd, stop)
        items.append("" if end is None else f'<li>{_node_html(end[0].text, end[1], True, lang)}</li>')
    return f'<ul>{"".join(items)}</ul>' if any(items) else ""


def _tree_html(rnd: Round, stop: Stop, states: list[str], lang: str) -> str:
    path = accepted_path(rnd)
    root = f'<span class="sv-ctree-root">{esc(t("ctree.root", lang))}</span>'
    return (f'<div class="sv-ctree" role="group" aria-label="{esc(t("ctree.label", lang))}">{root}'
            f'{_subtree(rnd, -1, stop, states, path[-1] if path else -1, lang)}</div>')


def picture_html(rnd: Round, stop: Stop, lang: str = DEFAULT_LANG, revealed: bool = True) -> str:
    """Every node with its state as far as the walk has got, the one under the cursor framed: a one-branch tree
    (a chain) in a row, a tree as a nested list."""
    states = node_states(rnd, stop, revealed)
    return _tree_html(rnd, stop, states, lang) if rnd.tree else _row_html(rnd, stop, states, lang)


# ---------------------------------------------------------------- the stage
def _drafter_html(rnd: Round, lang: str) -> str:
    """Who drafted a chain round of a run that mixes drafters (prompt lookup or the draft model); "" otherwise."""
    if rnd.tree or getattr(rnd, "drafter", "model") in ("model", "tree"):
        return ""
    source = "ngram" if any(getattr(tk, "source", "") == "ngram" for tk in rnd.drafted) else "model"
    return f'<p class="sv-cls-drafter" data-source="{source}">{esc(round_drafter_text(rnd, lang))}</p>'


def stage_html(rnd: Round, n_rounds: int, stop_index: int, greedy: bool, options: StageOptions | None = None,
               lang: str = DEFAULT_LANG) -> str:
    """The whole stage of one stop (`stop_index` clamped to the round's stops): where we are, the nodes so far,
    the explanation, who drafted, the note and the round's summary."""
    opts = options or StageOptions()
    all_stops = stops(rnd)
    stop = all_stops[max(0, min(stop_index, len(all_stops) - 1))]
    head = t("cls.where", lang, round=rnd.index + 1, rounds=n_rounds, stop=stop_index + 1, stops=len(all_stops),
             kind=t(_KIND_KEYS[stop.kind], lang))
    summ = summary(rnd, lang) if opts.show_summary else t("cls.sum_hidden", lang)
    note = f'<p class="sv-cls-note" role="note">{esc(opts.note)}</p>' if opts.note else ""
    box, attr = ("sv-cls-stage-box sv-ctree-stage", "node") if rnd.tree else ("sv-cls-stage-box", "pos")
    return (f'<div class="{esc(box)}" data-round="{rnd.index + 1}" data-stop="{stop_index + 1}" '
            f'data-kind="{esc(stop.kind)}" data-{attr}="{"" if stop.pos is None else stop.pos + 1}">'
            f'<div class="sv-cls-where">{esc(head)}</div>{picture_html(rnd, stop, lang, not opts.hidden)}'
            f'<div class="sv-cls-body">{body(rnd, stop, greedy, opts.hidden, lang, opts.reject_chance)}</div>'
            f'{_drafter_html(rnd, lang)}{note}'
            f'<p class="sv-cls-summary" role="status" aria-live="polite">{esc(summ)}</p></div>')


def empty_stage_html(lang: str = DEFAULT_LANG) -> str:
    return f'<div class="sv-cls-stage-box sv-muted" data-kind="empty">{esc(t("cls.empty", lang))}</div>'


def score_html(right: int, total: int, lang: str = DEFAULT_LANG, last: bool | None = None) -> str:
    verdict = "" if last is None else (
        f'<span class="sv-cls-last" data-right="{str(last).lower()}">'
        f'{"✓" if last else "✗"} {esc(t("cls.predict_right" if last else "cls.predict_wrong", lang))}</span> ')
    return (f'<div class="sv-cls-score" data-right="{right}" data-total="{total}">{verdict}'
            f'{esc(t("cls.score", lang, right=right, total=total))}</div>')

"""The step mode's stage for a draft tree: the tree with the walk so far, the words, the residual.

Pure HTML from a recorded `Round` with a `tree` and the stop logic of
`specviz.classroom.steps` / `tree_steps`; no Gradio. The tree is a nested list
(it indents little, so it fits a phone); every node carries a glyph and a word
as well as a colour (✓ accepted, ✗ rejected, ? not tested yet, – never tried),
the node under the cursor is framed, and every string reaches markup through
`esc`. The residual's bars are the chain's mass picture (`classroom.mass_figure`),
drawn by the tab beside this stage.
"""
from __future__ import annotations

from ..classroom.steps import Stop, children, node_decision, tree_order
from ..classroom.tree_steps import Change, accepted_path, changes, last_rejected, level, node_states, sibling_rank
from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .classroom import GLYPHS, numbers, quote, state_word, ubar_html
from .classroom_stage import StageOptions, StageParts, stage_frame
from .format import display_number, esc, rich, token_display

TREE_GLYPHS = {**GLYPHS, "untried": "–"}
_KIND_KEYS = {"tree": "ctree.kind_tree", "node": "cls.kind_test", "residual": "ctree.kind_residual",
              "correction": "cls.kind_correction", "bonus": "cls.kind_bonus"}


def _word(state: str, lang: str) -> str:
    return t("tree.status_untried", lang) if state == "untried" else state_word(state, lang)


# ---------------------------------------------------------------- the tree
def _node_html(rnd: Round, i: int, state: str, current: bool, lang: str) -> str:
    node = rnd.tree[i]
    cls = "sv-ctree-node sv-cls-current" if current else "sv-ctree-node"
    nums = f"q {display_number(node.q, 2)} · p {display_number(node.p, 2)}"
    return (f'<span class="{cls}" data-node="{i + 1}" data-state="{esc(state)}">'
            f'<span class="sv-cls-glyph" aria-hidden="true">{TREE_GLYPHS[state]}</span> '
            f'<span class="sv-tok">{esc(token_display(node.text, True))}</span>'
            f'<span class="sv-sr"> {esc(_word(state, lang))}</span> '
            f'<span class="sv-cls-num">{esc(nums)}</span></span>')


def _ending_html(rnd: Round, stop: Stop, lang: str) -> str:
    """The correction or bonus, hung where the walk stopped, once the walk has reached it."""
    if stop.kind == "correction" and rnd.correction is not None:
        c, state = rnd.correction, "correction"
    elif stop.kind == "bonus" and rnd.bonus is not None:
        c, state = rnd.bonus, "bonus"
    else:
        return ""
    return (f'<li><span class="sv-ctree-node sv-cls-current" data-state="{state}">'
            f'<span class="sv-cls-glyph" aria-hidden="true">{TREE_GLYPHS[state]}</span> '
            f'<span class="sv-tok">{esc(token_display(c.text, True))}</span>'
            f'<span class="sv-sr"> {esc(state_word(state, lang))}</span></span></li>')


def _subtree(rnd: Round, parent: int, stop: Stop, states: list[str], end_at: int, lang: str) -> str:
    items = [f'<li>{_node_html(rnd, i, states[i], stop.kind in ("node", "residual") and stop.pos == i, lang)}'
             f'{_subtree(rnd, i, stop, states, end_at, lang)}</li>' for i in children(rnd.tree, parent)]
    if parent == end_at:
        items.append(_ending_html(rnd, stop, lang))
    return f'<ul>{"".join(items)}</ul>' if any(items) else ""


def tree_picture_html(rnd: Round, stop: Stop, lang: str = DEFAULT_LANG, revealed: bool = True) -> str:
    """The whole tree, each node's state as far as the walk has got, the node under the cursor framed."""
    states = node_states(rnd, stop, revealed)
    path = accepted_path(rnd)
    end_at = path[-1] if path else -1
    root = f'<span class="sv-ctree-root">{esc(t("ctree.root", lang))}</span>'
    return (f'<div class="sv-ctree" role="group" aria-label="{esc(t("ctree.label", lang))}">{root}'
            f'{_subtree(rnd, -1, stop, states, end_at, lang)}</div>')


# ---------------------------------------------------------------- the words at each stop
def node_formula(rnd: Round, i: int, lang: str, hidden: bool = False) -> str:
    """`a = min(1, r/q) = min(1, 0.076/0.093) = 0.819; u = 0.310 < 0.819 → accepted` (plain text)."""
    d = node_decision(rnd.tree[i])
    n = numbers(d, hidden)
    if hidden:
        return t("ctree.formula_hidden", lang, r=n.p, q=n.q, a=n.a)
    return t("ctree.formula", lang, r=n.p, q=n.q, a=n.a, u=n.u,
             rel="<" if d.accepted else "≥", verdict=state_word("accepted" if d.accepted else "rejected", lang))


def _against(rnd: Round, i: int, lang: str) -> str:
    rank = sibling_rank(rnd, i)
    return t("ctree.against_p", lang) if rank == 1 else t("ctree.against_r", lang, n=rank - 1)


def _then(rnd: Round, i: int, lang: str) -> str:
    """What the verdict at node i leads to: down to its children, the bonus, the next sibling, the correction."""
    node = rnd.tree[i]
    if node.status == "accepted":
        kids = children(rnd.tree, i)
        if kids:
            return t("ctree.then_down", lang, n=len(kids))
        return t("ctree.then_leaf" if rnd.bonus is not None else "ctree.then_accepted", lang)
    order = tree_order(rnd.tree)
    after = order[order.index(i) + 1:]
    sibling = next((j for j in after if rnd.tree[j].parent == node.parent), None)
    if sibling is not None:
        return t("ctree.then_sibling", lang, token=quote(rnd.tree[sibling].text))
    return t("ctree.then_correction", lang)


def _node_body(rnd: Round, i: int, greedy: bool, hidden: bool, lang: str) -> str:
    node = rnd.tree[i]
    kids = children(rnd.tree, node.parent)
    head = rich("ctree.node_text", lang, depth=level(rnd, i), rank=sibling_rank(rnd, i), n=len(kids),
                token=quote(node.text), against=_against(rnd, i, lang))
    then = "" if hidden else f'<p class="sv-ctree-then">{esc(_then(rnd, i, lang))}</p>'
    note = f'<p class="sv-muted">{esc(t("ctree.greedy_note", lang))}</p>' if greedy else ""
    return (f'<p>{head}</p><p class="sv-cls-formula" data-node="{i + 1}">{esc(node_formula(rnd, i, lang, hidden))}</p>'
            f'{ubar_html(node_decision(node), lang, hidden)}{then}{note}')


def _probability(x: float | None, lang: str) -> str:
    """A probability of the changes list; one outside the recorded top tokens said in words (a dash read as 0)."""
    return t("ctree.not_recorded", lang) if x is None else display_number(x)


def changes_html(rows: list[Change], lang: str = DEFAULT_LANG) -> str:
    """The probabilities a rejection moved, before → after, the changed ones marked."""
    items = []
    for c in rows:
        mark = "sv-ctree-changed" if c.changed else "sv-ctree-same"
        line = t("ctree.change", lang, token=quote(c.text), before=_probability(c.before, lang),
                 after=_probability(c.after, lang))
        items.append(f'<li class="{mark}" data-token="{c.token_id}">{esc(line)}</li>')
    return f'<ul class="sv-ctree-changes">{"".join(items)}</ul>'


def _residual_body(rnd: Round, i: int, greedy: bool, lang: str, reject_chance: float | None) -> str:
    node = rnd.tree[i]
    nxt = tree_order(rnd.tree)[tree_order(rnd.tree).index(i) + 1]
    text = rich("ctree.residual_text", lang, token=quote(node.text), next=quote(rnd.tree[nxt].text))
    miss = display_number(1.0 - node_decision(node).a)   # this candidate's own chance, beside a fresh draw's
    chance = "" if reject_chance is None else (
        f'<p class="sv-cls-chance" data-reject="{esc(display_number(reject_chance))}">'
        f'{esc(t("ctree.reject_chance", lang, reject=display_number(reject_chance), miss=miss))}</p>')
    note = esc(t("ctree.residual_greedy" if greedy else "ctree.see_mass", lang))
    return (f'<p>{text}</p><p>{esc(t("ctree.changed", lang))}</p>{changes_html(changes(rnd, i), lang)}'
            f'{chance}<p class="sv-muted">{note}</p>')


def _ending_body(rnd: Round, kind: str, greedy: bool, lang: str) -> str:
    if kind == "correction":
        last = last_rejected(rnd)
        depth = level(rnd, last) if last is not None else 1
        c = rnd.correction
        note = esc(t("cls.correction_greedy" if greedy else "cls.see_mass", lang))
        return (f'<p>{rich("ctree.correction_text", lang, depth=depth, token=quote(c.text), r=display_number(c.prob))}'
                f'</p><p class="sv-muted">{note}</p>')
    path = accepted_path(rnd)
    b = rnd.bonus
    return f'<p>{rich("ctree.bonus_text", lang, n=len(path), token=quote(b.text), p=display_number(b.prob))}</p>'


def _body(rnd: Round, stop: Stop, greedy: bool, hidden: bool, lang: str, reject_chance: float | None) -> str:
    if stop.kind == "tree":
        depth = max(level(rnd, i) for i in range(len(rnd.tree)))
        return f'<p>{rich("ctree.tree_text", lang, n=len(rnd.tree), depth=depth)}</p>'
    if stop.kind == "node":
        return _node_body(rnd, stop.pos, greedy, hidden, lang)
    if stop.kind == "residual":
        return _residual_body(rnd, stop.pos, greedy, lang, reject_chance)
    return _ending_body(rnd, stop.kind, greedy, lang)


def tree_summary(rnd: Round, lang: str = DEFAULT_LANG) -> str:
    """One plain line: the accepted path, how many nodes were tried, and how the round ended."""
    path = accepted_path(rnd)
    words = " ".join(quote(rnd.tree[i].text) for i in path) or "—"
    parts = [t("ctree.sum_path", lang, n=len(path), tokens=words, tried=len(tree_order(rnd.tree)), total=len(rnd.tree))]
    wins = [i for i in path if sibling_rank(rnd, i) > 1]
    if wins:
        parts.append(t("ctree.sum_wins", lang, n=len(wins)))
    if rnd.correction is not None:
        parts.append(t("cls.sum_correction", lang, token=quote(rnd.correction.text)))
    elif rnd.bonus is not None:
        parts.append(t("cls.sum_bonus", lang, token=quote(rnd.bonus.text)))
    return "; ".join(parts)


def tree_stage_html(rnd: Round, n_rounds: int, stop_index: int, greedy: bool, options: StageOptions | None = None,
                    lang: str = DEFAULT_LANG) -> str:
    """The whole stage of one stop of a tree round, in the frame the chain's stage shares
    (`classroom_stage.stage_frame`): the tree in the place of the chain's strip, the node in the place of its
    position."""
    opts = options or StageOptions()

    def parts(stop: Stop) -> StageParts:
        return StageParts(_KIND_KEYS[stop.kind], tree_picture_html(rnd, stop, lang, not opts.hidden),
                          _body(rnd, stop, greedy, opts.hidden, lang, opts.reject_chance), tree_summary(rnd, lang),
                          box_class="sv-ctree-stage", pos_attr="node")

    return stage_frame(rnd, n_rounds, stop_index, opts, parts, lang)


def classroom_tree_css() -> str:
    """The tree's own styles: little indentation, wrapping nodes, a scroll inside the box rather than the page."""
    return """
.sv-ctree { overflow-x: auto; max-width: 100%; margin-bottom: 8px; font-family: ui-monospace, Menlo, Consolas, monospace; }
.sv-ctree ul { list-style: none; margin: 0; padding-left: 1.1em; border-left: 1px dotted #8c959f; }
.sv-ctree li { margin: 3px 0; }
.sv-ctree-root { color: #57606a; font-size: 0.9em; }
.sv-ctree-node { display: inline-flex; flex-wrap: wrap; align-items: baseline; gap: 2px 6px; border: 1px solid #d0d7de;
  border-radius: 6px; padding: 2px 6px; max-width: 100%; overflow-wrap: anywhere; }
.sv-ctree-node.sv-cls-current { border: 2px solid #000; box-shadow: 0 0 0 2px #ffd33d; }
.sv-ctree-node[data-state=accepted] { font-weight: 700; }
.sv-ctree-node[data-state=accepted] .sv-cls-glyph { color: #1a7f37; }
.sv-ctree-node[data-state=rejected] .sv-tok { text-decoration: line-through; }
.sv-ctree-node[data-state=rejected] .sv-cls-glyph { color: #cf222e; }
.sv-ctree-node[data-state=untried] { opacity: 0.55; }
.sv-ctree-changes { margin: 4px 0; padding-left: 1.2em; font-variant-numeric: tabular-nums; }
.sv-ctree-changes .sv-ctree-changed { font-weight: 700; }
.sv-ctree-changes .sv-ctree-same { color: #57606a; }
"""

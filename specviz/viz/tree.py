"""A tree round drawn as a tree: nested lists, one node per drafted token.

Each node shows its token, q, p, and u against a (the acceptance probability
against the residual its earlier siblings left). The accepted path is bold,
rejected nodes are struck, never-tested nodes (the subtrees of rejected or
unreached nodes) are faded, and the correction or bonus hangs where the walk
stopped. Pure HTML from a `Round`; every text is escaped; nested lists indent
little, so a deep tree still fits a phone's width, and a wider one scrolls inside
its card, never the page (assets/specviz.css). Each item carries its node's
status too (`sv-tl-*`), so the accepted path's guide line is drawn green and a
rejected node's subtree dashed; each node takes keyboard focus for its details.
"""
from __future__ import annotations

import math

from ..strings import DEFAULT_LANG, t
from ..trace.records import DraftToken, Round
from .format import display_number, esc, token_display


_STATUS_KEYS = {"accepted": "tree.status_accepted", "rejected": "tree.status_rejected",
                "untried": "tree.status_untried"}


def _numbers(node: DraftToken, lang: str) -> str:
    if node.status == "untried":
        return f'<span class="sv-tree-nums">{esc(t("tree.untried", lang))}</span>'
    rel = "?" if math.isnan(node.u) or math.isnan(node.accept_prob) else ("<" if node.u < node.accept_prob else "≥")
    text = t("tree.numbers", lang, q=display_number(node.q, 2), p=display_number(node.p, 2),
             u=display_number(node.u, 2), rel=rel, a=display_number(node.accept_prob, 2))
    return f'<span class="sv-tree-nums">{esc(text)}</span>'


def _node(node: DraftToken, index: int, lang: str) -> str:
    if node.status == "untried":   # its a and u were never used: show only what the two models said
        tip = t("tree.tip_untried", lang, q=display_number(node.q), p=display_number(node.p))
    else:
        tip = t("tree.tip", lang, q=display_number(node.q), p=display_number(node.p),
                a=display_number(node.accept_prob), u=display_number(node.u), status=t(_STATUS_KEYS[node.status], lang))
    return (f'<span class="sv-tree-node sv-tn-{esc(node.status)}" data-node="{index}" tabindex="0" '
            f'data-tip="{esc(tip)}">{esc(token_display(node.text, True))}</span> {_numbers(node, lang)}')


def _ending(rnd: Round, lang: str) -> str:
    """The correction (after every child of the last node was rejected) or the bonus (after a leaf), as a leaf."""
    if rnd.correction is not None:
        c, cls, key = rnd.correction, "sv-correction", "tree.correction"
    elif rnd.bonus is not None:
        c, cls, key = rnd.bonus, "sv-bonus", "tree.bonus"
    else:
        return ""
    return (f'<li class="sv-tree-end"><span class="sv-tok {cls}">{esc(token_display(c.text, True))}</span> '
            f'<span class="sv-tree-nums">{esc(t(key, lang, prob=display_number(c.prob, 2)))}</span></li>')


def _subtree(rnd: Round, parent: int, children: dict[int, list[int]], stop: int, lang: str) -> str:
    items = [f'<li class="sv-tl-{esc(rnd.tree[i].status)}">{_node(rnd.tree[i], i, lang)}'
             f'{_subtree(rnd, i, children, stop, lang)}</li>' for i in children.get(parent, [])]
    if parent == stop:
        items.append(_ending(rnd, lang))
    return f'<ul>{"".join(items)}</ul>' if any(items) else ""


def tree_html(rnd: Round, lang: str = DEFAULT_LANG) -> str:
    """The round's draft tree as nested lists ("" for a chain round)."""
    if not rnd.tree:
        return ""
    children: dict[int, list[int]] = {}
    for i, node in enumerate(rnd.tree):
        children.setdefault(node.parent, []).append(i)
    path = [i for i, node in enumerate(rnd.tree) if node.status == "accepted"]
    stop = path[-1] if path else -1
    caption = t("tree.caption", lang, n=len(rnd.tree), accepted=len(path))
    root = f'<span class="sv-tree-node sv-tree-start">{esc(t("tree.root", lang))}</span>'
    return (f'<div class="sv-tree" data-nodes="{len(rnd.tree)}"><div class="sv-tree-caption">{esc(caption)}</div>'
            f'<ul class="sv-tree-top"><li>{root}{_subtree(rnd, -1, children, stop, lang)}</li></ul></div>')

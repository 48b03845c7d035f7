"""The step mode's words and numbers at each stop: the formula, the u-bar, the explanation, the round's summary.

Pure HTML and plain text from a recorded `Round` and the walk of
`specviz.classroom.steps` (a chain read as a tree of one branch); no Gradio. A
chain and a tree go through the same functions: a chain's test names its position
and says p, a tree's names its node and says r (the residual it was tested
against); only a tree has residual stops. Every string reaches markup through
`esc` or `rich`.
"""
from __future__ import annotations

from ..classroom.decisions import Decision, decision
from ..classroom.masses import Change, changes
from ..classroom.steps import Stop, accepted_path, children, last_rejected, level, nodes, sibling_rank, tree_order
from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .format import MARKERS, RatioShown, display_number, esc, ratio_shown, rich, token_display

GLYPHS = {**MARKERS, "pending": "?", "untried": "–"}
_STATE_KEYS = {"accepted": "verdict.accepted", "rejected": "verdict.rejected", "discarded": "verdict.discarded",
               "correction": "cls.state_correction", "bonus": "cls.state_bonus", "pending": "cls.state_pending",
               "untried": "tree.status_untried"}


def quote(text: str) -> str:
    """A token quoted in prose, blanks made visible (unescaped: callers escape)."""
    return repr(token_display(text, True))


def state_word(state: str, lang: str = DEFAULT_LANG) -> str:
    return t(_STATE_KEYS[state], lang)


# The words a chain and a tree say differently: a chain names a position and says p, a tree names a node and says r
# (the residual it was tested against). Keyed by `shape`.
WORDS = {
    "cls": {"formula": "cls.formula", "formula_hidden": "cls.formula_hidden", "greedy_note": "cls.greedy_note",
            "correction_text": "cls.correction_text", "bonus_text": "cls.bonus_text", "mass_title": "cls.mass_title",
            "mass_top": "cls.mass_top"},
    "ctree": {"formula": "ctree.formula", "formula_hidden": "ctree.formula_hidden", "greedy_note": "ctree.greedy_note",
              "correction_text": "ctree.correction_text", "bonus_text": "ctree.bonus_text",
              "mass_title": "ctree.mass_title", "mass_top": "ctree.mass_top"},
}


def shape(rnd: Round) -> str:
    """Which of `WORDS` a round speaks: "ctree" for a tree, "cls" for a chain (a tree of one branch)."""
    return "ctree" if rnd.tree else "cls"


# ---------------------------------------------------------------- a test: its formula and u-bar
def numbers(test: Decision, hidden: bool = False) -> RatioShown:
    """The test's p, q, a (and u unless hidden) as its formula and u-bar show them: the line checks out by hand."""
    return ratio_shown(test.p, test.q, test.a, None if hidden else test.u)


def formula(test: Decision, lang: str = DEFAULT_LANG, hidden: bool = False, words: str = "cls") -> str:
    """`a = min(1, p/q) = min(1, 0.310/0.440) = 0.705; u = 0.620 < 0.705 → accepted` (plain text); a tree's
    (`words` "ctree") says r for what it was tested against."""
    n = numbers(test, hidden)
    if hidden:
        return t(WORDS[words]["formula_hidden"], lang, p=n.p, r=n.p, q=n.q, a=n.a)
    return t(WORDS[words]["formula"], lang, p=n.p, r=n.p, q=n.q, a=n.a, u=n.u, rel="<" if test.accepted else "≥",
             verdict=state_word("accepted" if test.accepted else "rejected", lang))


def ubar_html(test: Decision, lang: str = DEFAULT_LANG, hidden: bool = False) -> str:
    """A unit bar split at a (left of the split = accept), with u marked once revealed; a and u as the formula
    writes them."""
    a = max(0.0, min(1.0, test.a)) * 100
    n = numbers(test, hidden)
    label = t("cls.ubar_label_hidden" if hidden else "cls.ubar_label", lang, a=n.a, u=n.u,
              verdict=state_word("accepted" if test.accepted else "rejected", lang))
    mark = "" if hidden else (
        f'<span class="sv-ubar-u" style="left:{max(0.0, min(1.0, test.u)) * 100:.1f}%">'
        f'<span class="sv-ubar-ulabel">u = {esc(n.u)}</span></span>')
    return (f'<div class="sv-ubar-wrap"><div class="sv-ubar" role="img" aria-label="{esc(label)}" '
            f'data-a="{esc(n.a)}" data-u="{esc(n.u)}">'
            f'<span class="sv-ubar-acc" style="width:{a:.1f}%"><span>{esc(t("cls.ubar_accept", lang))}</span></span>'
            f'<span class="sv-ubar-rej" style="width:{100 - a:.1f}%"><span>{esc(t("cls.ubar_reject", lang))}</span></span>'
            f'{mark}</div><div class="sv-ubar-scale"><span>0</span>'
            f'<span style="left:{a:.1f}%">a = {esc(n.a)}</span><span class="sv-ubar-one">1</span></div></div>')


def _then(rnd: Round, i: int, lang: str) -> str:
    """What a tree's verdict at node i leads to: down to its children, the bonus, the next sibling, the correction."""
    tree = nodes(rnd)
    node = tree[i]
    if node.status == "accepted":
        kids = children(tree, i)
        if kids:
            return t("ctree.then_down", lang, n=len(kids))
        return t("ctree.then_leaf" if rnd.bonus is not None else "ctree.then_accepted", lang)
    order = tree_order(tree)
    sibling = next((j for j in order[order.index(i) + 1:] if tree[j].parent == node.parent), None)
    if sibling is not None:
        return t("ctree.then_sibling", lang, token=quote(tree[sibling].text))
    return t("ctree.then_correction", lang)


def _test_body(rnd: Round, i: int, greedy: bool, hidden: bool, lang: str) -> str:
    """A node's test: which node and what it is tested against, the formula, the u-bar; on a tree, where the
    verdict leads (once u is shown)."""
    tree, words = nodes(rnd), shape(rnd)
    node, test = tree[i], decision(tree[i])
    if rnd.tree:
        rank = sibling_rank(rnd, i)
        against = t("ctree.against_p", lang) if rank == 1 else t("ctree.against_r", lang, n=rank - 1)
        head = rich("ctree.node_text", lang, depth=level(rnd, i), rank=rank, n=len(children(tree, node.parent)),
                    token=quote(node.text), against=against)
    else:
        head = rich("cls.test_text", lang, pos=i + 1, token=quote(node.text))
    attr = "node" if rnd.tree else "pos"
    then = "" if hidden or not rnd.tree else f'<p class="sv-ctree-then">{esc(_then(rnd, i, lang))}</p>'
    note = f'<p class="sv-muted">{esc(t(WORDS[words]["greedy_note"], lang))}</p>' if greedy else ""
    return (f'<p>{head}</p><p class="sv-cls-formula" data-{attr}="{i + 1}">'
            f'{esc(formula(test, lang, hidden, words))}</p>{ubar_html(test, lang, hidden)}{then}{note}')


# ---------------------------------------------------------------- a rejection: what is left, the correction
def _chance(key: str, reject_chance: float | None, miss: float, lang: str) -> str:
    """The rejection chance the mass picture shows (its `Mass.reject_chance`, passed in: one source for both) beside
    this node's own 1 − a, so the two numbers are never mistaken for each other."""
    if reject_chance is None:
        return ""
    line = t(key, lang, reject=display_number(reject_chance), miss=display_number(miss))
    return f'<p class="sv-cls-chance" data-reject="{esc(display_number(reject_chance))}">{esc(line)}</p>'


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
    """After a rejected node with a next sibling: the residual that sibling faces, and what the rejection moved."""
    tree = nodes(rnd)
    order = tree_order(tree)
    text = rich("ctree.residual_text", lang, token=quote(tree[i].text), next=quote(tree[order[order.index(i) + 1]].text))
    chance = _chance("ctree.reject_chance", reject_chance, 1.0 - decision(tree[i]).a, lang)
    note = esc(t("ctree.residual_greedy" if greedy else "ctree.see_mass", lang))
    return (f'<p>{text}</p><p>{esc(t("ctree.changed", lang))}</p>{changes_html(changes(rnd, i), lang)}'
            f'{chance}<p class="sv-muted">{note}</p>')


def _ending_body(rnd: Round, kind: str, greedy: bool, lang: str, reject_chance: float | None) -> str:
    """The correction at the depth of the last rejection, or the bonus after the accepted path. A chain says the
    rejection chance here; a tree said it at the residual stop of each rejection before."""
    words = WORDS[shape(rnd)]
    if kind == "correction":
        last = last_rejected(rnd)
        depth = level(rnd, last) if last is not None else 1
        c = rnd.correction
        text = rich(words["correction_text"], lang, pos=depth, depth=depth, token=quote(c.text),
                    r=display_number(c.prob))
        chance = "" if rnd.tree or last is None else \
            _chance("cls.correction_chance", reject_chance, 1.0 - decision(nodes(rnd)[last]).a, lang)
        note = esc(t("cls.correction_greedy" if greedy else "cls.see_mass", lang))
        return f'<p>{text}</p>{chance}<p class="sv-muted">{note}</p>'
    b = rnd.bonus
    text = rich(words["bonus_text"], lang, n=len(accepted_path(rnd)), k=rnd.k, pos=rnd.k + 1, token=quote(b.text),
                p=display_number(b.prob))
    return f'<p>{text}</p>'


def body(rnd: Round, stop: Stop, greedy: bool, hidden: bool, lang: str, reject_chance: float | None = None) -> str:
    """The explanation of one stop: words, and at a test the formula and the u-bar."""
    k = rnd.k
    if stop.kind == "draft":
        lookup = k > 0 and all(getattr(tk, "source", "model") == "ngram" for tk in rnd.drafted)
        return f'<p>{rich("cls.draft_lookup_text" if lookup else "cls.draft_text", lang, k=k)}</p>'
    if stop.kind == "verify":
        return f'<p>{rich("cls.verify_text", lang, k=k, n=k + 1)}</p>'
    if stop.kind == "tree":
        depth = max(level(rnd, i) for i in range(len(rnd.tree)))
        return f'<p>{rich("ctree.tree_text", lang, n=len(rnd.tree), depth=depth)}</p>'
    if stop.kind in ("test", "node"):
        return _test_body(rnd, stop.pos, greedy, hidden, lang)
    if stop.kind == "residual":
        return _residual_body(rnd, stop.pos, greedy, lang, reject_chance)
    return _ending_body(rnd, stop.kind, greedy, lang, reject_chance)


# ---------------------------------------------------------------- the round in one line
def summary(rnd: Round, lang: str = DEFAULT_LANG) -> str:
    """One plain-language line per round, for a screen reader as much as for the eye: how many drafts were kept
    (a tree: the accepted path, how many nodes were tried, how many later children won), and how it ended."""
    if rnd.tree:
        path = accepted_path(rnd)
        words = " ".join(quote(rnd.tree[i].text) for i in path) or "—"
        parts = [t("ctree.sum_path", lang, n=len(path), tokens=words, tried=len(tree_order(rnd.tree)),
                   total=len(rnd.tree))]
        wins = [i for i in path if sibling_rank(rnd, i) > 1]
        if wins:
            parts.append(t("ctree.sum_wins", lang, n=len(wins)))
    else:
        parts = [t("cls.sum_accepted", lang, n=rnd.n_accepted, k=rnd.k) if rnd.drafted else t("cls.sum_no_draft", lang)]
        if rnd.rejected_at is not None:
            tk = rnd.drafted[rnd.rejected_at]
            parts.append(t("cls.sum_rejected", lang, token=quote(tk.text), p=display_number(tk.p, 2),
                           q=display_number(tk.q, 2)))
    if rnd.correction is not None:
        parts.append(t("cls.sum_correction", lang, token=quote(rnd.correction.text)))
    elif rnd.bonus is not None:
        parts.append(t("cls.sum_bonus", lang, token=quote(rnd.bonus.text)))
    return "; ".join(parts)

"""A tree round drawn as a tree (specviz.viz.tree), on a hand-made round where the second branch wins:
what each node shows, where the correction hangs, the classes the page styles (bold path, struck, faded), escaping
of a hostile token, and both languages."""
from __future__ import annotations

from html.parser import HTMLParser

import pytest

from specviz.strings import t
from specviz.trace.records import Choice, DraftToken, Round
from specviz.viz.cards import round_card_html
from specviz.viz.tree import tree_html

HOSTILE = "<script>alert(1)</script>"


def node(text, parent, status, q=0.5, p=0.25, a=0.5, u=0.25) -> DraftToken:
    return DraftToken(token_id=len(text), text=text, parent=parent, q=q, p=p, accept_prob=a, u=u, status=status)


def second_branch_wins() -> Round:
    """The root's first child is rejected, its second accepted; both children of that one are rejected, so the
    round ends with a correction under it. The rejected first child's own child was never tested."""
    tree = [node(" dog", -1, "rejected", a=0.4, u=0.9), node(HOSTILE, -1, "accepted", a=0.8, u=0.1),
            node(" ran", 0, "untried", a=0.0), node(" sat", 1, "rejected", a=0.3, u=0.6),
            node('"&amp;"', 1, "rejected", a=0.2, u=0.7)]
    drafted = [DraftToken(token_id=n.token_id, text=n.text, q=n.q, p=n.p, accept_prob=n.accept_prob, u=n.u,
                          accepted=n.status == "accepted", q_confidence=n.q, p_confidence=n.p)
               for n in (tree[1], tree[3])]
    return Round(index=0, drafted=drafted, rejected_at=1, correction=Choice(7, " <b>mat</b>", 0.6), bonus=None,
                 emitted=[len(HOSTILE), 7], draft_seconds=0.01, verify_seconds=0.02, drafter="tree", tree=tree)


class Nodes(HTMLParser):
    """Every drawn node (`data-node`) and the ending, each with the list items it sits in (outermost first)."""

    def __init__(self, html: str):
        super().__init__()
        self.stack: list[tuple[str, dict]] = []
        self.nodes: dict[int, dict] = {}
        self.ending: dict | None = None
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        items = [a for tg, a in self.stack if tg == "li"]
        if tag == "li" and "sv-tree-end" in attrs.get("class", ""):
            self.ending = {"inside": items}
        if "data-node" in attrs:
            self.nodes[int(attrs["data-node"])] = {**attrs, "inside": items}
        if tag not in ("br", "img"):
            self.stack.append((tag, attrs))

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop()[0] != tag:
            pass


@pytest.mark.parametrize("lang", ["en", "es"])
def test_each_node_hangs_under_its_parent_with_its_status_and_numbers(lang):
    rnd = second_branch_wins()
    html = tree_html(rnd, lang)
    drawn = Nodes(html)
    assert sorted(drawn.nodes) == list(range(len(rnd.tree)))
    for i, n in enumerate(rnd.tree):
        d = drawn.nodes[i]
        assert d["class"] == f"sv-tree-node sv-tn-{n.status}" and d["tabindex"] == "0"   # details by keyboard too
        assert d["inside"][-1]["class"] == f"sv-tl-{n.status}"                            # its own list item
        depth = 1 + (n.parent >= 0)
        assert len(drawn.nodes[i]["inside"]) == depth + 1                                 # the root's item, then
    assert drawn.nodes[2]["inside"][-2]["class"] == "sv-tl-rejected"                       # under the rejected " dog"
    assert [it.get("class") for it in drawn.ending["inside"]] == [None, "sv-tl-accepted"]   # the correction: under
    # the accepted node whose children were all rejected, after them
    assert "0.90 ≥ a 0.40" in html and "0.10 &lt; a 0.80" in html                          # u against a, each node
    assert html.count(t("tree.untried", lang)) == 1 and html.count("sv-correction") == 1 and "sv-bonus" not in html


def test_a_hostile_token_is_text_in_both_languages_and_the_words_follow_the_language():
    rnd = second_branch_wins()
    for lang in ("en", "es"):
        html = tree_html(rnd, lang)
        assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
        assert "<b>mat" not in html and "&amp;lt;b&amp;gt;" not in html and "&lt;b&gt;mat&lt;/b&gt;" in html
        assert "&amp;amp;" in html                                                        # '&amp;' as typed
        other = "es" if lang == "en" else "en"
        for key in ("tree.untried", "tree.root"):
            assert t(key, lang) in html and t(key, other) not in html
    assert "Draft tree" in tree_html(rnd, "en") and "Árbol de borradores" in tree_html(rnd, "es")


def test_the_round_card_of_a_tree_round_holds_its_tree_and_a_chain_round_none():
    rnd = second_branch_wins()
    card = round_card_html(rnd, greedy=False, lang="es")
    assert card.count('class="sv-tree"') == 1 and "sv-tn-accepted" in card and "sv-tn-rejected" in card
    chain = Round(index=0, drafted=rnd.drafted, rejected_at=1, correction=rnd.correction, bonus=None,
                  emitted=rnd.emitted, draft_seconds=0.01, verify_seconds=0.02)
    assert "sv-tree" not in round_card_html(chain, greedy=False, lang="es")

"""The classroom as HTML and Plotly figures: the step mode's stage, u-bar, mass picture and score; the lab; the calculator.

Pure functions of the records (`specviz.trace.records`) and the step logic
(`specviz.classroom.steps`); no Gradio. Every status is shown as a glyph and a
word as well as a colour (✓ accepted, ✗ rejected, · discarded, ↻ correction,
★ bonus, ? not yet tested), and every string reaches markup through `esc`.
"""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..classroom.steps import Decision, Mass, Stop, decision
from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .classroom_stage import StageOptions, StageParts, stage_frame
from .classroom_whatif import premise_figure, premise_html, whatif_figure, whatif_html  # noqa: F401 (re-exported)
from .format import (MARKERS, PALETTE, RatioShown, display_number, esc, pct, ratio_shown, rich, round_drafter_text,
                     token_display)

GLYPHS = {**MARKERS, "pending": "?"}
_STATE_KEYS = {"accepted": "verdict.accepted", "rejected": "verdict.rejected", "discarded": "verdict.discarded",
               "correction": "cls.state_correction", "bonus": "cls.state_bonus", "pending": "cls.state_pending"}
_KIND_KEYS = {"draft": "cls.kind_draft", "verify": "cls.kind_verify", "test": "cls.kind_test",
              "correction": "cls.kind_correction", "bonus": "cls.kind_bonus"}


def quote(text: str) -> str:
    """A token quoted in prose, blanks made visible (unescaped: callers escape)."""
    return repr(token_display(text, True))


def state_word(state: str, lang: str = DEFAULT_LANG) -> str:
    return t(_STATE_KEYS[state], lang)


# ---------------------------------------------------------------- words and numbers
def numbers(test: Decision, hidden: bool = False) -> RatioShown:
    """The test's p, q, a (and u unless hidden) as its formula and u-bar show them: the line checks out by hand."""
    return ratio_shown(test.p, test.q, test.a, None if hidden else test.u)


def formula(test: Decision, lang: str = DEFAULT_LANG, hidden: bool = False) -> str:
    """`a = min(1, p/q) = min(1, 0.310/0.440) = 0.705; u = 0.620 < 0.705 → accepted` (plain text)."""
    n = numbers(test, hidden)
    if hidden:
        return t("cls.formula_hidden", lang, p=n.p, q=n.q, a=n.a)
    return t("cls.formula", lang, p=n.p, q=n.q, a=n.a, u=n.u,
             rel="<" if test.accepted else "≥", verdict=state_word("accepted" if test.accepted else "rejected", lang))


def summary(rnd: Round, lang: str = DEFAULT_LANG) -> str:
    """One plain-language line per round, for a screen reader as much as for the eye."""
    if not rnd.drafted:
        head = t("cls.sum_no_draft", lang)
    else:
        head = t("cls.sum_accepted", lang, n=rnd.n_accepted, k=rnd.k)
    parts = [head]
    if rnd.rejected_at is not None:
        tk = rnd.drafted[rnd.rejected_at]
        parts.append(t("cls.sum_rejected", lang, token=quote(tk.text), p=display_number(tk.p, 2), q=display_number(tk.q, 2)))
    if rnd.correction is not None:
        parts.append(t("cls.sum_correction", lang, token=quote(rnd.correction.text)))
    elif rnd.bonus is not None:
        parts.append(t("cls.sum_bonus", lang, token=quote(rnd.bonus.text)))
    return "; ".join(parts)


def chip_states(rnd: Round, stop: Stop, revealed: bool = True) -> list[str]:
    """The state of each drafted token as far as the walk has got (tests not reached or not revealed: 'pending')."""
    seen = {"draft": 0, "verify": 0, "test": (stop.pos or 0) + revealed, "correction": rnd.k, "bonus": rnd.k}
    done = seen[stop.kind]
    return [rnd.verdict(i) if i < done else "pending" for i in range(rnd.k)]


# ---------------------------------------------------------------- HTML pieces
def _chip(text: str, state: str, pos: int | None, current: bool, lang: str, extra: str = "") -> str:
    cls = "sv-cls-chip sv-cls-current" if current else "sv-cls-chip"
    tok = "pending" if state == "pending" else state
    data = "" if pos is None else f' data-pos="{pos + 1}"'
    return (f'<span class="{cls}" data-state="{esc(state)}"{data}>'
            f'<span class="sv-cls-glyph" aria-hidden="true">{GLYPHS[state]}</span>'
            f'<span class="sv-tok sv-{esc(tok)}">{esc(token_display(text, True))}</span>'
            f'<span class="sv-sr"> {esc(state_word(state, lang))}</span>{extra}</span>')


def strip_html(rnd: Round, stop: Stop, lang: str = DEFAULT_LANG, revealed: bool = True) -> str:
    """The round's drafted tokens in a row, each with its state so far; then the correction or bonus once reached."""
    states = chip_states(rnd, stop, revealed)
    chips = []
    for i, tk in enumerate(rnd.drafted):
        nums = f'<span class="sv-cls-num">q {esc(display_number(tk.q, 2))}</span>'
        if stop.kind != "draft":
            nums += f'<span class="sv-cls-num">p {esc(display_number(tk.p, 2))}</span>'
        chips.append(_chip(tk.text, states[i], i, stop.kind == "test" and stop.pos == i, lang, nums))
    if stop.kind == "correction" and rnd.correction is not None:
        chips.append(_chip(rnd.correction.text, "correction", None, True, lang))
    if stop.kind == "bonus" and rnd.bonus is not None:
        chips.append(_chip(rnd.bonus.text, "bonus", None, True, lang))
    return f'<div class="sv-cls-strip">{"".join(chips)}</div>'


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


def _body(rnd: Round, stop: Stop, greedy: bool, hidden: bool, lang: str, reject_chance: float | None = None) -> str:
    """The explanation of one stop: words, and at a test the formula and the u-bar."""
    k = rnd.k
    if stop.kind == "draft":
        lookup = k > 0 and all(getattr(tk, "source", "model") == "ngram" for tk in rnd.drafted)
        return f'<p>{rich("cls.draft_lookup_text" if lookup else "cls.draft_text", lang, k=k)}</p>'
    if stop.kind == "verify":
        return f'<p>{rich("cls.verify_text", lang, k=k, n=k + 1)}</p>'
    if stop.kind == "test":
        tk = rnd.drafted[stop.pos]
        test = decision(tk)
        note = f'<p class="sv-muted">{esc(t("cls.greedy_note", lang))}</p>' if greedy else ""
        return (f'<p>{rich("cls.test_text", lang, pos=stop.pos + 1, token=quote(tk.text))}</p>'
                f'<p class="sv-cls-formula" data-pos="{stop.pos + 1}">{esc(formula(test, lang, hidden))}</p>'
                f'{ubar_html(test, lang, hidden)}{note}')
    if stop.kind == "correction":
        c = rnd.correction
        return (f'<p>{rich("cls.correction_text", lang, pos=(rnd.rejected_at or 0) + 1, token=quote(c.text), r=display_number(c.prob))}'
                f'</p>{_chance(rnd, reject_chance, lang)}'
                f'<p class="sv-muted">{esc(t("cls.correction_greedy" if greedy else "cls.see_mass", lang))}</p>')
    b = rnd.bonus
    return f'<p>{rich("cls.bonus_text", lang, k=k, pos=k + 1, token=quote(b.text), p=display_number(b.prob))}</p>'


def _chance(rnd: Round, reject_chance: float | None, lang: str) -> str:
    """The rejection chance the mass picture shows (its `Mass.reject_chance`, passed in: one source for both), beside
    this draft's own 1 − a, so the two numbers are never mistaken for each other."""
    if reject_chance is None or rnd.rejected_at is None:
        return ""
    miss = 1.0 - decision(rnd.drafted[rnd.rejected_at]).a
    line = t("cls.correction_chance", lang, reject=display_number(reject_chance), miss=display_number(miss))
    return f'<p class="sv-cls-chance" data-reject="{esc(display_number(reject_chance))}">{esc(line)}</p>'


def stage_html(rnd: Round, n_rounds: int, stop_index: int, greedy: bool, options: StageOptions | None = None,
               lang: str = DEFAULT_LANG) -> str:
    """The whole stage of one stop: where we are, the tokens so far, the explanation, the round's summary, in the
    frame a tree's stage shares (`classroom_stage.stage_frame`)."""
    opts = options or StageOptions()

    def parts(stop: Stop) -> StageParts:
        return StageParts(_KIND_KEYS[stop.kind], strip_html(rnd, stop, lang, not opts.hidden),
                          _body(rnd, stop, greedy, opts.hidden, lang, opts.reject_chance), summary(rnd, lang),
                          extra=_drafter_html(rnd, lang))

    return stage_frame(rnd, n_rounds, stop_index, opts, parts, lang)


def _drafter_html(rnd: Round, lang: str) -> str:
    """Who drafted a round of a run that mixes drafters (prompt lookup or the draft model); "" otherwise."""
    if getattr(rnd, "drafter", "model") in ("model", "tree"):
        return ""
    source = "ngram" if any(getattr(tk, "source", "") == "ngram" for tk in rnd.drafted) else "model"
    return f'<p class="sv-cls-drafter" data-source="{source}">{esc(round_drafter_text(rnd, lang))}</p>'


def empty_stage_html(lang: str = DEFAULT_LANG) -> str:
    return f'<div class="sv-cls-stage-box sv-muted" data-kind="empty">{esc(t("cls.empty", lang))}</div>'


def score_html(right: int, total: int, lang: str = DEFAULT_LANG, last: bool | None = None) -> str:
    verdict = "" if last is None else (
        f'<span class="sv-cls-last" data-right="{str(last).lower()}">'
        f'{"✓" if last else "✗"} {esc(t("cls.predict_right" if last else "cls.predict_wrong", lang))}</span> ')
    return (f'<div class="sv-cls-score" data-right="{right}" data-total="{total}">{verdict}'
            f'{esc(t("cls.score", lang, right=right, total=total))}</div>')


# ---------------------------------------------------------------- the mass picture
def _safe(text: str) -> str:
    return esc(text, quote=False)


def mass_figure(m: Mass | None, title: str, lang: str = DEFAULT_LANG,
                headings: tuple[str, str] = ("cls.mass_top", "cls.mass_bottom")) -> go.Figure:
    """p and q over the top tokens (min(p, q) shaded, max(0, p − q) highlighted), then the residual normalised.
    `headings`: the two panels' string keys (a draft tree's residual names r and r′ instead)."""
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.14,
                        subplot_titles=(_safe(t(headings[0], lang)), _safe(t(headings[1], lang))))
    if m is None or not m.ids:
        fig.add_annotation(text=_safe(t("cls.mass_empty", lang)), showarrow=False, x=0.5, y=0.5, xref="paper",
                           yref="paper", font=dict(size=14, color="#6e7781"))
    else:
        seen: dict[str, int] = {}
        x = []
        for i, text in zip(m.ids, m.texts):
            label = _safe(token_display(text, True))
            seen[label] = seen.get(label, 0) + 1
            x.append(label if seen[label] == 1 else f"{label} #{i}")
        fig.add_bar(x=x, y=m.overlap, name=_safe(t("cls.mass_overlap", lang)), marker_color="#9DB9D3",
                    marker_pattern_shape=".", hovertemplate="%{x}: min(p, q) = %{y:.3f}<extra></extra>", row=1, col=1)
        fig.add_bar(x=x, y=m.residual, name=_safe(t("cls.mass_residual", lang)), marker_color=PALETTE["residual"],
                    marker_pattern_shape="/", hovertemplate="%{x}: max(0, p − q) = %{y:.3f}<extra></extra>", row=1, col=1)
        fig.add_scatter(x=x, y=m.q, mode="markers", name=_safe(t("cls.mass_q", lang)),
                        marker=dict(symbol="line-ew-open", size=26, color=PALETTE["q"],
                                    line=dict(width=3, color=PALETTE["q"])),
                        hovertemplate="%{x}: q = %{y:.3f}<extra></extra>", row=1, col=1)
        fig.add_scatter(x=x, y=m.p, mode="markers", name=_safe(t("cls.mass_p", lang)),
                        marker=dict(symbol="diamond", size=8, color=PALETTE["p"]),
                        hovertemplate="%{x}: p = %{y:.3f}<extra></extra>", row=1, col=1)
        marks = [_safe(t("cls.mass_drawn", lang)) if j == m.drawn else "" for j in range(len(m.ids))]
        fig.add_bar(x=x, y=[v if v is not None else 0.0 for v in m.r], name=_safe(t("cls.mass_r", lang)),
                    marker_color=PALETTE["correction"], marker_line=dict(width=[3 if j == m.drawn else 0
                                                                                for j in range(len(m.ids))],
                                                                         color="#000"),
                    text=marks, textposition="outside", hovertemplate="%{x}: r = %{y:.3f}<extra></extra>",
                    row=2, col=1)
        top_r = max([v for v in m.r if v is not None] + [0.05])
        fig.update_yaxes(range=[0, min(1.0, top_r) * 1.3], row=2, col=1)
    # The title goes in the page's text above (mass_text_html): Plotly does not wrap titles on a phone.
    fig.update_annotations(font_size=12)
    fig.update_layout(barmode="stack", template="plotly_white", meta=_safe(title),
                      height=600, margin=dict(l=45, r=10, t=40, b=40), font=dict(size=13),
                      legend=dict(orientation="h", yanchor="top", y=-0.08, x=0))
    return fig


def mass_text_html(m: Mass, rnd: Round, title: str = "", lang: str = DEFAULT_LANG) -> str:
    """The mass picture's heading, and why the correction gives back p exactly, with the drawn token's own numbers."""
    parts = [f"<h4>{esc(title)}</h4>" if title else "", f'<p>{rich("cls.mass_why", lang, reject=display_number(m.reject_chance))}</p>']
    if m.drawn is not None:
        j = m.drawn
        r = m.r[j] if m.r[j] is not None else float("nan")
        line = t("cls.mass_example", lang, token=quote(m.texts[j]), overlap=display_number(m.overlap[j]),
                 reject=display_number(m.reject_chance), r=display_number(r), resid=display_number(m.reject_chance * r), p=display_number(m.p[j]))
        parts.append(f"<p>{esc(line)}</p>")
    parts.append(f'<p class="sv-muted">{esc(t("cls.mass_exact" if m.exact_r else "cls.mass_approx", lang))}</p>')
    return (f'<div class="sv-cls-mass-text" data-round="{rnd.index + 1}" '
            f'data-reject="{esc(display_number(m.reject_chance))}">{"".join(parts)}</div>')


# ---------------------------------------------------------------- the losslessness lab
LAB_KEYS = {"real": "lab.v_real", "always_accept": "lab.v_always_accept", "correction_from_p": "lab.v_correction_from_p",
            "untempered_q": "lab.v_untempered_q", "greedy_softmax_q": "lab.v_greedy_softmax_q"}
BIASED_P = 1e-3   # a chi-square p-value below this: the histogram is not p


def lab_figure(bins: list[tuple[int, float, float]], texts, n: int, variant: str, lang: str = DEFAULT_LANG) -> go.Figure:
    """The emitted tokens' shares next to the target's p over the tokens that matter most."""
    fig = go.Figure()
    if not bins:
        fig.add_annotation(text=_safe(t("lab.empty", lang)), showarrow=False, x=0.5, y=0.5, xref="paper",
                           yref="paper", font=dict(size=14, color="#6e7781"))
    else:
        x = [_safe(f"{token_display(texts(i), True)} #{i}") for i, _, _ in bins]
        fig.add_bar(x=x, y=[s for _, s, _ in bins], name=_safe(t("lab.series_samples", lang, n=n)),
                    marker_color=PALETTE["correction"] if variant != "real" else PALETTE["accepted"],
                    marker_pattern_shape="" if variant == "real" else "/",
                    hovertemplate="%{x}: %{y:.3f}<extra></extra>")
        fig.add_scatter(x=x, y=[p for _, _, p in bins], mode="markers", name=_safe(t("lab.series_p", lang)),
                        marker=dict(symbol="line-ew-open", size=26, color="#000", line=dict(width=3, color="#000")),
                        hovertemplate="%{x}: p = %{y:.3f}<extra></extra>")
    fig.update_layout(title=_safe(t("lab.title", lang, variant=t(LAB_KEYS[variant], lang), n=n)),
                      template="plotly_white", height=380, margin=dict(l=50, r=15, t=80, b=60), font=dict(size=13),
                      legend=dict(orientation="h", yanchor="bottom", y=1.02, x=0),
                      yaxis=dict(title=_safe(t("lab.y", lang))))
    return fig


def lab_stats_html(fit, total: int, variant: str, done: bool, lang: str = DEFAULT_LANG, stopped: bool = False) -> str:
    """TV, chi-square p-value, the noise floor, and the verdict in words and glyph; `stopped`: a run Stop ended."""
    if fit is None:
        return ""
    biased = fit.p_value < BIASED_P
    verdict = (f'<span class="sv-cls-verdict-bad" data-biased="true">✗ {esc(t("lab.biased", lang))}</span>' if biased
               else f'<span class="sv-cls-verdict-ok" data-biased="false">✓ {esc(t("lab.consistent", lang))}</span>')
    progress = t("lab.stopped" if stopped else "lab.done" if done else "lab.progress", lang, n=fit.n, total=total)
    return (f'<div class="sv-cls-panel" data-tv="{fit.tv:.4f}" data-pvalue="{fit.p_value:.3g}" data-n="{fit.n}">'
            f'<div>{esc(progress)}</div>'
            f'<div>{esc(t("lab.stats", lang, tv=display_number(fit.tv), pvalue=display_number(fit.p_value), noise=display_number(fit.noise_tv)))}</div>'
            f'<div>{verdict}</div><div class="sv-muted">{esc(t("lab.why_real" if variant == "real" else "lab.why_broken", lang))}'
            f'</div></div>')


def lab_compare_html(cmp, lang: str = DEFAULT_LANG) -> str:
    """"Why not just compare tokens?": each test's measured acceptance beside its formula (a TokenComparison)."""
    if cmp is None:
        return ""

    def line(key: str, kind: str, measured: float, se: float, formula: float) -> str:
        text = t(key, lang, measured=display_number(measured), se=display_number(se), formula=display_number(formula))
        return (f'<li data-test="{kind}" data-measured="{measured:.4f}" data-formula="{formula:.4f}">'
                f'{esc(text)}</li>')

    return (f'<div class="sv-cls-panel sv-lab-compare" data-n="{cmp.n}">'
            f'<h4>{esc(t("lab.cmp_title", lang))}</h4><p>{esc(t("lab.cmp_intro", lang, n=cmp.n))}</p><ul>'
            + line("lab.cmp_rule", "rule", cmp.rule_rate, cmp.rule_se, cmp.rule_formula)
            + line("lab.cmp_exact", "exact", cmp.exact_rate, cmp.exact_se, cmp.exact_formula)
            + f'</ul><p class="sv-muted">{esc(_why_exact_loses(cmp, lang))}</p></div>')


def _why_exact_loses(cmp, lang: str) -> str:
    """Why exact matching keeps fewer drafts, with this position's own two formulas: how many of the drafts the rule
    keeps it would throw away (a peaked p and q lose few; "rarely meet" was false where both kept 94 %)."""
    rule, exact = cmp.rule_formula, cmp.exact_formula
    lost = (rule - exact) / rule if rule > 0 else 0.0
    return t("lab.cmp_why", lang, exact=display_number(exact), rule=display_number(rule), lost=pct(max(0.0, lost)))


def classroom_css() -> str:
    """The classroom's own styles: chips, the u-bar (presenter mode is in assets/specviz.css)."""
    c = PALETTE
    return f"""
.sv-sr {{ position: absolute; width: 1px; height: 1px; overflow: hidden; clip: rect(0 0 0 0); white-space: nowrap; }}
.sv-cls-stage-box {{ background: #fff; color: #1f2328; border: 1px solid #d0d7de; border-radius: 8px; padding: 12px 14px;
  font-size: 15px; line-height: 1.5; }}
.sv-cls-where {{ font-weight: 600; color: #0b3d62; margin-bottom: 8px; }}
.sv-cls-strip {{ display: flex; flex-wrap: wrap; gap: 6px; margin-bottom: 8px; }}
.sv-cls-chip {{ display: inline-flex; flex-direction: column; align-items: center; border: 1px solid #d0d7de;
  border-radius: 6px; padding: 4px 8px; min-width: 3em; font-family: ui-monospace, Menlo, Consolas, monospace; }}
.sv-cls-chip.sv-cls-current {{ border: 2px solid #000; box-shadow: 0 0 0 2px #ffd33d; }}
.sv-cls-glyph {{ font-size: 1.1em; font-weight: 700; }}
.sv-cls-chip[data-state=accepted] .sv-cls-glyph {{ color: {c['accepted']}; }}
.sv-cls-chip[data-state=rejected] .sv-cls-glyph {{ color: {c['rejected']}; }}
.sv-cls-chip[data-state=correction] .sv-cls-glyph {{ color: {c['correction']}; }}
.sv-cls-chip[data-state=bonus] .sv-cls-glyph {{ color: {c['bonus']}; }}
.sv-tok.sv-pending {{ color: #1f2328; }}
.sv-cls-num {{ font-size: 11.5px; color: #57606a; font-variant-numeric: tabular-nums; }}
.sv-cls-formula {{ font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 1.05em; background: #f6f8fa;
  border-radius: 6px; padding: 6px 8px; overflow-wrap: anywhere; }}
.sv-ubar-wrap {{ margin: 14px 0 26px 0; max-width: 640px; }}
.sv-ubar {{ position: relative; display: flex; height: 30px; border: 1px solid #57606a; border-radius: 4px; }}
.sv-ubar-acc {{ background: {c['accepted']}33; overflow: hidden; white-space: nowrap; font-size: 12.5px;
  display: flex; align-items: center; padding-left: 4px; }}
.sv-ubar-rej {{ overflow: hidden; white-space: nowrap; font-size: 12.5px; display: flex; align-items: center;
  justify-content: flex-end; padding-right: 4px;
  background: repeating-linear-gradient(45deg, {c['rejected']}33 0 6px, #fff 6px 11px); }}
.sv-ubar-u {{ position: absolute; top: -6px; bottom: -6px; width: 3px; margin-left: -1px; background: #000; }}
.sv-ubar-ulabel {{ position: absolute; top: -20px; left: 4px; font-size: 12px; font-weight: 700; white-space: nowrap; }}
.sv-ubar-scale {{ position: relative; height: 16px; font-size: 12px; color: #57606a; }}
.sv-ubar-scale span {{ position: absolute; top: 2px; white-space: nowrap; }}
.sv-ubar-scale .sv-ubar-one {{ right: 0; }}
.sv-cls-summary {{ margin: 8px 0 0 0; padding-top: 6px; border-top: 1px dashed #d0d7de; }}
.sv-cls-note {{ background: #fff8c5; border: 1px solid #d4a72c; border-radius: 6px; padding: 4px 8px; }}
.sv-cls-score, .sv-cls-panel {{ color: #1f2328; background: #fff; border: 1px solid #d0d7de; border-radius: 8px;
  padding: 6px 10px; }}
.sv-cls-verdict-ok {{ color: #116329; font-weight: 700; }} .sv-cls-verdict-bad {{ color: #82071e; font-weight: 700; }}
.sv-cls-verdict-noisy {{ color: #7d4e00; font-weight: 700; }}
.sv-lang a {{ margin-right: 10px; }}
"""

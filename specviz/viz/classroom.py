"""The classroom as HTML and Plotly figures: the step mode's mass picture, the lab, the classroom's styles.

Pure functions of the records (`specviz.trace.records`) and the step logic
(`specviz.classroom`); no Gradio; every string reaches markup through `esc`. The
step mode's stage is `classroom_stage`, its words and numbers `classroom_words`
(re-exported here, the one name the tabs draw the classroom through); the
calculator is `classroom_whatif`.
"""
from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..classroom.decisions import Decision  # noqa: F401 (re-exported)
from ..classroom.masses import Mass
from ..strings import DEFAULT_LANG, t
from ..trace.records import Round
from .classroom_stage import StageOptions, empty_stage_html, score_html, stage_html  # noqa: F401 (re-exported)
from .classroom_whatif import premise_figure, premise_html, whatif_figure, whatif_html  # noqa: F401 (re-exported)
from .classroom_words import WORDS, changes_html, formula, quote, shape, summary  # noqa: F401 (re-exported)
from .format import PALETTE, display_number, esc, pct, rich, token_display


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
    """The classroom's own styles: chips, the u-bar, the tree (a little indentation, wrapping nodes, a scroll
    inside the box rather than the page; presenter mode is in assets/specviz.css)."""
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

.sv-ctree {{ overflow-x: auto; max-width: 100%; margin-bottom: 8px; font-family: ui-monospace, Menlo, Consolas, monospace; }}
.sv-ctree ul {{ list-style: none; margin: 0; padding-left: 1.1em; border-left: 1px dotted #8c959f; }}
.sv-ctree li {{ margin: 3px 0; }}
.sv-ctree-root {{ color: #57606a; font-size: 0.9em; }}
.sv-ctree-node {{ display: inline-flex; flex-wrap: wrap; align-items: baseline; gap: 2px 6px; border: 1px solid #d0d7de;
  border-radius: 6px; padding: 2px 6px; max-width: 100%; overflow-wrap: anywhere; }}
.sv-ctree-node.sv-cls-current {{ border: 2px solid #000; box-shadow: 0 0 0 2px #ffd33d; }}
.sv-ctree-node[data-state=accepted] {{ font-weight: 700; }}
.sv-ctree-node[data-state=accepted] .sv-cls-glyph {{ color: #1a7f37; }}
.sv-ctree-node[data-state=rejected] .sv-tok {{ text-decoration: line-through; }}
.sv-ctree-node[data-state=rejected] .sv-cls-glyph {{ color: #cf222e; }}
.sv-ctree-node[data-state=untried] {{ opacity: 0.55; }}
.sv-ctree-changes {{ margin: 4px 0; padding-left: 1.2em; font-variant-numeric: tabular-nums; }}
.sv-ctree-changes .sv-ctree-changed {{ font-weight: 700; }}
.sv-ctree-changes .sv-ctree-same {{ color: #57606a; }}
"""

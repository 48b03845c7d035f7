"""The app shell: the page layout, one wiring line per part, and launch settings.

No logic here: the event functions live in `tabs/` (one module per part of the
page), input checks in `inputs`, the decode thread in `worker`, the
round-by-round rendering in `stream`, and every word on the page in
`specviz.strings`.
"""
from __future__ import annotations

import json
from typing import Callable

import gradio as gr

from ..limits import ASSETS
from ..strings import DEFAULT_LANG, t
from ..trace import metrics
from ..viz import html as vh
from .session import AppContext, PairCache, PairLoader, default_cache
from .tabs import generate, inspector, log, sweep, timing, trace_files


def load_examples(lang: str = DEFAULT_LANG) -> list[list]:
    """[prompt, K, temperature, label] rows from assets/examples.json (one built-in row if it is unreadable)."""
    try:
        data = json.loads((ASSETS / "examples.json").read_text(encoding="utf-8"))
        return [[e["prompt"], int(e.get("k", 4)), float(e.get("temperature", 0.0)), str(e.get("label", e["prompt"][:40]))]
                for e in data]
    except (OSError, ValueError, KeyError, TypeError):
        return [[t("example.prompt", lang), 4, 0.0, t("example.label", lang)]]


def css() -> str:
    return vh.token_css() + (ASSETS / "specviz.css").read_text(encoding="utf-8")


def results(lang: str) -> dict:
    """The right column's top: status, legend, live text, metric tiles, comparison."""
    return {"status": gr.HTML(vh.status_html(t("status.ready", lang), "info"), elem_id="sv-status"),
            "legend": gr.HTML(vh.legend_html(lang=lang), elem_id="sv-legend"),
            "live": gr.HTML("", elem_id="sv-live"),
            "metrics": gr.HTML(vh.metrics_html(metrics([]), lang=lang), elem_id="sv-metrics"),
            "compare": gr.HTML("", elem_id="sv-compare")}


def build_app(pair_loader: PairLoader | None = None, *, sweep_fn: Callable | None = None,
              replay_delay: float = 0.12, concurrency_limit: int = 1, default_prompt: str | None = None,
              default_max_new_tokens: int = 64, default_k: int = 4, pair_label: str | None = None,
              lang: str = DEFAULT_LANG) -> gr.Blocks:
    """The Blocks app. `pair_loader(draft_id|None, target_id|None, progress)` -> a ModelPair-like object.

    Tests inject tiny models with `pair_loader` (and a fake `sweep_fn` if they
    like); the default loads the packaged pair (or Hub ids) through
    `specviz.models.load_pair(..., allow_local=False)`. `lang` picks the
    strings table (unknown codes fall back to English).
    """
    ctx = AppContext(cache=PairCache(pair_loader) if pair_loader is not None else default_cache(),
                     sweep_fn=sweep_fn, replay_delay=replay_delay, lang=lang)
    examples = load_examples(lang)
    with gr.Blocks(title=t("app.title", lang)) as demo:
        c = {"trace": gr.State(None)}
        gr.Markdown(t("app.intro", lang), elem_id="sv-title")
        with gr.Row(equal_height=False):
            with gr.Column(scale=1, min_width=330):
                c.update(generate.controls(lang, examples, examples[0][0] if default_prompt is None else default_prompt,
                                           default_k, default_max_new_tokens, pair_label))
            with gr.Column(scale=2, min_width=520):
                c.update(results(lang))
                with gr.Tabs():
                    for part in (log, inspector, timing, sweep, trace_files):
                        c.update(part.tab(lang))

        run_events = generate.wire(ctx, c, concurrency_limit)
        replay_events = trace_files.wire(ctx, c)
        generate.wire_stop(ctx, c, cancels=run_events + replay_events)
        inspector.wire(ctx, c)
        sweep.wire(ctx, c, concurrency_limit)
    demo.specviz_css = css()  # launch() takes css in Gradio 6; see launch_app
    return demo


def launch_app(demo: gr.Blocks, **kwargs):
    """Launch with the specviz CSS and a light theme (the palette is tuned for a light page)."""
    kwargs.setdefault("css", getattr(demo, "specviz_css", None) or css())
    kwargs.setdefault("theme", gr.themes.Soft(primary_hue="blue"))
    kwargs.setdefault("js", "() => { const u = new URL(window.location); if (u.searchParams.get('__theme') !== 'light') "
                            "{ u.searchParams.set('__theme', 'light'); window.location.href = u.href; } }")
    return demo.queue(default_concurrency_limit=4).launch(**kwargs)

"""The app shell: the page layout, one wiring line per part, and launch settings.

No logic here: the event functions live in `tabs/` (one module per part of the
page), input checks in `inputs`, the decode thread in `worker`, the
round-by-round rendering in `stream`, and every word on the page in
`specviz.strings`.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Callable

import gradio as gr

from ..limits import APP_LIVE_UPDATES_PER_S, ASSETS
from ..strings import DEFAULT_LANG, LANGUAGES, t
from ..trace.records import metrics
from ..viz import classroom as vc
from ..viz import race as vr
from ..viz import html as vh
from . import api, api_edge, api_race, early_script
from .session import AppContext, PairCache, PairLoader, default_cache
from .events import listen
from .inputs import default_pair as _default_pair
from .locale import page_language_js
from .pays import gpu_available
from .tabs import classroom, generate, inspector, log, sweep, timing, trace_files


def load_examples(lang: str = DEFAULT_LANG) -> list[list]:
    """[prompt, K, temperature, label] rows from assets/examples.json, or examples.<lang>.json where one exists
    (one built-in row if it is unreadable)."""
    path = ASSETS / f"examples.{lang}.json"
    try:
        data = json.loads((path if path.is_file() else ASSETS / "examples.json").read_text(encoding="utf-8"))
        return [[e["prompt"], int(e.get("k", 4)), float(e.get("temperature", 0.0)), str(e.get("label", e["prompt"][:40]))]
                for e in data]
    except (OSError, ValueError, KeyError, TypeError):
        return [[t("example.prompt", lang), 4, 0.0, t("example.label", lang)]]


def css() -> str:
    return vh.token_css() + (ASSETS / "specviz.css").read_text(encoding="utf-8") + vc.classroom_css() + vr.race_css()


def language_redirect_js(lang: str) -> str:
    """?lang=xx on a page of another language: go to that language's page, keeping the other parameters (a fallback:
    assets/first_view.js does it before the page loads, where the middleware serves it)."""
    pages = json.dumps(early_script.pages()["pages"])   # the same table as first_view.js
    return ("() => { const pages = " + pages + ", here = " + json.dumps(lang) + "; "
            "const u = new URL(window.location.href); "
            "const want = (u.searchParams.get('lang') || '').toLowerCase().slice(0, 2); "
            "if (!want || want === here || !(want in pages)) return; "
            "let base = u.pathname; const mine = pages[here]; "
            "if (mine && base.endsWith('/' + mine)) base = base.slice(0, -mine.length); "
            "if (!base.endsWith('/')) base += '/'; "
            "window.location.replace(base + pages[want] + u.search + u.hash); }")


def results(lang: str) -> dict:
    """The right column's top: status (it sticks in view), legend, the live text beside the clean output, metric
    tiles, comparison."""
    c = {"status": gr.HTML(vh.status_html(t("status.ready", lang), "info"), elem_id="sv-status"),
         "legend": gr.HTML(vh.legend_html(lang=lang), elem_id="sv-legend")}
    with gr.Row(equal_height=False, elem_id="sv-texts"):
        with gr.Column(scale=3, min_width=300):
            # A fixed empty box that assets/live_text.js fills: whole values replace its text, append values
            # (`LiveText.appended`) add rounds to it; Gradio never re-parses the growing text.
            c["live"] = gr.HTML("", elem_id="sv-live", html_template='<div class="sv-live-text"></div>',
                                js_on_load=(ASSETS / "live_text.js").read_text(encoding="utf-8"))
        with gr.Column(scale=2, min_width=240):
            c["output"] = gr.Textbox(label=t("ui.output", lang), interactive=False, lines=9, max_lines=18,
                                     buttons=["copy"], placeholder=t("ui.output_placeholder", lang), elem_id="sv-output")
    c["metrics"] = gr.HTML(vh.metrics_html(metrics([]), lang=lang), elem_id="sv-metrics")
    c["compare"] = gr.HTML("", elem_id="sv-compare")
    return c


@dataclass(frozen=True)
class PageSettings:
    """What the page's form starts with and offers, the same on every language page.

    `prompt` (None: the first example's), `k` and `max_new_tokens` fill the form; `pair_label` names the
    packaged pair in the pair list; `gpu` (None: a CUDA GPU or a ZeroGPU Space is here) offers the GPU presets;
    `pair` is the pair the dropdown starts on (a preset's value; the packaged pair when it is not offered
    here, so a GPU preset never becomes the default on a CPU).
    """

    prompt: str | None = None
    k: int = 3
    max_new_tokens: int = 64
    pair_label: str | None = None
    gpu: bool | None = None
    pair: str | None = None


def build_app(pair_loader: PairLoader | None = None, *, sweep_fn: Callable | None = None,
              replay_delay: float = 0.12, concurrency_limit: int = 1, lang: str = DEFAULT_LANG,
              live_updates_per_s: float | None = APP_LIVE_UPDATES_PER_S,
              settings: PageSettings = PageSettings()) -> gr.Blocks:
    """The Blocks app. `pair_loader(draft_id|None, target_id|None, progress)` -> a ModelPair-like object.

    Tests inject tiny models with `pair_loader` (and a fake `sweep_fn` if they
    like); the default loads the packaged pair (or Hub ids) through
    `specviz.models.loading.load_pair(..., allow_local=False)`. `lang` picks the
    strings table (unknown codes fall back to English). `settings`: what the
    form starts with (a `PageSettings`).
    `live_updates_per_s`: the most page updates a second while a run streams
    (None: one per batch of rounds, as fast as they come; scripts/page_vs_bench.py
    measures either).
    """
    gpu = gpu_available() if settings.gpu is None else settings.gpu
    settings = replace(settings, gpu=gpu, pair=_default_pair(settings.pair, gpu))
    ctx = AppContext(cache=PairCache(pair_loader) if pair_loader is not None else default_cache(),
                     sweep_fn=sweep_fn, replay_delay=replay_delay, lang=lang, live_updates_per_s=live_updates_per_s)
    with api.Blocks(title=t("app.title", lang)) as demo:
        api.register(ctx, concurrency_limit)   # first, so the endpoints keep their plain names; once for all pages
        api_race.register(ctx, concurrency_limit)   # the fifth endpoint, the classroom's drafter race
        page(demo, ctx, settings, concurrency_limit)
    demo.language_pages = tuple(other for other in LANGUAGES if other != lang)
    for other in demo.language_pages:        # every other language: the same page at /<code> (e.g. /es)
        with demo.route(t("lang.name", other), other):
            page(demo, replace(ctx, lang=other), settings, concurrency_limit)
    demo.specviz_css = css()  # launch() takes css in Gradio 6; see launch_app
    return demo


def page(demo: gr.Blocks, ctx: AppContext, settings: PageSettings, concurrency_limit: int) -> None:
    """One page of the app in `ctx.lang`: the layout, then one wiring line per part (`settings` resolved: its `gpu`
    and `pair` are set)."""
    lang = ctx.lang
    examples = load_examples(lang)
    c = {"trace": gr.State(None), "target_token_s": gr.State(None)}   # the run shown, its target alone's s/token
    # The pages are the languages: Gradio's navbar is the language switch (English at the root, the others at /<code>).
    gr.Navbar(main_page_name=t("lang.name", LANGUAGES[0]), elem_id="sv-lang")
    gr.Markdown(t("app.intro", lang), elem_id="sv-title")
    with gr.Row(equal_height=False, elem_id="sv-main"):
        with gr.Column(scale=1, min_width=330, elem_id="sv-controls"):
            prompt = examples[0][0] if settings.prompt is None else settings.prompt
            c.update(generate.controls(lang, examples, prompt, settings.k, settings.max_new_tokens,
                                       settings.pair_label, settings.gpu, settings.pair))
        with gr.Column(scale=2, min_width=520, elem_id="sv-results"):
            c.update(results(lang))
            # "wrap": every tab in view on a phone too (Gradio's default hid 4 of 6 behind "More tabs" at 390 px)
            with gr.Tabs(elem_id="sv-tabs", overflow_behavior="wrap") as c["tabs"]:
                for part in (log, inspector, timing, sweep, trace_files, classroom):
                    c.update(part.tab(lang))

    generate.wire(ctx, c, concurrency_limit)
    trace_files.wire(ctx, c)
    generate.wire_stop(ctx, c, demo)   # Stop ends runs, sweeps and replays itself (no cancels: nothing is lost)
    inspector.wire(ctx, c)
    sweep.wire(ctx, c, concurrency_limit)
    classroom.wire(ctx, c, concurrency_limit)
    demo.load(None, js=language_redirect_js(lang))
    if page_language_js(lang):   # Gradio's own words, the title and <html lang> in this language
        demo.load(None, js=page_language_js(lang))
    classroom.wire_load(ctx, c, demo)


def launch_app(demo: gr.Blocks, **kwargs):
    """Launch with the specviz CSS and a light theme (the palette is tuned for a light page), and the scripts that
    must run before Gradio's own first in the page's <head> (`early_script`)."""
    kwargs.setdefault("css", getattr(demo, "specviz_css", None) or css())
    kwargs.setdefault("head", "<script>" + (ASSETS / "specviz.js").read_text(encoding="utf-8") + "</script>")
    kwargs.setdefault("theme", gr.themes.Soft(primary_hue="blue"))
    app_kwargs = dict(kwargs.pop("app_kwargs", None) or {})
    app_kwargs["middleware"] = [*app_kwargs.get("middleware", []), early_script.middleware()]
    # A body Gradio's routes cannot read: one sentence in JSON, not pydantic's bare 422 (`api_edge`).
    app_kwargs["exception_handlers"] = {**api_edge.exception_handlers(), **app_kwargs.get("exception_handlers", {})}
    # A fallback only: assets/first_view.js sets ?__theme=light before Gradio starts, where the middleware runs.
    kwargs.setdefault("js", "() => { const u = new URL(window.location); if (u.searchParams.get('__theme') !== 'light') "
                            "{ u.searchParams.set('__theme', 'light'); window.location.href = u.href; } }")
    return demo.queue(default_concurrency_limit=4).launch(app_kwargs=app_kwargs, **kwargs)

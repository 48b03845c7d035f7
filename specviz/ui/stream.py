"""Rounds arriving one at a time -> updates of the page: the one helper behind live runs and replays.

Event functions yield dicts keyed by view name (`VIEWS`); `events.listen`
maps the names to the page's components. Every update is bounded whatever the
run's length: the live text holds the newest `APP_LIVE_ROUNDS` rounds (with a
count of the earlier ones), the round log its newest cards, the timeline chart
its newest rounds. Charts are redrawn at most every `chart_interval_s` while
streaming and always at the end; with `stream_charts=False` (a fast replay, and
every live run) the log and tiles are redrawn at that pace too, and
the charts only at the end, so that building, sending and drawing two Plotly
figures and the whole log never compete with a decode (the live text, the one
view that moves on every update, only grows); a live run's round log comes at its end only (`live_log`). Every
round's fragment and card is drawn once and kept as a string. The live text is
sent whole at the start and the end only; each update between brings only the
rounds that arrived since the last (`LiveText.appended`, appended in the page by
assets/live_text.js): Gradio parses and diffs a whole HTML value on every
update, which grew with the text.
"""
from __future__ import annotations

import time

import gradio as gr

from ..limits import APP_LIVE_ROUNDS
from ..strings import DEFAULT_LANG
from ..trace.records import Round, Trace, metrics
from ..viz import accepted_law, charts, round_time
from ..viz import cards as vc
from ..viz import html as vh

# Every view a run or a replay updates, by name (the components are made in the tab modules).
VIEWS = ("status", "live", "output", "log", "metrics", "compare", "pos_plot", "time_plot", "law_plot", "cost_plot",
         "download", "trace", "target_token_s", "insp_round", "insp_pos", "insp_plot", "insp_card", "download_html")
# A live run's own event updates these; the charts and the round inspector come after it, from its trace
# (`after_run_updates`). Why: for every output an update leaves unchanged, Gradio 6 builds a new
# component (plots and sliders cost the most), tens of milliseconds of Python per update on a 2-core machine, all of
# it taken from the decode thread (they share the GIL and the cores). The fewer the outputs, the cheaper each update.
# `target_token_s`: the target alone's seconds per token (None without one), the per-round time chart's reference.
RUN_VIEWS = ("status", "live", "output", "log", "metrics", "compare", "download", "trace", "target_token_s")
AFTER_RUN_VIEWS = tuple(v for v in VIEWS if v not in RUN_VIEWS)


def status(message: str, kind: str = "info") -> dict:
    return {"status": vh.status_html(message, kind)}


class StreamView:
    """The live text, round log, metric tiles and charts of one run, fed round by round."""

    def __init__(self, prompt: str, greedy: bool, lang: str = DEFAULT_LANG, chart_interval_s: float = 1.0,
                 stream_charts: bool = True, live_log: bool = True):
        """`stream_charts=False` draws the charts at the end only (a fast replay: a browser redrawing two Plotly
        charts every second while rounds pour in has no time left for the user's clicks; a live run: neither has
        its decode). `live_log=False` (a live run) sends the round log at the start and the end only: Gradio's
        HTML component parses and diffs the whole log on every update, and on a 2-core Zen 4 with the browser on
        the same machine that cost the decode ~15 %; the live text shows every round meanwhile."""
        self.lang, self.chart_interval_s, self.stream_charts = lang, chart_interval_s, stream_charts
        self.live_log = live_log
        self.live = vh.LiveText(prompt, greedy, lang=lang, window=APP_LIVE_ROUNDS)
        self.log = vc.RoundLog(greedy, lang=lang)
        self.rounds: list[Round] = []
        self.tokens = 0                          # emitted so far (the status line's count, without the metrics)
        self.metrics = metrics([])
        self._last_chart: float | None = None    # the first update always draws the charts

    def start(self) -> dict:
        """The empty views, before the first round."""
        return {"live": self.live.html(), "log": self.log.html()}

    def add(self, rnd: Round) -> None:
        self.rounds.append(rnd)
        self.tokens += len(rnd.emitted)
        self.live.add(rnd)
        self.log.add(rnd)

    def progress(self) -> dict:
        """The views after the rounds added so far; the charts only if their interval has passed (without
        `stream_charts`, a fast replay: the log and tiles too, and the charts only at the end)."""
        upd = {"live": self.live.appended()}
        now = time.perf_counter()
        due = self._last_chart is None or now - self._last_chart >= self.chart_interval_s
        if due:
            self._last_chart = now
        if due or self.stream_charts:
            self.metrics = metrics(self.rounds)
            upd["metrics"] = vh.metrics_html(self.metrics, lang=self.lang)
            if self.live_log:
                upd["log"] = self.log.html()
        if due and self.stream_charts:
            upd.update(self._charts())
        return upd

    def final(self, prefill_seconds: float | None = None, baseline_tps: float | None = None,
              warmup_seconds: float | None = None, charts: bool = True) -> dict:
        """The finished views: final tiles (with the speedup when there is a baseline) and both charts (without
        `charts`, a live run: they come after its event, `after_run_updates`)."""
        self.metrics = metrics(self.rounds)
        return {"live": self.live.html(), "log": self.log.html(), **(self._charts() if charts else {}),
                "metrics": vh.metrics_html(self.metrics, done=True, prefill_seconds=prefill_seconds,
                                           baseline_tps=baseline_tps, warmup_seconds=warmup_seconds, lang=self.lang)}

    def _charts(self) -> dict:
        return run_charts(self.rounds, self.metrics, self.lang)


def run_charts(rounds: list[Round], m: dict, lang: str, target_token_s: float | None = None) -> dict:
    """The "Acceptance & timing" tab's four charts of a run; `target_token_s` marks the per-round time chart."""
    return {"pos_plot": charts.acceptance_by_position_figure(m["per_position"], lang=lang),
            "time_plot": charts.timeline_figure(rounds, lang=lang),
            "law_plot": accepted_law.accepted_law_figure(rounds, lang=lang),
            "cost_plot": round_time.round_time_figure(rounds, target_token_s, lang=lang)}


def inspector_updates(trace: Trace | None, lang: str = DEFAULT_LANG) -> dict:
    """Point the round inspector at the last round of a finished run (or replay)."""
    n = len(trace.rounds) if trace else 0
    if not n:
        return {}
    r = trace.rounds[-1]
    pos = (r.rejected_at + 1) if r.rejected_at is not None else max(1, r.k)
    return {"insp_round": gr.update(maximum=max(2, n), value=n, interactive=True),
            "insp_pos": gr.update(maximum=max(2, r.k + (1 if r.bonus else 0)), value=pos, interactive=True),
            "insp_plot": charts.inspector_figure(r, pos, trace.greedy, lang=lang),
            "insp_card": vc.round_card_html(r, trace.greedy, lang=lang)}


def after_run_updates(trace: Trace | None, lang: str = DEFAULT_LANG, target_token_s: float | None = None,
                      page: str | None = None) -> dict:
    """The views a live run leaves to the event after it (`AFTER_RUN_VIEWS`): the charts, the round inspector at the
    last round and "Download as HTML" (`page`: the run's exported page, `AppContext.write_html`), from the run's trace
    (and the target alone's time per token, when it ran); nothing without rounds. The page is written here, after
    the run, so that a streaming run's updates carry one output fewer and the decode never waits for it."""
    if trace is None or not trace.rounds:
        return {}
    return {**run_charts(trace.rounds, metrics(trace.rounds), lang, target_token_s), **inspector_updates(trace, lang),
            "download_html": html_download(page)}


def html_download(page: str | None):
    """The "Download as HTML" button holding `page` (a file path), or off where there is none."""
    return gr.update(value=page, interactive=page is not None)

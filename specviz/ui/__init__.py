"""The Gradio app: layout and wiring in `app`, event functions in `tabs/`, no probability arithmetic.

The decoder (`speculative_generate`, `autoregressive_generate`) produces
`Round`/`Step` records, `specviz.viz` turns them into HTML and figures,
`specviz.trace.compare` compares a run with the target alone, `specviz.bench.sweep_k`
measures the throughput-vs-K sweep, and `specviz.strings` holds every word.

Concurrency (`session`): models are loaded once per process and shared by all
sessions; each browser session keeps its own trace in `gr.State` and its own
stop flag. Decoding runs in a worker thread (`worker`) that pushes typed events
into a queue, so the page's rendering never sits inside the timed decode loop;
the decode events share one concurrency slot ("decode") so runs and sweeps never
overlap and their timings stay honest.
"""
from .app import PageSettings, build_app, launch_app
from .inputs import InputError
from .session import PairCache

__all__ = ["PageSettings", "build_app", "launch_app", "InputError", "PairCache"]

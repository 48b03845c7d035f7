"""specviz web app: `python app.py` serves it on 0.0.0.0:7860 (Hugging Face Spaces runs this file).

The packaged Qwen2.5-Coder 0.5B -> 1.5B pair starts loading at once, in the background (about
a minute or two the very first time, a few seconds once converted and cached); a Generate
meanwhile follows the load's progress. SPECVIZ_PRELOAD=0 leaves the load to the first Generate.
Environment: GRADIO_SERVER_NAME, GRADIO_SERVER_PORT / PORT override the address;
SPECVIZ_DEFAULT_PAIR picks the pair the page starts on (e.g. qwen2.5-0.5b-7b on a
GPU Space; a GPU preset is only offered, and only taken, where CUDA is). On a
ZeroGPU Space (SPACES_ZERO_GPU=true) that pair loads at start-up and moves to
cuda outside the decorated calls, as ZeroGPU documents (docs/spaces.md).
"""
import os

if os.environ.get("SPACES_ZERO_GPU", "").strip().lower() in ("1", "t", "true"):
    import spaces  # noqa: F401 - before torch touches CUDA, as ZeroGPU asks

from specviz.ui import PageSettings, build_app, launch_app
from specviz.ui.gpu_calls import preload

# First, so the pair loads (on the models' thread; on ZeroGPU now) while the page is built and the server starts.
preload(os.environ.get("SPECVIZ_DEFAULT_PAIR") or None)
demo = build_app(settings=PageSettings(pair=os.environ.get("SPECVIZ_DEFAULT_PAIR") or None))

if __name__ == "__main__":
    launch_app(demo, server_name=os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0"),
               server_port=int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", "7860"))))

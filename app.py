"""specviz web app: `python app.py` serves it on 0.0.0.0:7860 (Hugging Face Spaces runs this file).

The packaged Qwen2.5-Coder 0.5B -> 1.5B pair loads on the first Generate (about
a minute or two the very first time, a few seconds once converted and cached).
Environment: GRADIO_SERVER_NAME, GRADIO_SERVER_PORT / PORT override the address.
"""
import os

from specviz.ui import build_app, launch_app

demo = build_app()

if __name__ == "__main__":
    launch_app(demo, server_name=os.environ.get("GRADIO_SERVER_NAME", "0.0.0.0"),
               server_port=int(os.environ.get("GRADIO_SERVER_PORT", os.environ.get("PORT", "7860"))))

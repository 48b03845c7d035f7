"""A script that must run before Gradio's own modules: served first in the page's <head> by an ASGI middleware.

Why: Gradio's `head=` is added by Gradio's JavaScript after its modules have loaded, too late for
`assets/raf_guard.js`, which has to be in place before Gradio's status tracker keeps its reference to
`requestAnimationFrame`, and for `assets/first_view.js`, which sets the theme and follows the browser's language
before Gradio starts (either one later costs a reload). So the middleware puts them into the HTML of the page itself,
as the first elements of <head>; every other response passes through untouched.
"""
from __future__ import annotations

import json

from starlette.middleware import Middleware

from ..limits import ASSETS
from ..strings import LANGUAGES
SCRIPTS = ("raf_guard.js", "first_view.js")


def pages() -> dict:
    """What first_view.js knows of the app's pages: the default language and each language's path below the root
    (the default's page is the root; the others are at /<code>, as specviz.ui.app builds them)."""
    root = LANGUAGES[0]
    return {"default": root, "pages": {code: "" if code == root else code for code in LANGUAGES}}


def early_html() -> bytes:
    """The <script> elements the page's <head> starts with: the pages' table, then each script."""
    table = f"<script>window.__svPages = {json.dumps(pages())};</script>"
    return (table + "".join(f"<script>{(ASSETS / name).read_text(encoding='utf-8')}</script>"
                            for name in SCRIPTS)).encode()


class EarlyScript:
    """ASGI middleware: an HTML response (uncompressed, `text/html`) gets `html` right after its first `<head>`."""

    def __init__(self, app, html: bytes):
        self.app, self.html = app, html

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "GET":
            await self.app(scope, receive, send)
            return
        start: dict | None = None
        chunks: list[bytes] = []

        async def held(message):
            nonlocal start
            if message["type"] == "http.response.start":
                headers = {k.lower(): v for k, v in message.get("headers", [])}
                if headers.get(b"content-type", b"").startswith(b"text/html") and b"content-encoding" not in headers:
                    start = message    # held until the whole body is here
                    return
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                body = b"".join(chunks).replace(b"<head>", b"<head>" + self.html, 1)
                headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
                await send({**start, "headers": headers + [(b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
            await send(message)

        await self.app(scope, receive, held)


def middleware() -> Middleware:
    """For `launch(app_kwargs={"middleware": [...]})`: FastAPI takes a list of Starlette `Middleware`."""
    return Middleware(EarlyScript, html=early_html())

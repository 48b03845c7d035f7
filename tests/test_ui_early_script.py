"""The page's first script (specviz.ui.early_script): injected at the top of <head> of HTML pages, nothing else touched."""
from starlette.applications import Starlette
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from specviz.ui import early_script

PAGE = "<!doctype html><html><head><script type=module src=app.js></script></head><body><head></head></body></html>"


def _client(html: bytes = b"<script>first()</script>") -> TestClient:
    async def page(request):
        return HTMLResponse(PAGE)

    async def streamed(request):
        async def parts():
            for part in (PAGE[:20], PAGE[20:45], PAGE[45:]):
                yield part.encode()
        return StreamingResponse(parts(), media_type="text/html; charset=utf-8")

    async def data(request):
        return JSONResponse({"html": "<head>"})

    async def zipped(request):
        return Response(b"<head>zipped", media_type="text/html", headers={"content-encoding": "x-test"})

    app = Starlette(routes=[Route("/", page, methods=["GET", "POST"]), Route("/s", streamed), Route("/j", data),
                            Route("/z", zipped)])
    return TestClient(early_script.EarlyScript(app, html))


def test_the_script_comes_first_in_head_before_the_modules():
    r = _client().get("/")
    assert r.text.startswith("<!doctype html><html><head><script>first()</script><script type=module")
    assert r.text.count("first()") == 1   # the first <head> only
    assert int(r.headers["content-length"]) == len(r.content)


def test_a_streamed_page_is_joined_then_injected():
    r = _client().get("/s")
    assert "<head><script>first()</script><script type=module" in r.text
    assert int(r.headers["content-length"]) == len(r.content)


def test_other_responses_pass_untouched():
    c = _client()
    assert c.get("/j").json() == {"html": "<head>"}
    assert c.get("/z").content == b"<head>zipped"   # compressed: left alone
    assert "first()" not in c.post("/").text


def test_the_shipped_scripts_are_the_pages_table_the_raf_guard_and_the_first_view():
    html = early_script.early_html().decode()
    assert html.startswith("<script>window.__svPages = ") and "</script>" in html
    assert html.index("window.__svRaf") < html.index("__theme")   # the guard first, then first_view.js
    assert html.count("</script>") == len(early_script.SCRIPTS) + 1   # no file closes its own element early


def test_the_pages_table_names_the_root_language_and_the_others_paths():
    from specviz.strings import LANGUAGES

    table = early_script.pages()
    assert table["default"] == LANGUAGES[0] and table["pages"][LANGUAGES[0]] == ""
    assert all(table["pages"][code] == code for code in LANGUAGES[1:]) and set(table["pages"]) == set(LANGUAGES)

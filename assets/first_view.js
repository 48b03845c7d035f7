// specviz: what a page's first view settles before Gradio's modules start, so that none of it costs a reload.
// 1. The light theme. The palette is tuned for a light page and Gradio takes its theme from ?__theme= when its
//    modules start, so the parameter is written into the address here (history.replaceState: no navigation). Until
//    now launch()'s js added it after the whole first render and reloaded the page, which took a second and lost a
//    prompt typed meanwhile.
// 2. ?lang=xx on another language's page: that page, before this one loads (the page's own js after its render,
//    specviz/ui/app.py's language_redirect_js, stays as the fallback).
// 3. The browser's language, once: the first page a tab opens follows navigator.languages (a Spanish browser lands
//    on /es). Never after ?lang= (an explicit choice), never when coming from another page of the app (its language
//    switch), never away from any page but the default language's, never twice in a tab.
// window.__svPages ({default, pages: {code: path below the root}}) is written before this by specviz/ui/early_script.py.
(() => {
  try {
    const cfg = window.__svPages || {default: "en", pages: {en: ""}};
    const u = new URL(window.location.href);
    if (u.searchParams.get("__theme") !== "light") {
      u.searchParams.set("__theme", "light");
      history.replaceState(history.state, "", u.href);
    }
    const codes = Object.keys(cfg.pages), path = u.pathname.replace(/\/+$/, "");
    const here = codes.find((c) => cfg.pages[c] && path.endsWith("/" + cfg.pages[c])) || cfg.default;
    const root = cfg.pages[here] ? path.slice(0, path.length - cfg.pages[here].length - 1) : path;
    const go = (code) => { u.pathname = root + "/" + cfg.pages[code]; window.location.replace(u.href); };
    let first = false, stored = true;
    try {
      first = !window.sessionStorage.getItem("specviz.seen");
      window.sessionStorage.setItem("specviz.seen", "1");
    } catch (e) { stored = false; }   // no storage (a sandboxed frame): no browser-language redirect, it could not be remembered
    const asked = (u.searchParams.get("lang") || "").toLowerCase().slice(0, 2);
    if (asked) {
      if (codes.includes(asked) && asked !== here) go(asked);
      return;
    }
    if (!stored || !first || here !== cfg.default) return;
    let from = null;
    try { from = document.referrer ? new URL(document.referrer).origin : null; } catch (e) { from = null; }
    if (from === u.origin) return;
    const liked = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language])
      .map((l) => String(l || "").toLowerCase().slice(0, 2));
    const want = liked.find((c) => codes.includes(c));
    if (want && want !== here) go(want);
  } catch (e) { /* never in the page's way */ }
})();

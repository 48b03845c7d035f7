// specviz: what a page's first view settles before Gradio's modules start, so that none of it costs a reload.
// 1. The light theme. The palette is tuned for a light page and Gradio takes its theme from ?__theme= when its
//    modules start, so the parameter is written into the address here (history.replaceState: no navigation). Until
//    now launch()'s js added it after the whole first render and reloaded the page, which took a second and lost a
//    prompt typed meanwhile.
// 2. The browser's language, once: the first page a tab opens follows navigator.languages (a Spanish browser lands
//    on /es). Never after ?lang= (an explicit choice, handled by the page), never when coming from another page of
//    the app (its language switch), never away from any page but the default language's, never twice in a tab.
// window.__svPages ({default, pages: {code: path below the root}}) is written before this by specviz/ui/early_script.py.
(() => {
  try {
    const cfg = window.__svPages || {default: "en", pages: {en: ""}};
    const u = new URL(window.location.href);
    if (u.searchParams.get("__theme") !== "light") {
      u.searchParams.set("__theme", "light");
      history.replaceState(history.state, "", u.href);
    }
    let first = false;
    try {
      first = !window.sessionStorage.getItem("specviz.seen");
      window.sessionStorage.setItem("specviz.seen", "1");
    } catch (e) { return; }   // no storage (a sandboxed frame): never redirect, it could not be remembered
    if (!first || u.searchParams.has("lang")) return;
    let from = null;
    try { from = document.referrer ? new URL(document.referrer).origin : null; } catch (e) { from = null; }
    if (from === u.origin) return;
    const codes = Object.keys(cfg.pages), path = u.pathname.replace(/\/+$/, "");
    const here = codes.find((c) => cfg.pages[c] && path.endsWith("/" + cfg.pages[c])) || cfg.default;
    if (here !== cfg.default) return;
    const liked = (navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language])
      .map((l) => String(l || "").toLowerCase().slice(0, 2));
    const want = liked.find((c) => codes.includes(c));
    if (!want || want === here) return;
    u.pathname = path + "/" + cfg.pages[want];
    window.location.replace(u.href);
  } catch (e) { /* never in the page's way */ }
})();

// specviz: token and tile details on hover, tap and keyboard focus (not only native tooltips, which touch screens
// never show). Any element with data-tip gets a popover with that text; the text is set with textContent, never
// parsed as markup. Delegated on the document, so it survives Gradio re-rendering the views.
(() => {
  if (window.__svTip) return;
  window.__svTip = true;
  let tip = null, owner = null;
  const make = () => {
    tip = document.createElement("div");
    tip.id = "sv-tip";
    tip.setAttribute("role", "tooltip");
    tip.hidden = true;
    document.body.appendChild(tip);
  };
  const place = (el) => {
    const r = el.getBoundingClientRect(), vw = document.documentElement.clientWidth;
    tip.style.maxWidth = Math.min(440, vw - 16) + "px";
    const w = tip.offsetWidth, h = tip.offsetHeight;
    const left = Math.max(8, Math.min(r.left, vw - w - 8));
    const below = r.bottom + 6 + h <= window.innerHeight || r.top - 6 - h < 0;
    tip.style.left = left + "px";
    tip.style.top = (below ? r.bottom + 6 : r.top - 6 - h) + "px";
  };
  const show = (el) => {
    if (!tip) make();
    owner = el;
    tip.textContent = el.getAttribute("data-tip");
    tip.hidden = false;
    el.setAttribute("aria-describedby", "sv-tip");
    place(el);
  };
  const hide = () => {
    if (owner) owner.removeAttribute("aria-describedby");
    owner = null;
    if (tip) tip.hidden = true;
  };
  const target = (e) => (e.target && e.target.closest) ? e.target.closest("[data-tip]") : null;
  document.addEventListener("mouseover", (e) => { const el = target(e); if (el) show(el); });
  document.addEventListener("mouseout", (e) => {
    const el = target(e);
    if (el && el === owner && document.activeElement !== el) hide();
  });
  document.addEventListener("focusin", (e) => { const el = target(e); if (el) show(el); else hide(); });
  document.addEventListener("focusout", (e) => { if (target(e) === owner) hide(); });
  document.addEventListener("click", (e) => { const el = target(e); if (el) show(el); else hide(); });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") hide(); });
  window.addEventListener("scroll", () => { if (owner) place(owner); }, true);
})();

// specviz: a number box whose text is not zero but reads as 0 in the browser (1e-400, an underflow) would send 0:
// a run went greedy under "1e-400", with no word. The server cannot tell that 0 from a typed 0, so when the box is
// left it sends the least number of the text's sign instead (5e-324, a float's smallest; -5e-324), and shows it:
// the server's checks then refuse it as the non-zero number it is (a temperature: the sentence of 0.005), or take it
// as the tiny number it is where a range allows one.
(() => {
  if (window.__svZeroBox) return;
  window.__svZeroBox = true;
  document.addEventListener("change", (e) => {
    const el = e.target;
    if (!(el instanceof HTMLInputElement) || el.type !== "number" || el.value === "") return;
    const text = el.value.trim();
    const mantissa = text.split(/e/i)[0];
    if (Number(text) !== 0 || !/[1-9]/.test(mantissa)) return;
    el.value = (text.startsWith("-") ? "-" : "") + Number.MIN_VALUE;
    el.dispatchEvent(new Event("input", { bubbles: true }));   // the box's value follows its text on "input"
  }, true);
})();

// specviz: the "Use via API" panel asks /gradio_api/mcp/schema whether this app serves MCP, and reads a 404 as "no";
// that probe put a 404 in the server's log and the browser's console on every opening. This app serves no MCP
// (the page's config says so: mcp_server false), so the probe is answered here, with the same "no", and never sent.
(() => {
  if (window.__svMcpProbe || typeof window.fetch !== "function") return;
  window.__svMcpProbe = true;
  const send = window.fetch.bind(window);
  window.fetch = (input, init) => {
    const url = typeof input === "string" ? input : (input && input.url) || "";
    const config = window.gradio_config;
    if (/\/gradio_api\/mcp\/schema(\?|$)/.test(url) && config && config.mcp_server === false) {
      return Promise.resolve(new Response("MCP is not served by this app", { status: 404, statusText: "Not Found" }));
    }
    return send(input, init);
  };
})();

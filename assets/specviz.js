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

// specviz (issue 30): a number box that reads as 0 in the browser (1e-400, a denormal's underflow) sends 0 while it
// still shows its text, so a run went greedy under "1e-400". When the box is left, it shows the number it sends.
(() => {
  if (window.__svZeroBox) return;
  window.__svZeroBox = true;
  document.addEventListener("change", (e) => {
    const el = e.target;
    if (!(el instanceof HTMLInputElement) || el.type !== "number" || el.value === "") return;
    const mantissa = el.value.split(/e/i)[0];
    if (Number(el.value) === 0 && /[1-9]/.test(mantissa)) el.value = "0";
  }, true);
})();

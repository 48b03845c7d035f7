// specviz: an exported run stepped round by round, offline (written into the page by specviz/viz/export.py).
// Everything shown is already in the file: each round's text and card (escaped by specviz.viz when the file was
// written) is shown or hidden here, and the tiles' and charts' numbers come from the JSON block. Every text this
// script writes goes through textContent or an attribute, never through markup, so a token is always text.
(() => {
  "use strict";
  const $ = (id) => document.getElementById(id);
  const data = JSON.parse($("sv-x-data").textContent);
  const W = data.words, N = data.total, NS = "http://www.w3.org/2000/svg";

  // A strings-table template: {name} and the plural spec {name:one|other} (specviz.strings.fill's rule: 1 is singular).
  const fill = (tpl, values) => tpl.replace(/\{(\w+)(?::([^|{}]*)\|([^{}]*))?\}/g, (m, name, one, other) => {
    const v = values[name];
    return one === undefined ? String(v) : v + " " + (String(v) === "1" ? one : other);
  });
  const svgEl = (tag, attrs, text) => {
    const e = document.createElementNS(NS, tag);
    for (const k of Object.keys(attrs)) e.setAttribute(k, String(attrs[k]));
    if (text !== undefined) e.textContent = text;
    return e;
  };

  const byRound = (selector) => {
    const out = [];
    document.querySelectorAll(selector).forEach((e) => { out[Number(e.getAttribute("data-round")) - 1] = e; });
    return out;
  };
  const live = byRound("#sv-live .sv-round"), cards = byRound("#sv-log .sv-card[data-round]");
  const slider = $("sv-x-slider"), label = $("sv-x-label"), playBtn = $("sv-x-play");
  let shown = -1, timer = null;

  const drawAcceptance = (n) => {
    const svg = $("sv-x-acc"), reached = [], accepted = [];
    svg.replaceChildren();
    for (let r = 0; r < n; r++) {
      const [k, a] = data.rounds[r];
      for (let i = 0; i < k; i++) {
        reached[i] = (reached[i] || 0) + 1;
        accepted[i] = (accepted[i] || 0) + (i < a ? 1 : 0);
      }
    }
    const L = 46, R = 10, T = 22, B = 38, w = 600, h = 240, ph = h - T - B, K = reached.length;
    axes(svg, L, R, T, B, w, h, ["0%", "50%", "100%"], W.acc_x);
    if (!K) { svg.appendChild(svgEl("text", { x: w / 2, y: h / 2, "text-anchor": "middle", class: "sv-x-empty" }, W.no_rounds)); return; }
    const slot = (w - L - R) / K, bw = Math.min(60, slot * 0.7);
    for (let i = 0; i < K; i++) {
      const share = accepted[i] / reached[i], x = L + slot * i + (slot - bw) / 2, y = T + ph * (1 - share);
      const g = svgEl("g", { "data-pos": i + 1, "data-share": share.toFixed(4) });
      g.appendChild(svgEl("title", {}, fill(W.acc_bar, { pos: i + 1, share: Math.round(100 * share) + "%", n: reached[i] })));
      g.appendChild(svgEl("rect", { x, y, width: bw, height: Math.max(0, T + ph - y), fill: data.colors.accepted }));
      g.appendChild(svgEl("text", { x: x + bw / 2, y: y - 4, "text-anchor": "middle" }, Math.round(100 * share) + "%"));
      g.appendChild(svgEl("text", { x: x + bw / 2, y: T + ph + 16, "text-anchor": "middle" }, String(i + 1)));
      svg.appendChild(g);
    }
  };

  const drawTiming = (n) => {
    const svg = $("sv-x-time"), first = Math.max(0, n - data.window), rows = data.rounds.slice(first, n);
    svg.replaceChildren();
    const L = 58, R = 10, T = 22, B = 38, w = 600, h = 240, ph = h - T - B;
    const top = Math.max(1e-9, ...rows.map((r) => r[2] + r[3])), digits = top >= 100 ? 0 : 1;
    axes(svg, L, R, T, B, w, h, ["0", (top / 2).toFixed(digits), top.toFixed(digits)], W.time_x);
    svg.appendChild(svgEl("text", { x: 4, y: 12, class: "sv-x-axis" }, "ms"));
    if (!rows.length) { svg.appendChild(svgEl("text", { x: w / 2, y: h / 2, "text-anchor": "middle", class: "sv-x-empty" }, W.no_rounds)); return; }
    const slot = (w - L - R) / Math.max(rows.length, 10), bw = Math.max(2, slot * 0.75), every = Math.ceil(rows.length / 10);
    rows.forEach(([, , draft, verify, emitted], j) => {
      const round = first + j + 1, x = L + slot * j + (slot - bw) / 2;
      const hd = ph * draft / top, hv = ph * verify / top, current = round === n;
      const g = svgEl("g", { "data-round": round, class: current ? "sv-x-now" : "" });
      g.appendChild(svgEl("title", {}, fill(W.time_bar, { round, draft: draft.toFixed(1), verify: verify.toFixed(1), tokens: emitted })));
      g.appendChild(svgEl("rect", { x, y: T + ph - hd, width: bw, height: hd, fill: data.colors.q }));
      g.appendChild(svgEl("rect", { x, y: T + ph - hd - hv, width: bw, height: hv, fill: data.colors.p }));
      if (current) g.appendChild(svgEl("rect", { x: x - 1.5, y: T + ph - hd - hv - 1.5, width: bw + 3, height: hd + hv + 3, class: "sv-x-outline" }));
      if (current || j % every === 0) g.appendChild(svgEl("text", { x: x + bw / 2, y: T + ph + 16, "text-anchor": "middle" }, String(round)));
      svg.appendChild(g);
    });
  };

  function axes(svg, L, R, T, B, w, h, ticks, xTitle) {
    const ph = h - T - B;
    ticks.forEach((tick, i) => {
      const y = T + ph * (1 - i / (ticks.length - 1));
      svg.appendChild(svgEl("line", { x1: L, x2: w - R, y1: y, y2: y, class: "sv-x-grid" }));
      svg.appendChild(svgEl("text", { x: L - 4, y: y + 4, "text-anchor": "end" }, tick));
    });
    svg.appendChild(svgEl("text", { x: (L + w - R) / 2, y: h - 4, "text-anchor": "middle", class: "sv-x-axis" }, xTitle));
  }

  const show = (n) => {
    n = Math.max(0, Math.min(N, Math.floor(Number(n) || 0)));
    const lo = shown < 0 ? 0 : Math.min(shown, n), hi = shown < 0 ? N : Math.max(shown, n);
    for (let i = lo; i < hi; i++) if (live[i]) live[i].hidden = i >= n;
    // The log holds the newest `log_window` cards up to the round shown, as the app's log does: a page that laid
    // out thousands of cards at once took seconds a step. Only the cards entering or leaving the window change.
    const inLog = (i, m) => i < m && i >= m - data.log_window;
    const ranges = shown < 0 ? [[0, N]] : [[shown - data.log_window, shown], [n - data.log_window, n]];
    for (const [a, b] of ranges) {
      for (let i = Math.max(0, a); i < Math.min(N, b); i++) if (cards[i]) cards[i].hidden = !inLog(i, n);
    }
    for (const list of [live, cards]) {
      if (shown > 0 && list[shown - 1]) list[shown - 1].classList.remove("sv-x-current");
      if (n > 0 && list[n - 1]) list[n - 1].classList.add("sv-x-current");
    }
    shown = n;
    const tiles = data.tiles[n];
    document.querySelectorAll("#sv-x-tiles .sv-tile[data-metric]").forEach((tile) => {
      const value = tile.querySelector(".sv-tile-value"), key = tile.getAttribute("data-metric");
      if (value) value.textContent = Object.prototype.hasOwnProperty.call(tiles, key) ? tiles[key] : "—";
    });
    $("sv-log-empty").hidden = n > 0;
    $("sv-log-more").hidden = n <= data.log_window;
    label.textContent = n === 0 ? fill(W.start, { total: N }) : fill(W.round_of, { n, total: N });
    document.body.setAttribute("data-round", String(n));
    slider.value = String(n);
    $("sv-x-first").disabled = $("sv-x-prev").disabled = n === 0;
    $("sv-x-next").disabled = $("sv-x-last").disabled = n === N;
    $("sv-live").scrollTop = $("sv-live").scrollHeight;   // the round shown is the last one in the text
    $("sv-log").scrollTop = 0;                            // ... and the first card of the log, newest first
    drawAcceptance(n);
    drawTiming(n);
  };

  const pause = () => {
    if (timer !== null) clearInterval(timer);
    timer = null;
    playBtn.textContent = W.play;
    playBtn.setAttribute("aria-pressed", "false");
  };
  const play = () => {
    if (timer !== null) { pause(); return; }
    if (shown >= N) show(0);
    timer = setInterval(() => { if (shown >= N) pause(); else show(shown + 1); }, data.interval_ms);
    playBtn.textContent = W.pause;
    playBtn.setAttribute("aria-pressed", "true");
  };
  const step = (n) => { pause(); show(n); };

  $("sv-x-first").addEventListener("click", () => step(0));
  $("sv-x-prev").addEventListener("click", () => step(shown - 1));
  $("sv-x-next").addEventListener("click", () => step(shown + 1));
  $("sv-x-last").addEventListener("click", () => step(N));
  playBtn.addEventListener("click", play);
  slider.addEventListener("input", () => step(slider.value));
  document.addEventListener("keydown", (e) => {
    const tag = e.target && e.target.tagName;
    if (e.altKey || e.ctrlKey || e.metaKey || e.target === slider || tag === "INPUT" || tag === "TEXTAREA") return;
    const to = { ArrowRight: shown + 1, ArrowLeft: shown - 1, Home: 0, End: N }[e.key];
    if (to !== undefined) { e.preventDefault(); step(to); }
    else if (e.key === " " && tag !== "BUTTON") { e.preventDefault(); play(); }
  });
  // A link may open the page at a round: run.html#round=12.
  const asked = /round=(\d+)/.exec(location.hash);
  document.documentElement.classList.add("sv-x-js");
  show(asked ? Number(asked[1]) : data.start);
})();

// specviz: Gradio 6.31's StatusTracker counts a pending event's elapsed time on requestAnimationFrame, and
// a tracker removed while still pending (the page's own "Loading..." tracker, on every page load) never stops: its
// callback asks for the next frame forever, so the browser draws 60 frames a second for as long as the page is open
// (10-20 % of a core in headless Chromium, taken from the decoder when the browser shares its machine). Those timer
// callbacks are recognised by their source and run at most 4 times a second (the timer shows tenths of a second);
// every other callback is untouched. Served first in <head> (specviz/ui/early_script.py), before Gradio's modules load
// and keep a reference to requestAnimationFrame.
(() => {
  if (window.__svRaf) return;
  const raf = window.requestAnimationFrame.bind(window), caf = window.cancelAnimationFrame.bind(window);
  const timer = /\(performance\.now\(\)-[\w$]+\([\w$]+\)\)\/1e3/;   // the tracker's `(performance.now()-w(de))/1e3`
  const slowed = new Map();   // our id (negative, never a browser's) -> [timeout, frame]
  let next = 0;
  // calls and slowed count requests; set `window.__svRaf.sources = {}` to count them by callback source as well.
  const stats = window.__svRaf = {calls: 0, slowed: 0, sources: null};
  window.requestAnimationFrame = (cb) => {
    stats.calls++;
    let src = "";
    try { src = Function.prototype.toString.call(cb); } catch (e) { src = ""; }
    if (stats.sources) stats.sources[src.slice(0, 160)] = (stats.sources[src.slice(0, 160)] || 0) + 1;   // debugging
    if (src.length > 300 || !timer.test(src)) return raf(cb);
    stats.slowed++;
    const id = --next, entry = [0, 0];
    entry[0] = setTimeout(() => { entry[1] = raf((t) => { slowed.delete(id); cb(t); }); }, 250);
    slowed.set(id, entry);
    return id;
  };
  window.cancelAnimationFrame = (id) => {
    const entry = slowed.get(id);
    if (!entry) return caf(id);
    clearTimeout(entry[0]);
    if (entry[1]) caf(entry[1]);
    slowed.delete(id);
  };
})();

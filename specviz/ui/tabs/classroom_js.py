"""The classroom tab's scripts in the browser: the keyboard (→ ← Space, Escape leaves presenter mode), a lesson
link's scroll into view, presenter mode. Split from specviz/ui/tabs/classroom.py so that file stays on its events."""

# Keyboard: → next, ← previous, Space play/pause, whenever the step view is on screen and no field has focus.
KEYS_JS = """
if (!window.__svClassroomKeys) {
  window.__svClassroomKeys = true;
  document.addEventListener('keydown', (e) => {
    const el = e.target, tag = (el && el.tagName || '').toLowerCase();
    // Escape first: the presenter switch keeps the focus after a click, and it is an <input>.
    if (e.key === 'Escape' && document.documentElement.classList.contains('sv-presenter')) {
      const box = document.querySelector('#sv-cls-presenter input');   // leave presenter mode through its switch
      if (box) box.click();
      return;
    }
    // A switch (a checkbox) takes no arrow keys, so with one focused → and ← still step: ticking presenter mode
    // leaves its switch focused. Text boxes, lists and radios keep their own keys.
    const isSwitch = tag === 'input' && ['checkbox', 'button', 'submit'].includes(el.type);
    if ((['input', 'textarea', 'select'].includes(tag) && !isSwitch) || (el && el.isContentEditable)) return;
    if (e.key === ' ' && (tag === 'button' || isSwitch)) return;   // Space on a focused button or switch presses it
    const stage = document.getElementById('sv-cls-stage');
    if (!stage || stage.offsetParent === null || e.altKey || e.ctrlKey || e.metaKey) return;
    const id = {ArrowRight: 'sv-cls-next', ArrowLeft: 'sv-cls-prev', ' ': 'sv-cls-play'}[e.key];
    const button = id && document.getElementById(id);
    if (!button) return;
    e.preventDefault();
    button.click();
  });
}
"""
# A link with ?lesson= opens the lesson in view: once on_load has selected the tab, the step view (or, when the
# lesson or its step was refused, the sentence saying why) is scrolled to the top, below the sticky status.
SCROLL_TO_LESSON_JS = """() => {
  if (!new URLSearchParams(window.location.search).get('lesson')) return;
  const go = (tries) => {
    const refused = document.querySelector('#sv-cls-info [data-kind=error], #sv-cls-info [data-kind=warn]');
    const el = document.getElementById(refused ? 'sv-cls-info' : 'sv-cls-step');
    if (!el || el.offsetParent === null) { if (tries > 0) setTimeout(() => go(tries - 1), 100); return; }
    const status = document.getElementById('sv-status');
    const below = status && getComputedStyle(status).position === 'sticky' ? status.offsetHeight + 12 : 8;
    window.scrollTo({top: el.getBoundingClientRect().top + window.scrollY - below, behavior: 'instant'});
  };
  go(30);
}"""
# Presenter mode is a class on <html> (assets/specviz.css does the rest); switched on, the step comes to the top.
PRESENTER_JS = """(on) => {
  document.documentElement.classList.toggle('sv-presenter', !!on);
  const step = document.getElementById('sv-cls-step');
  if (on && step) setTimeout(() => step.scrollIntoView({block: 'start', behavior: 'instant'}), 50);
  return [];
}"""

// specviz: the live text appends each update's new rounds instead of re-rendering the whole text.
// Runs as the live view's gr.HTML js_on_load (arguments: element, trigger, props, server, upload, watch). The view's
// template is a fixed empty box, so Gradio itself never parses or diffs the text; this script fills the box:
//   a value that starts with the append mark ("<!--sv-live-append W-->") brings the rounds that arrived since the
//   last update (and, once rounds scroll out, the line counting the earlier ones); they are appended and the box
//   keeps the newest W rounds (0: all), as the server's full text does;
//   any other value is the whole text (the start and the end of a run, a replay's jump): it replaces the box.
// Every string in a value was escaped by the server (specviz/viz/html.py); nothing here builds markup.
const box = element.querySelector(".sv-live-text") || element;
const mark = /^<!--sv-live-append (\d+)-->/;
const show = () => {
  const value = props.value || "";
  const m = mark.exec(value);
  if (!m) {
    box.innerHTML = value;
  } else {
    const part = document.createElement("template");
    part.innerHTML = value.slice(m[0].length);
    const note = part.content.querySelector(".sv-earlier");
    if (note) {
      note.remove();
      const old = box.querySelector(":scope > .sv-earlier");
      if (old) old.replaceWith(note);
      else (box.querySelector(":scope > .sv-arrow") || box.firstChild)?.after(note, " ");
    }
    box.append(part.content);
    const rounds = box.querySelectorAll(":scope > .sv-round");
    const keep = Number(m[1]) || rounds.length;   // 0: no window
    for (let i = 0; i < rounds.length - keep; i++) rounds[i].remove();
  }
};
watch("value", show);
show();

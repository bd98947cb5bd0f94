// multimsd studio: the page's frame. Plain JavaScript, no build step, no network beyond this server.
// The server writes the header's view buttons and the views' <script> tags from its registry of views
// (multimsd/studio/registry.py). Each view's script calls studio.register(name, view) with
// view = {main, footer, tools?, init?(info), show?(), key?(event) -> true when it used the key}; the frame puts
// its parts on the page and shows one view at a time. A view's number key is its button's data-key, which the
// server numbers in the registry's order: never the order the scripts happen to load in. The view shown is in
// the URL's #hash (kept on reload). The server holds all state; views draw its latest answer.
"use strict";

const $ = (id) => document.getElementById(id);

const studio = (() => {
  const token = new URLSearchParams(location.search).get("token");

  async function api(path, body) {
    const opts = { headers: token ? { "X-Studio-Token": token } : {} };
    if (body) {
      opts.method = "POST";
      opts.headers["Content-Type"] = "application/json";
      opts.body = JSON.stringify(body);
    }
    const r = await fetch(path, opts);
    const data = await r.json();
    if (!r.ok) throw new Error(data.error || r.status);
    return data;
  }

  const q = (o) => new URLSearchParams(o).toString();

  // Text with <span class=novel|term> over the server's character spans (novel: [start, end], terms: [start,
  // end, term]; overlaps get both classes); textContent only, never HTML. An empty text (a system that wrote
  // nothing) reads "(empty)", as in the report. The outputs and the simplify views draw with it.
  function marked(text, novel, terms, tag = "p") {
    if (!text.trim()) return Object.assign(document.createElement(tag), { className: "text empty", textContent: "(empty)" });
    const cuts = new Set([0, text.length]);
    for (const [a, b] of [...(novel || []), ...(terms || [])]) { cuts.add(a); cuts.add(b); }
    const pts = [...cuts].sort((x, y) => x - y);
    const out = document.createElement(tag);
    out.className = "text";
    for (let k = 0; k + 1 < pts.length; k++) {
      const [a, b] = [pts[k], pts[k + 1]];
      const cls = [];
      if ((novel || []).some(([s, e]) => s <= a && b <= e)) cls.push("novel");
      const t = (terms || []).find(([s, e]) => s <= a && b <= e);
      if (t) cls.push("term");
      const span = document.createElement("span");
      span.textContent = text.slice(a, b);
      if (cls.length) span.className = cls.join(" ");
      if (t) span.title = t[2];
      out.append(span);
    }
    return out;
  }
  const status = (t) => { $("status").textContent = t; };
  const views = {};
  const button = (name) => $("views").querySelector(`[data-view="${CSS.escape(name)}"]`);
  // A view is shown when its script registered it and the server has something for it to show; a button the
  // server marked unavailable (data-why) stays in its place and says why when it is clicked or its key pressed.
  const usable = (name) => Boolean(views[name] && button(name) && !button(name).hidden && !button(name).dataset.why);
  const explain = (b) => status(`${b.textContent}: not available here: ${b.dataset.why}`);
  const first = () => [...$("views").children].map((b) => b.dataset.view).find(usable);

  const self = {
    api, q, status, $, marked, info: null, current: null,
    register(name, view) {
      if (!button(name)) { console.error(`studio: view ${name} is not registered on the server`); return; }
      views[name] = view;
      $("mains").append(view.main);
      $("footers").append(view.footer);
      if (view.tools) $("tools").append(view.tools);
      for (const el of [view.main, view.footer, view.tools]) if (el) el.hidden = true;
    },
    show(name) {
      if (!usable(name)) name = first();
      if (!name) return;
      self.current = name;
      for (const [n, view] of Object.entries(views)) {
        for (const el of [view.main, view.footer, view.tools]) if (el) el.hidden = n !== name;
      }
      for (const b of $("views").children) b.classList.toggle("on", b.dataset.view === name);
      const hash = name === first() ? "" : "#" + name;
      if (location.hash !== hash) history.replaceState(null, "", location.pathname + location.search + hash);
      if (views[name].show) views[name].show();
    },
  };

  document.addEventListener("keydown", (e) => {
    // Typing into a field is not a command: a digit in a text box must not switch the view.
    if (["INPUT", "SELECT", "TEXTAREA"].includes(e.target.tagName) || e.target.isContentEditable) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const view = views[self.current];  // the view sees its keys first (a digit may be a rating there)
    if (view && view.key && view.key(e)) { e.preventDefault(); return; }
    const b = /^[1-9]$/.test(e.key) && $("views").querySelector(`[data-key="${e.key}"]`);
    if (b && b.dataset.why) { explain(b); e.preventDefault(); return; }
    if (b && usable(b.dataset.view)) { self.show(b.dataset.view); e.preventDefault(); }
  });
  $("views").onclick = (e) => {
    const b = e.target.closest("button");
    if (b && b.dataset.why) explain(b);
    else if (b && b.dataset.view) self.show(b.dataset.view);
  };

  // The views' scripts run before this event (they follow this one in the page): every view is registered.
  window.addEventListener("DOMContentLoaded", async () => {
    try {
      self.info = await api("/api/info");
      self.show(location.hash.slice(1));
      for (const [name, view] of Object.entries(views)) if (view.init && usable(name)) await view.init(self.info);
    } catch (e) { status(`cannot load: ${e.message}`); }
  });
  return self;
})();
window.studio = studio;

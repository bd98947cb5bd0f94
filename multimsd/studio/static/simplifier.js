// multimsd studio, the "simplify" view: type or paste a paragraph, pick one of the run's systems, and read its
// simplification sentence by sentence beside the source: novel words and medical terms marked as in the outputs
// view, and each sentence the safety checks flag (a number, a unit, a negation or a term of the source not kept)
// highlighted with its reasons. The server does the work (/api/simplify: `multimsd simplify` on one document,
// the same system, decoding and checks); the page sends the text and draws the answer.
"use strict";

(() => {
  const st = window.studio;
  const el = (tag, props = {}, ...kids) => {
    const e = Object.assign(document.createElement(tag), props);
    e.append(...kids);
    return e;
  };
  document.head.append(el("style", { textContent: `
#view-simplify { display: grid; grid-template-columns: minmax(240px, 1fr) 2fr; gap: 8px; }
#view-simplify section { display: flex; flex-direction: column; }
#simplify-text { flex: 1 1 auto; min-height: 8em; margin: 6px; font: 15px/1.6 system-ui, sans-serif; resize: none; }
#simplify-result table { border-collapse: collapse; width: 100%; }
#simplify-result td { vertical-align: top; padding: 4px 8px; border-bottom: 1px solid #eee; font-size: 15px; line-height: 1.5; }
#simplify-result td .text { margin: 0; }
#simplify-result th { text-align: left; font-size: 12px; color: #555; padding: 2px 8px; }
#simplify-result tr.flagged td { background: #fde8e8; }
#simplify-result td.source, #simplify-result td.output { width: 36%; }
#simplify-result td.flags { font-size: 12px; color: #a61b1b; width: 28%; }
#simplify-system { max-width: 28em; }
#simplify-result td.flags p { margin: 0 0 2px; }
#simplify-result td.flags p.cut { color: #555; }
#simplify-summary { padding: 4px 8px; font-size: 12px; color: #555; }
#simplify-tools { display: inline-flex; gap: 10px; align-items: center; flex-wrap: wrap; }
#simplify-tools .legend span { padding: 0 4px; }
#simplify-tools .legend .flagged { background: #fde8e8; }
` }));

  const langSel = el("select", { id: "simplify-lang" });
  const sysSel = el("select", { id: "simplify-system" });
  const go = el("button", { id: "simplify-go", title: "Ctrl+Enter", textContent: "simplify" });
  // a language the system was not trained or prompted on is refused unless this is ticked (then: a warning)
  const anyLang = el("input", { type: "checkbox", id: "simplify-any-lang" });
  const legend = el("span", { className: "legend" }, el("span", { className: "novel" }, "novel word"), " ",
    el("span", { className: "term" }, "medical term"), " ", el("span", { className: "flagged" }, "flagged"));
  const tools = el("span", { id: "simplify-tools" },
    el("label", {}, "language ", langSel), el("label", {}, "system ", sysSel),
    el("label", { title: "simplify a language the system was not trained on, with a warning" }, anyLang, " any language"),
    go, legend);
  const text = el("textarea", {
    id: "simplify-text", spellcheck: false,
    placeholder: "Type or paste a paragraph, then Ctrl+Enter (or the simplify button).",
  });
  const summary = el("div", { id: "simplify-summary" });
  const result = el("section", { id: "simplify-result" }, el("h2", {}, "simplified"), summary);
  const main = el("main", { id: "view-simplify" }, el("section", {}, el("h2", {}, "text"), text), result);
  const footer = el("footer", { id: "keys-simplify" });
  footer.innerHTML = "keys: <kbd>e</kbd> edit the text · <kbd>Ctrl</kbd>+<kbd>Enter</kbd> simplify · " +
    "<kbd>Esc</kbd> leave the text · <kbd>1</kbd>, <kbd>2</kbd>, … switch view";
  let busy = false;

  function draw(r) {
    const rows = r.sentences.map((s) => {
      const tr = el("tr", { className: s.flags.length ? "flagged" : "" },
        el("td", { className: "source" }, st.marked(s.source, [], s.source_terms)),
        el("td", { className: "output" }, st.marked(s.output, s.novel, s.terms)),
        el("td", { className: "flags" }, ...s.flags.map((f) => el("p", { textContent: f }))));
      return tr;
    });
    const head = el("tr", {}, el("th", {}, "source"), el("th", {}, "output"), el("th", {}, "safety"));
    const n = r.sentences.length;
    summary.textContent = `${r.system}: ${n} sentence${n === 1 ? "" : "s"}, ${r.flagged} flagged · ` +
      `${r.seconds.toFixed(2)} s` + (r.load_seconds > 0.05 ? ` (+ ${r.load_seconds.toFixed(1)} s loading the model)` : "");
    const terms = el("p", { className: "terms-note", textContent: `medical terms: ${r.terms}` });
    result.replaceChildren(result.firstChild, summary, el("table", {}, head, ...rows), terms);
  }

  async function simplify() {
    if (busy) return;
    if (!text.value.trim()) { st.status("type or paste a paragraph first"); text.focus(); return; }
    busy = true; go.disabled = true;
    st.status(`simplifying with ${sysSel.value}…`);
    try {
      const r = await st.api("/api/simplify",
        { text: text.value, lang: langSel.value, system: sysSel.value, any_lang: anyLang.checked });
      draw(r);
      st.status(`simplified: ${r.flagged} of ${r.sentences.length} sentences flagged` +
        (r.warning ? ` · warning: ${r.warning}` : ""));
    } catch (e) { st.status(`not simplified: ${e.message}`); }
    busy = false; go.disabled = false;
  }

  go.onclick = simplify;
  text.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) { e.preventDefault(); simplify(); }
    if (e.key === "Escape") text.blur();  // the view's keys (and 1, 2, …) work again
  });
  for (const s of [langSel, sysSel]) s.addEventListener("change", () => {
    localStorage.setItem("multimsd-simplify", JSON.stringify({ lang: langSel.value, system: sysSel.value }));
  });

  st.register("simplify", {
    main, footer, tools,
    init(info) {
      const v = info.simplify;
      summary.textContent = v.note;  // e.g. a run that has not finished: why the system selected is selected
      langSel.replaceChildren(...v.languages.map((l) => new Option(l, l)));
      sysSel.replaceChildren(...v.systems.map((s) => {
        const o = new Option(s.usable ? s.name : `${s.name} (cannot simplify)`, s.name);
        o.disabled = !s.usable;
        o.title = s.why;  // why not, on hover
        return o;
      }));
      let saved = {};
      try { saved = JSON.parse(localStorage.getItem("multimsd-simplify")) || {}; } catch (e) { saved = {}; }
      const usable = v.systems.filter((s) => s.usable).map((s) => s.name);
      sysSel.value = usable.includes(saved.system) ? saved.system : v.default;
      // the language the page remembers, else the first the selected system was trained on
      const trained = (v.systems.find((s) => s.name === sysSel.value) || {}).languages || [];
      langSel.value = v.languages.includes(saved.lang) ? saved.lang : (trained[0] || "en");
    },
    key(e) {
      if (e.key === "e") { text.focus(); return true; }
      return false;
    },
  });
})();

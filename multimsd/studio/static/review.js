// multimsd studio, the "outputs" view: a run's test outputs side by side (input, reference, every system),
// novel words and medical terms highlighted (spans computed by the server), and ratings 1-5 of simplicity,
// meaning and fluency, blind if you like (b: names hidden, order shuffled per item by the server).
// The server holds the ratings (journal + ratings file); the page draws its latest answer.
"use strict";

(() => {
  const st = window.studio;
  const CRIT = [["simplicity", "s"], ["meaning", "m"], ["fluency", "f"]];
  const R = {
    lang: null, i: 0, item: null, focus: 0, pending: null,
    blind: localStorage.getItem("multimsd-review-blind") !== "0",  // blind unless switched off
  };
  const el = (tag, props = {}, ...kids) => {
    const e = Object.assign(document.createElement(tag), props);
    e.append(...kids);
    return e;
  };
  // This view's styles travel with it (studio.css stays the alignment view's).
  document.head.append(el("style", { textContent: `
#view-review { display: block; overflow-y: auto; }
#review-tools { display: inline-flex; gap: 10px; align-items: center; flex-wrap: wrap; }
#view-review section { margin: 0 0 8px; padding: 0 0 4px; }
#view-review .text { margin: 4px 10px; font-size: 15px; line-height: 1.6; }
#view-review .text.empty { color: #888; font-style: italic; }
#view-review .src { background: #fafafa; }
#view-review .out.focus { outline: 2px solid #3366cc; }
#view-review .rate { margin: 2px 10px; display: flex; gap: 4px; align-items: center; }
#view-review .rate .crit { width: 9em; font-size: 12px; color: #555; }
#view-review .rate.pending .crit { color: #3366cc; font-weight: 600; }
#view-review .rate button { width: 2.2em; border: 1px solid #bbb; background: #fff; border-radius: 3px; cursor: pointer; }
#view-review .rate button.on { background: #3366cc; color: #fff; border-color: #3366cc; }
#review-tools .legend span { padding: 0 4px; }
` }));

  // ---- DOM: header tools, main, footer
  const langSel = el("select", { id: "review-lang" });
  const pos = el("span", { id: "review-pos" });
  const prog = el("span", { id: "review-progress" });
  const blindBox = el("input", { type: "checkbox", id: "review-blind", title: "b" });
  const legend = el("span", { className: "legend" },
    el("span", { className: "novel" }, "novel word"), " ", el("span", { className: "term" }, "medical term"));
  const tools = el("span", { id: "review-tools" },
    el("label", {}, "language ", langSel), el("button", { id: "review-prev", title: "p", textContent: "◀" }), pos,
    el("button", { id: "review-next", title: "n", textContent: "▶" }), prog,
    el("label", {}, blindBox, " blind"), legend);
  const main = el("main", { id: "view-review" });
  const footer = el("footer", { id: "keys-review" });
  footer.innerHTML = "keys: <kbd>n</kbd>/<kbd>p</kbd> next / previous item · <kbd>j</kbd>/<kbd>k</kbd> " +
    "next / previous output · <kbd>s</kbd> <kbd>m</kbd> <kbd>f</kbd> then <kbd>1</kbd>–<kbd>5</kbd>: rate " +
    "simplicity, meaning, fluency (or click) · <kbd>b</kbd> blind on / off";

  // ---- drawing
  const marked = st.marked;  // the frame's: the simplify view draws its marks the same way

  function draw() {
    const v = R.item;
    if (!v) return;
    R.focus = Math.max(0, Math.min(R.focus, v.outputs.length - 1));
    pos.textContent = `item ${v.i + 1} / ${v.n}`;
    const p = v.progress.find((x) => x.lang === v.lang) || { rated: 0, items: v.n, started: 0 };
    prog.textContent = `${p.rated} / ${p.items} items rated` + (p.started > p.rated ? ` (${p.started - p.rated} begun)` : "");
    blindBox.checked = R.blind;
    const blocks = [
      el("section", { className: "src" }, el("h2", {}, "input"), marked(v.input.text, [], v.input.terms)),
      el("section", { className: "ref" }, el("h2", {}, "reference"),
        ...v.references.map((r) => marked(r.text, r.novel, r.terms))),
    ];
    v.outputs.forEach((o, k) => {
      const card = el("section", { className: "out" + (k === R.focus ? " focus" : "") });
      card.dataset.slot = o.slot;
      card.append(el("h2", {}, o.system ? `${o.slot} · ${o.system}` : o.slot), marked(o.text, o.novel, o.terms));
      for (const [c, key] of CRIT) {
        const row = el("div", { className: "rate" }, el("span", { className: "crit" }, `${c} (${key})`));
        row.dataset.crit = c;
        for (let x = 1; x <= 5; x++) {
          const b = el("button", { textContent: String(x) });
          if (o.ratings[c] === x) b.className = "on";
          b.onclick = () => { R.focus = k; rate(k, c, x); };
          row.append(b);
        }
        if (R.pending === c && k === R.focus) row.classList.add("pending");
        card.append(row);
      }
      card.onclick = (e) => { if (e.target.tagName !== "BUTTON" && R.focus !== k) { R.focus = k; draw(); } };
      blocks.push(card);
    });
    main.replaceChildren(...blocks);
    const f = main.querySelector(".out.focus");
    if (f) f.scrollIntoView({ block: "nearest" });
  }

  async function load(lang, i) {
    try {
      R.item = await st.api("/api/review?" + st.q({ lang, i, blind: R.blind ? 1 : 0 }));
      R.lang = lang; R.i = R.item.i; R.pending = null;
      localStorage.setItem("multimsd-review-at", JSON.stringify([R.lang, R.i]));
      draw();
    } catch (e) { st.status(`cannot load item: ${e.message}`); }
  }

  async function rate(k, crit, value) {
    const v = R.item, o = v.outputs[k];
    R.pending = null;
    try {
      const r = await st.api("/api/rate", { lang: v.lang, i: v.i, slot: o.slot, blind: v.blind, values: { [crit]: value } });
      R.item = r.item;
      st.status(`rating saved (#${r.seq}): ${o.slot} ${crit} ${value}`);
      draw();
    } catch (e) { st.status(`not saved: ${e.message}`); draw(); }
  }

  function setBlind(on) {
    R.blind = on;
    localStorage.setItem("multimsd-review-blind", on ? "1" : "0");
    R.focus = 0;
    load(R.lang, R.i);
  }

  function move(d) {
    if (!R.item) return;
    const i = R.i + d;
    if (i >= 0 && i < R.item.n) { R.focus = 0; load(R.lang, i); }
  }

  langSel.onchange = () => { langSel.blur(); load(langSel.value, 0); };
  blindBox.onchange = () => { blindBox.blur(); setBlind(blindBox.checked); };  // keys go to the view again
  tools.querySelector("#review-prev").onclick = () => move(-1);
  tools.querySelector("#review-next").onclick = () => move(1);

  st.register("review", {
    main, footer, tools,
    async show() {
      if (R.item) return;
      let langs = [];
      try { langs = (await st.api("/api/info")).review.languages; } catch (e) { st.status(`cannot load: ${e.message}`); }
      langSel.replaceChildren(...langs.map((l) => new Option(`${l.lang} (${l.items})`, l.lang)));
      let at = null;
      try { at = JSON.parse(localStorage.getItem("multimsd-review-at")); } catch (e) { at = null; }
      const ok = at && langs.some((l) => l.lang === at[0] && at[1] < l.items);
      const lang = ok ? at[0] : (langs[0] || {}).lang;
      if (lang) { langSel.value = lang; load(lang, ok ? at[1] : 0); }
    },
    key(e) {
      const k = e.key;
      if (R.pending && /^[1-5]$/.test(k)) { rate(R.focus, R.pending, Number(k)); return true; }
      if (R.pending && k === "Escape") { R.pending = null; draw(); return true; }
      const c = CRIT.find(([, key]) => key === k);
      if (c && R.item) { R.pending = c[0]; draw(); st.status(`${c[0]} of ${R.item.outputs[R.focus].slot}: press 1–5`); return true; }
      if (k === "n" || k === "p") { move(k === "n" ? 1 : -1); return true; }
      if ((k === "j" || k === "k") && R.item) {
        R.focus = Math.max(0, Math.min(R.item.outputs.length - 1, R.focus + (k === "j" ? 1 : -1)));
        R.pending = null; draw(); return true;
      }
      if (k === "b") { setBlind(!R.blind); return true; }
      return false;
    },
  });
})();

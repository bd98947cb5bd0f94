// multimsd studio, the alignment view: an article pair's sentences side by side, the run's (and --aligner's)
// alignments, ranked candidates, and the keys and clicks that write gold (POST /api/action). Registered on the
// server by multimsd/studio/alignments.py. Positions in the API count from 0; the page numbers sentences from 1
// (the <ol> lists, and each item's label, which the server writes).
"use strict";

(() => {
  const { api, q, status, $ } = window.studio;
  const S = {
    info: null, lang: null, articles: [], view: null,
    item: 0,                                  // cursor in the alignments list
    side: "complex", cur: { complex: 0, simple: 0 },
    sel: { complex: new Set(), simple: new Set() },
    cands: null,                              // {side, idx, candidates, scorers: {name: [{idx, rank, score}]}, combined?}
    hide: new Set(),                          // other aligners (--aligner) whose items the legend hides
    combo: [],                                // the scorers the ranking follows; two or more: their combination
  };

  // The view's parts (the frame puts them on the page: multimsd/studio/static/studio.js).
  const part = (tag, attrs, inner) => {
    const e = document.createElement(tag);
    Object.assign(e, attrs);
    e.innerHTML = inner;  // fixed markup only: every text from the server goes in with textContent
    return e;
  };
  const tools = part("span", { id: "align-tools" }, `
    <label>language <select id="lang"></select></label>
    <label>article <select id="article"></select></label>
    <span id="progress-text"></span>
    <progress id="progress" value="0" max="1"></progress>
    <label>θ <input id="theta" type="number" step="0.01" size="5"></label>
    <button id="above" title="T">accept all ≥ θ</button>
    <button id="undo" title="u">undo</button>`);
  const main = part("main", { id: "view-align" }, `
    <section class="side" id="complex" aria-label="professional sentences"><h2>professional <span class="rank-head"></span></h2><ol></ol></section>
    <section class="items" aria-label="alignments"><div class="head"><h2>alignments</h2><div id="warnings" role="alert" hidden></div><div id="legend" hidden></div><div id="scorer-bar" title="candidate scorers: click ranks by one, shift-click combines"></div></div><ol id="items"></ol></section>
    <section class="side" id="simple" aria-label="consumer sentences"><h2>consumer <span class="rank-head"></span></h2><ol></ol></section>`);
  const footer = part("footer", { id: "keys-align" }, `
    keys: <kbd>1</kbd>, <kbd>2</kbd>, … switch view · <kbd>j</kbd>/<kbd>k</kbd> next / previous alignment · <kbd>a</kbd> accept · <kbd>r</kbd> reject ·
    <kbd>↑</kbd>/<kbd>↓</kbd> sentence cursor, <kbd>←</kbd>/<kbd>→</kbd> side (ranked candidates show on the other side) ·
    <kbd>space</kbd> or click: select sentence · <kbd>l</kbd> link the selected sentences (n:m) · <kbd>u</kbd> undo ·
    <kbd>T</kbd> accept everything ≥ θ · <kbd>n</kbd>/<kbd>p</kbd> next / previous article ·
    <kbd>c</kbd> next candidate scorer (shift-click scorers to combine them)`);
  function items() {
    // The run's alignments first (in document order), then gold items the aligner did not predict, then the
    // items of the other aligners (--aligner) the legend shows, each labelled with its aligner.
    const v = S.view;
    const out = v.predicted.map((p) => ({ ...p, kind: p.status }));
    const overlaps = new Set(v.gold.filter((g) => g.overlaps).map((g) => g.label));
    for (const p of out) p.overlaps = overlaps.has(p.label);  // an accepted prediction is a gold item too
    for (const g of v.gold) if (!g.predicted) out.push({ ...g, kind: "gold-only", score: null });
    for (const o of v.others || []) {
      if (S.hide.has(o.aligner)) continue;
      for (const it of o.items) out.push({ ...it, kind: it.status, aligner: o.aligner });
    }
    return out;
  }

  function runAligner() { return `${S.info.aligner.method}:${S.info.aligner.threshold}`; }

  function drawLegend() {
    // One line per aligner: the run's (always shown: a/r/T act on it) and a toggle for each --aligner.
    const v = S.view, box = $("legend");
    box.replaceChildren();
    box.hidden = !(v.others && v.others.length);
    if (box.hidden) return;
    const run = document.createElement("span");
    run.className = "run";
    run.textContent = `${runAligner()} (run) ${v.predicted.length}`;
    box.append(run);
    for (const o of v.others) {
      const l = document.createElement("label");
      const cb = document.createElement("input");
      cb.type = "checkbox";
      cb.checked = !S.hide.has(o.aligner);
      cb.dataset.aligner = o.aligner;
      cb.onchange = () => { if (cb.checked) S.hide.delete(o.aligner); else S.hide.add(o.aligner); draw(); };
      l.append(cb, ` ${o.aligner} ${o.items.length}`);
      box.append(l);
    }
  }

  function scorerShort(name) { return name === "combined" ? "Σ" : name.slice(0, 3); }

  function drawScorers() {
    // A button per scorer: a click ranks by that scorer, a shift-click adds it to (or takes it out of) the
    // combination (mean rank of the chosen scorers); c cycles through them one at a time.
    const bar = $("scorer-bar");
    const names = (S.info && S.info.align && S.info.align.default_scorers) || [];
    bar.replaceChildren();
    for (const n of names) {
      const b = document.createElement("button");
      b.textContent = n;
      b.dataset.scorer = n;
      b.title = `${scorerShort(n)}: click ranks by ${n}; shift-click combines`;
      b.classList.toggle("on", S.combo.includes(n));
      b.onclick = (e) => {
        if (e.shiftKey) {
          if (S.combo.includes(n)) { if (S.combo.length > 1) S.combo = S.combo.filter((x) => x !== n); }
          else S.combo = [...S.combo, n];
        } else S.combo = [n];
        candidates();
      };
      bar.append(b);
    }
  }

  function rankColumns() {
    // The columns shown next to each candidate: every scorer of the answer, then the combination if any.
    if (!S.cands || !S.cands.scorers) return [];
    const cols = Object.keys(S.cands.scorers);
    if (S.cands.combined) cols.push("combined");
    return cols;
  }

  function rankOf(name) {
    const list = name === "combined" ? S.cands.combined.ranking : S.cands.scorers[name];
    const out = {};
    for (const c of list) out[c.idx] = c;
    return out;
  }

  function draw() {
    const v = S.view;
    if (!v) return;
    const its = items();
    S.item = Math.max(0, Math.min(S.item, its.length - 1));
    const current = its[S.item];
    const linked = { complex: new Set(), simple: new Set() };
    for (const g of v.gold) { g.complex.forEach((k) => linked.complex.add(k)); g.simple.forEach((k) => linked.simple.add(k)); }
    const rank = {};
    if (S.cands) S.cands.candidates.forEach((c, r) => { rank[c.idx] = [r + 1, c.cosine]; });
    const cols = rankColumns(), ranks = Object.fromEntries(cols.map((n) => [n, rankOf(n)]));
    const leading = S.combo.length > 1 ? "combined" : S.combo[0];
    for (const side of ["complex", "simple"]) {
      const head = $(side).querySelector(".rank-head");
      head.replaceChildren();
      if (S.cands && S.cands.side !== side) {
        for (const n of cols) {
          const h = document.createElement("span");
          h.className = "rank" + (n === leading ? " lead" : "");
          h.textContent = scorerShort(n);
          h.title = n === "combined" ? `mean rank of ${S.cands.combined.scorers.join(", ")}` : n;
          head.append(h);
        }
      }
      const ol = $(side).querySelector("ol");
      ol.replaceChildren();
      v[side].forEach((text, k) => {
        const li = document.createElement("li");
        li.textContent = text;
        li.dataset.idx = k;
        if (linked[side].has(k)) li.classList.add("linked");
        if (S.sel[side].has(k)) li.classList.add("selected");
        if (current && current[side].includes(k)) li.classList.add("current");
        if (S.side === side && S.cur[side] === k) li.classList.add("cursor");
        if (S.cands && S.cands.side !== side && cols.length) {
          // One column per scorer (#rank, its score on hover), the leading one (or the combination) in bold.
          const c = document.createElement("span");
          c.className = "cand";
          for (const n of cols) {
            const r = ranks[n][k];
            const cell = document.createElement("span");
            cell.className = "rank" + (n === leading ? " lead" : "");
            cell.dataset.scorer = n;
            cell.textContent = r ? `#${r.rank}` : "";
            if (r) cell.title = `${n}: ${n === "combined" ? "mean rank " : ""}${r.score}`;
            c.append(cell);
          }
          if (ranks[leading] && ranks[leading][k] && ranks[leading][k].rank <= 3) li.classList.add("top");
          li.prepend(c);
        } else if (S.cands && S.cands.side !== side && rank[k]) {
          const c = document.createElement("span");
          c.className = "cand";
          c.textContent = `#${rank[k][0]} ${rank[k][1].toFixed(3)}`;
          li.prepend(c);
        }
        li.onclick = () => { S.side = side; S.cur[side] = k; toggle(side, k); };
        ol.append(li);
      });
    }
    const list = $("items");
    list.replaceChildren();
    its.forEach((it, k) => {
      const li = document.createElement("li");
      const score = it.score === null ? "gold" : it.score.toFixed(3);
      li.textContent = `${it.overlaps ? "⚠ " : ""}${it.label}  ${score}  ${it.kind}` + (it.aligner ? `  ${it.aligner}` : "");
      li.className = it.kind + (it.aligner ? " other" : "") + (it.overlaps ? " overlap" : "") + (k === S.item ? " cursor" : "");
      if (it.aligner) li.dataset.aligner = it.aligner;
      li.onclick = () => { S.item = k; draw(); };
      list.append(li);
    });
    $("undo").disabled = !v.can_undo;
    // Gold items that share a sentence: kept, but said (the server's words, sentences numbered from 1).
    $("warnings").replaceChildren(...(v.warnings || []).map((w) => {
      const p = document.createElement("p");
      p.textContent = `⚠ ${w.message}`;
      return p;
    }));
    $("warnings").hidden = !(v.warnings && v.warnings.length);
    drawLegend();
    drawScorers();
    const cur = list.children[S.item];
    if (cur) cur.scrollIntoView({ block: "nearest" });
    const cs = $(S.side).querySelector("li.cursor");
    if (cs) cs.scrollIntoView({ block: "nearest" });
  }

  function progress() {
    const done = S.articles.filter((a) => a.annotated).length;
    $("progress").max = S.articles.length || 1;
    $("progress").value = done;
    $("progress-text").textContent = `${done} / ${S.articles.length} annotated`;
  }

  async function loadLang(lang) {
    S.lang = lang;
    S.articles = await api("/api/articles?" + q({ lang }));
    const sel = $("article");
    sel.replaceChildren(...S.articles.map((a) => new Option(
      `${a.article_id} (${a.split}; ${a.predicted} aligned${a.annotated ? "; annotated" : ""})`, a.article_id)));
    progress();
    if (S.articles.length) await loadArticle(S.articles[0].article_id);
  }

  let loading = 0;  // the latest article asked for: an answer to an earlier request is dropped, not drawn

  async function loadArticle(id) {
    const ticket = ++loading;
    const view = await api("/api/article?" + q({ lang: S.lang, id }));
    if (ticket !== loading) return;
    // The picker changes with the drawing, never before: until then keys act on the article that is shown.
    $("article").value = id;
    S.view = view;
    S.item = 0; S.cands = null;
    S.sel = { complex: new Set(), simple: new Set() };
    S.cur = { complex: 0, simple: 0 };
    draw();
  }

  async function act(action, extra) {
    const v = S.view;
    try {
      const r = await api("/api/action", { action, lang: v.lang, article_id: v.article_id, ...extra });
      const a = S.articles.find((x) => x.article_id === v.article_id);
      if (a) a.annotated = r.article.annotated;  // an undo of the only action takes it back
      progress();
      const warn = r.article.warnings.length ? ` (⚠ ${r.article.warnings.length} overlapping gold item pair(s))` : "";
      status(`${action} saved (#${r.seq})${warn}`);
      // Another article may have been opened while the action was on its way: redraw only the one it acted on.
      if (S.view && S.view.lang === v.lang && S.view.article_id === v.article_id) { S.view = r.article; draw(); }
    } catch (e) { status(`not saved: ${e.message}`); }
  }

  function currentItem() { return items()[S.item]; }
  function asItem(it) { return [it.complex, it.simple]; }

  async function candidates() {
    const side = S.side, idx = S.cur[side];
    try {
      const params = { lang: S.lang, id: S.view.article_id, side, idx };
      if (S.combo.length > 1) params.scorers = S.combo.join(",");  // every scorer's column, and their combination
      const cands = await api("/api/candidates?" + q(params));
      if (S.view.article_id !== params.id || S.lang !== params.lang) return;  // ranks of an article left meanwhile
      S.cands = cands;
    } catch (e) { status(`no candidates: ${e.message}`); }
    draw();
  }

  function toggle(side, k) {
    if (S.sel[side].has(k)) S.sel[side].delete(k); else S.sel[side].add(k);
    candidates();
  }

  async function link() {
    if (!S.sel.complex.size || !S.sel.simple.size) { status("select sentences on both sides first"); return; }
    const it = [[...S.sel.complex].sort((a, b) => a - b), [...S.sel.simple].sort((a, b) => a - b)];
    S.sel = { complex: new Set(), simple: new Set() };
    await act("link", { items: [it] });
  }

  function key(e) {
    const v = S.view;
    if (!v) return false;
    const n = items().length;
    const k = e.key;
    if (k === "j") { S.item = Math.min(n - 1, S.item + 1); draw(); }
    else if (k === "k") { S.item = Math.max(0, S.item - 1); draw(); }
    else if ((k === "a" || k === "r") && currentItem()) {
      const it = asItem(currentItem());
      S.item = Math.min(n - 1, S.item + 1);  // on to the next alignment: one key per decision
      act(k === "a" ? "accept" : "reject", { items: [it] });
    }
    else if (k === "l") link();
    else if (k === "u") act("undo", {});
    else if (k === "T") act("accept_above", { theta: parseFloat($("theta").value) });
    else if (k === "c") {
      // one scorer at a time, the next one (shift-click on the scorer buttons combines several)
      const names = S.info.align.default_scorers;
      S.combo = [names[(names.indexOf(S.combo[0]) + 1) % names.length]];
      candidates();
    }
    else if (k === "ArrowDown" || k === "ArrowUp") {
      const len = v[S.side].length;
      S.cur[S.side] = Math.max(0, Math.min(len - 1, S.cur[S.side] + (k === "ArrowDown" ? 1 : -1)));
      candidates();
    } else if (k === "ArrowLeft" || k === "ArrowRight") {
      S.side = k === "ArrowLeft" ? "complex" : "simple";
      candidates();
    } else if (k === " ") toggle(S.side, S.cur[S.side]);
    else if (k === "n" || k === "p") {
      const ids = S.articles.map((a) => a.article_id);
      const at = ids.indexOf(v.article_id) + (k === "n" ? 1 : -1);
      if (at >= 0 && at < ids.length) loadArticle(ids[at]);
    } else return false;
    return true;
  }

  tools.querySelector("#lang").onchange = (e) => { e.target.blur(); loadLang(e.target.value); };
  tools.querySelector("#article").onchange = (e) => { e.target.blur(); loadArticle(e.target.value); };
  tools.querySelector("#above").onclick = () => act("accept_above", { theta: parseFloat($("theta").value) });
  tools.querySelector("#undo").onclick = () => act("undo", {});

  window.studio.register("align", {
    main, footer, tools, key,
    async init(info) {
      S.info = info;
      $("theta").value = info.aligner.threshold;
      S.combo = info.align.default_scorers ? [info.align.default_scorers[0]] : [];
      $("lang").replaceChildren(...info.languages.map((l) => new Option(`${l.lang} (${l.articles})`, l.lang)));
      if (info.languages.length) await loadLang(info.languages[0].lang);
    },
  });
})();

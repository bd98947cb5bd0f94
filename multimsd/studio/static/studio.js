// multimsd studio front end: plain JavaScript, no build step, no network beyond this server.
// The server holds all state (journal + gold file); the page only draws the latest answer and sends actions.
"use strict";

const token = new URLSearchParams(location.search).get("token");
const S = {
  info: null, lang: null, articles: [], view: null,
  item: 0,                                  // cursor in the alignments list
  side: "complex", cur: { complex: 0, simple: 0 },
  sel: { complex: new Set(), simple: new Set() },
  cands: null,                              // {side, idx, candidates: [{idx, cosine}]}
};
const $ = (id) => document.getElementById(id);

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
const status = (t) => { $("status").textContent = t; };

// Views. The alignment view is this file; every other view is a script of its own (loaded after this one in
// index.html) that calls studio.register(name, title, view) with view = {main, footer, tools?, available?(info),
// show?(), key?(event) -> true when it used the key}. The view shown is in the URL's #hash (kept on reload);
// keys 1, 2, … switch views in the order they were registered.
const studio = {
  api, q, status, $, order: ["align"], current: "align",
  views: { align: { main: $("view-align"), footer: $("keys-align"), tools: $("align-tools") } },
  register(name, title, view) {
    const b = document.createElement("button");
    b.dataset.view = name;
    b.textContent = title;
    b.title = String(this.order.length + 1);
    b.hidden = true;  // until /api/info says the view has something to show
    $("views").append(b);
    for (const el of [view.main, view.footer, view.tools]) if (el) el.hidden = true;
    this.views[name] = view;
    this.order.push(name);
  },
};
window.studio = studio;

function showView(name) {
  const v = studio.views[name];
  if (!v || (v.available && !v.available(S.info))) name = "align";
  studio.current = name;
  for (const [n, view] of Object.entries(studio.views)) {
    for (const el of [view.main, view.footer, view.tools]) if (el) el.hidden = n !== name;
  }
  for (const b of $("views").children) b.classList.toggle("on", b.dataset.view === name);
  if (location.hash.slice(1) !== name) history.replaceState(null, "", name === "align" ? location.pathname + location.search : "#" + name);
  if (studio.views[name].show) studio.views[name].show();
}

function items() {
  // The run's alignments first (in document order), then gold items the aligner did not predict.
  const v = S.view;
  const out = v.predicted.map((p) => ({ ...p, kind: p.status }));
  for (const g of v.gold) if (!g.predicted) out.push({ ...g, kind: "gold-only", score: null });
  return out;
}

function label(side) { return side.map((k) => k + 1).join("+"); }

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
  for (const side of ["complex", "simple"]) {
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
      if (S.cands && S.cands.side !== side && rank[k]) {
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
    li.textContent = `${label(it.complex)} ↔ ${label(it.simple)}  ${score}  ${it.kind}`;
    li.className = it.kind + (k === S.item ? " cursor" : "");
    li.onclick = () => { S.item = k; draw(); };
    list.append(li);
  });
  $("undo").disabled = !v.can_undo;
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

async function loadArticle(id) {
  $("article").value = id;
  S.view = await api("/api/article?" + q({ lang: S.lang, id }));
  S.item = 0; S.cands = null;
  S.sel = { complex: new Set(), simple: new Set() };
  S.cur = { complex: 0, simple: 0 };
  draw();
}

async function act(action, extra) {
  const v = S.view;
  try {
    const r = await api("/api/action", { action, lang: v.lang, article_id: v.article_id, ...extra });
    S.view = r.article;
    const a = S.articles.find((x) => x.article_id === v.article_id);
    if (a) a.annotated = r.article.annotated;  // an undo of the only action takes it back
    progress();
    status(`${action} saved (#${r.seq})`);
    draw();
  } catch (e) { status(`not saved: ${e.message}`); }
}

function currentItem() { return items()[S.item]; }
function asItem(it) { return [it.complex, it.simple]; }

async function candidates() {
  const side = S.side, idx = S.cur[side];
  try {
    S.cands = await api("/api/candidates?" + q({ lang: S.lang, id: S.view.article_id, side, idx }));
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

document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT" || e.ctrlKey || e.metaKey || e.altKey) return;
  const view = studio.views[studio.current];  // a view sees its keys first (a digit may be a rating there)
  if (studio.current !== "align" && view.key && view.key(e)) { e.preventDefault(); return; }
  const nth = studio.order[Number(e.key) - 1];
  if (/^[1-9]$/.test(e.key) && nth && !$("views").querySelector(`[data-view="${nth}"]`).hidden) {
    showView(nth); e.preventDefault(); return;
  }
  if (studio.current !== "align") return;
  const v = S.view;
  if (!v) return;
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
  } else return;
  e.preventDefault();
});

$("lang").onchange = (e) => loadLang(e.target.value);
$("article").onchange = (e) => loadArticle(e.target.value);
$("above").onclick = () => act("accept_above", { theta: parseFloat($("theta").value) });
$("undo").onclick = () => act("undo", {});
$("views").onclick = (e) => { if (e.target.dataset.view) showView(e.target.dataset.view); };

(async () => {
  S.info = await api("/api/info");
  $("theta").value = S.info.aligner.threshold;
  $("lang").replaceChildren(...S.info.languages.map((l) => new Option(`${l.lang} (${l.articles})`, l.lang)));
  for (const b of $("views").children) {
    const v = studio.views[b.dataset.view];
    b.hidden = Boolean(v.available && !v.available(S.info));
  }
  showView(location.hash.slice(1) || "align");
  if (S.info.languages.length) await loadLang(S.info.languages[0].lang);
})().catch((e) => status(`cannot load: ${e.message}`));

// multimsd studio, the θ view: P / R / F1 against θ from the gold annotated so far, scored by the project's own
// gold mode on the server (/api/theta: the numbers `multimsd align mode=gold` gives for the studio's gold file), the θ
// it picks, the `multimsd align` override that re-aligns with it, and the agreement between annotators
// (/api/agreement). Plain JavaScript, no libraries; it redraws each time it is shown (the gold changes as you
// annotate).
"use strict";

(() => {
  const studio = window.studio;
  const el = (tag, attrs, ...kids) => {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === "class") e.className = v; else if (k.startsWith("data-")) e.setAttribute(k, v); else e[k] = v;
    }
    for (const k of kids) if (k !== null && k !== undefined) e.append(k);
    return e;
  };
  const f3 = (x) => (x === null || x === undefined ? "–" : x.toFixed(3));
  const fmtTheta = (t) => String(Number(t.toPrecision(6)));

  const style = el("style", {}, `
    main.theta { display: block; overflow-y: auto; }
    main.theta section { border: 0; overflow: visible; margin-bottom: 14px; }
    main.theta h2 { position: static; background: none; font-size: 15px; padding: 4px 0; }
    .theta-methods { display: flex; flex-wrap: wrap; gap: 14px; }
    .theta-method { flex: 0 1 390px; min-width: 0; box-sizing: border-box; border: 1px solid #ddd; border-radius: 4px; padding: 6px 8px; }
    .theta-method h3 { font-size: 13px; margin: 0 0 4px; }
    .theta table { border-collapse: collapse; font: 12px ui-monospace, monospace; }
    .theta td, .theta th { padding: 1px 6px; text-align: right; border-bottom: 1px solid #eee; }
    .theta tr.picked td { background: #ffe9a8; font-weight: bold; }
    .theta .pick { font-size: 12px; margin: 4px 0; }
    .theta code { display: block; white-space: pre-wrap; word-break: break-all; background: #f6f6f6;
      border: 1px solid #ddd; padding: 4px 6px; font-size: 12px; user-select: all; }
    .theta .recommended { border-left: 4px solid #3366cc; padding-left: 8px; }
    .theta .empty { color: #555; font-style: italic; }
    .theta svg { display: block; margin: 4px 0; }
  `);
  document.head.append(style);

  const main = el("main", { id: "view-theta", class: "theta", "aria-label": "θ view" });
  const footer = el("footer", { id: "keys-theta" });
  footer.innerHTML = "keys: <kbd>1</kbd>, <kbd>2</kbd>, … switch view · <kbd>g</kbd> recompute from the gold " +
    "annotated so far · a click selects a whole command";

  // F1 against θ as a small line chart; the picked θ as a dot.
  function chart(points, picked) {
    const W = 220, H = 80, P = 4;
    const ns = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(ns, "svg");
    svg.setAttribute("width", W); svg.setAttribute("height", H);
    svg.setAttribute("viewBox", `0 0 ${W} ${H}`);
    svg.setAttribute("role", "img");
    svg.setAttribute("aria-label", "F1 against θ (validation half)");
    const ts = points.map((p) => p.theta);
    const lo = Math.min(...ts), hi = Math.max(...ts);
    const x = (t) => P + (hi > lo ? (t - lo) / (hi - lo) : 0.5) * (W - 2 * P);
    const y = (f) => H - P - f * (H - 2 * P);
    const frame = document.createElementNS(ns, "rect");
    Object.entries({ x: 0.5, y: 0.5, width: W - 1, height: H - 1, fill: "#fff", stroke: "#ddd" })
      .forEach(([k, v]) => frame.setAttribute(k, v));
    svg.append(frame);
    const line = document.createElementNS(ns, "polyline");
    line.setAttribute("points", points.map((p) => `${x(p.theta).toFixed(1)},${y(p.f1).toFixed(1)}`).join(" "));
    line.setAttribute("fill", "none"); line.setAttribute("stroke", "#3366cc"); line.setAttribute("stroke-width", "1.5");
    svg.append(line);
    const label = (text, lx, ly, anchor) => {
      const t = document.createElementNS(ns, "text");
      Object.entries({ x: lx, y: ly, "text-anchor": anchor, "font-size": 9, fill: "#777" })
        .forEach(([k, v]) => t.setAttribute(k, v));
      t.textContent = text;
      svg.append(t);
    };
    label(`θ ${fmtTheta(lo)}`, P + 1, H - P - 2, "start");
    label(`${fmtTheta(hi)}`, W - P - 1, H - P - 2, "end");
    label("F1 1", P + 1, P + 8, "start");
    const pk = points.find((p) => p.theta === picked);
    if (pk) {
      const dot = document.createElementNS(ns, "circle");
      Object.entries({ cx: x(pk.theta), cy: y(pk.f1), r: 3.5, fill: "#e0a800", stroke: "#222" })
        .forEach(([k, v]) => dot.setAttribute(k, v));
      svg.append(dot);
    }
    return svg;
  }

  function methodBlock(d, lang, aligner) {
    const pick = d.picked.find((p) => p.lang === lang && p.aligner === aligner);
    const points = d.rows.filter((r) => r.lang === lang && r.aligner === aligner);
    const run = aligner === d.run_aligner ? " (the run's)" : "";
    const tbody = el("tbody");
    for (const r of points) {
      tbody.append(el("tr", { class: r.theta === pick.theta ? "picked" : "", "data-theta": r.theta },
        el("td", {}, fmtTheta(r.theta)), el("td", {}, f3(r.precision)), el("td", {}, f3(r.recall)),
        el("td", { class: "f1" }, f3(r.f1)), el("td", {}, `${r.correct}/${r.n_pred}/${r.n_gold}`)));
    }
    const t = pick.test;
    return el("div", { class: "theta-method", "data-pick": "", "data-lang": lang, "data-aligner": aligner,
      "data-theta": pick.theta, "data-valid-f1": pick.valid.f1, "data-test-f1": t.f1 },
      el("h3", {}, `${aligner}${run}`),
      el("div", { class: "pick" }, "picked θ ", el("b", { class: "theta-picked" }, fmtTheta(pick.theta)),
        ` · test half: P ${f3(t.precision)} R ${f3(t.recall)} F1 `, el("b", { class: "test-f1" }, f3(t.f1)),
        ` (${t.correct}/${t.predicted}/${t.gold})`),
      chart(points, pick.theta),
      el("table", {}, el("thead", {}, el("tr", {}, ...["θ", "P", "R", "F1", "correct/pred/gold"].map((h) => el("th", {}, h)))), tbody),
      el("code", { class: "override", title: "re-align with this θ" }, pick.override));
  }

  function drawTheta(d) {
    const out = [];
    if (d.state !== "ok") {
      out.push(el("p", { class: "empty", id: "theta-empty" }, d.message));
      return out;
    }
    const r = d.recommended;
    out.push(el("section", { class: "recommended", id: "theta-recommended" },
      el("h2", {}, `θ from ${d.gold_articles} annotated article pair(s) of ${d.annotator}`),
      el("p", {}, `θ tuned on the validation half (${d.valid_articles.length} article id(s)), P/R/F1 at it on the ` +
        `test half (${d.test_articles.length}), as multimsd align mode=gold does; gold ${d.only_1to1 ? "1:1 only" : "all items"}. ` +
        `Best: ${r.aligner}, θ ${fmtTheta(r.theta)} (${r.lang}), validation F1 ${f3(r.valid_f1)}, test F1 ${f3(r.test_f1)}. ` +
        "Re-align with it:"),
      el("code", { id: "theta-override" }, r.override),
      el("p", {}, "The same numbers from the command line:"),
      el("code", { id: "theta-gold-command" }, d.gold_command)));
    const langs = [...new Set(d.picked.map((p) => p.lang))];
    for (const lang of langs) {
      out.push(el("section", { class: "theta-lang", "data-lang": lang },
        el("h2", {}, lang === "all" ? "all languages pooled" : lang),
        el("div", { class: "theta-methods" }, ...d.methods.map((m) => methodBlock(d, lang, m)))));
    }
    return out;
  }

  function drawAgreement(a) {
    const sec = el("section", { id: "agreement" }, el("h2", {}, "agreement between annotators"));
    if (a.annotators.length < 2) {
      sec.append(el("p", { class: "empty" }, `one annotator so far (${a.annotators[0].name}); another one's ` +
        "journal (multimsd studio … --annotator NAME) in the same studio directory shows here"));
    } else {
      const tbody = el("tbody");
      for (const p of a.pairs) {
        tbody.append(el("tr", { "data-a": p.a, "data-b": p.b },
          el("td", {}, `${p.a} – ${p.b}`), el("td", {}, String(p.articles)),
          el("td", {}, `${p.items_a} / ${p.items_b} / ${p.both}`), el("td", { class: "f1" }, f3(p.f1)),
          el("td", {}, `${p.agree} / ${p.decisions}`), el("td", { class: "kappa" }, f3(p.kappa))));
      }
      sec.append(el("table", {}, el("thead", {}, el("tr", {}, ...["annotators", "shared article pairs",
        "items a / b / both", "item F1", "same decision / decisions", "Cohen's κ"].map((h) => el("th", {}, h)))), tbody));
      sec.append(el("p", { class: "pick" }, "Over the article pairs both annotated. Item F1: exact gold items " +
        "in common, pooled. κ: every item either annotator accepted or rejected or the run predicted, " +
        "decided 1 (in the annotator's gold) or 0."));
    }
    for (const e of a.errors) sec.append(el("p", { class: "empty" }, `not read: ${e}`));
    return sec;
  }

  let loading = null;
  async function refresh() {
    if (loading) return loading;
    studio.status("θ: scoring the gold annotated so far …");
    main.replaceChildren(el("p", { class: "empty" }, "scoring …"));
    loading = (async () => {
      try {
        const [d, a] = await Promise.all([studio.api("/api/theta"), studio.api("/api/agreement")]);
        main.replaceChildren(...drawTheta(d), drawAgreement(a));
        main.dataset.state = d.state;
        studio.status(d.state === "ok" ? `θ: ${d.gold_articles} gold article pair(s) scored` : "θ: no θ yet");
      } catch (e) {
        main.replaceChildren(el("p", { class: "empty" }, `cannot score: ${e.message}`));
        main.dataset.state = "error";
        studio.status(`θ: ${e.message}`);
      } finally { loading = null; }
    })();
    return loading;
  }

  studio.register("theta", {
    main, footer,
    show: refresh,
    key(e) {
      if (e.key === "g") { refresh(); return true; }
      return false;
    },
  });
})();

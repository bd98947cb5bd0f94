"""The run's sections other than the scores: header, corpus statistics (Table 4), alignment against the
gold (Table 3) and training curves (the sweep: :mod:`multimsd.report.sweep`)."""

from __future__ import annotations

import json

from multimsd.render.blocks import Cell, Chart, Paragraph, Preformatted, Section, Table, num
from multimsd.render.charts import Series, line_chart
from multimsd.report.load import Run


def header_section(run: Run) -> Section:
    m = run.meta
    sec = Section(f"Run: {m.get('name', run.dir.name)}", "run")
    sec.blocks.append(
        Table(
            ["", ""],
            [
                [Cell("created"), Cell(str(m.get("created", "–")))],
                [Cell("command"), Cell(str(m.get("command", "–")))],
                [Cell("directory"), Cell(str(run.dir))],
            ],
            inline=True,
        )
    )
    timings = m.get("timings") or {}
    if timings:
        rows = [[Cell(k), Cell(num(float(v), 1), num=True)] for k, v in timings.items()]
        rows.append(
            [Cell("total"), Cell(num(sum(float(v) for v in timings.values()), 1), num=True, bold=True)]
        )
        sec.blocks.append(Table(["stage", "seconds"], rows, caption="Time per stage", inline=True))
    if m.get("config") is not None:
        text = json.dumps(m["config"], indent=2, ensure_ascii=False, sort_keys=True)
        sec.blocks.append(Preformatted(text, "Resolved configuration"))
    return sec


def corpus_section(run: Run) -> Section | None:
    st = run.stats
    if not st:
        return None
    per = st.get("per_language") or {}
    langs = list(st.get("languages") or per)
    fields = [
        ("article_pairs", "article pairs", 0),
        ("sentence_pairs", "sentence pairs", 0),
        ("train", "train", 0),
        ("validation", "validation", 0),
        ("test", "test", 0),
        ("vocab_complex", "vocab complex", 0),
        ("vocab_simple", "vocab simple", 0),
        ("avg_words_complex", "words/sent. complex", 1),
        ("avg_words_simple", "words/sent. simple", 1),
        ("avg_chars_complex", "chars/sent. complex", 1),
        ("avg_chars_simple", "chars/sent. simple", 1),
    ]
    fields = [f for f in fields if any(f[0] in per.get(g, {}) for g in langs)]
    rows = []
    for g in langs:
        rows.append([Cell(g), *(Cell(num(per.get(g, {}).get(k), d), num=True) for k, _, d in fields)])
    total = []
    for k, _, d in fields:
        vals = [per.get(g, {}).get(k) for g in langs]
        total.append(num(sum(vals), d) if d == 0 and all(v is not None for v in vals) else "")
    rows.append([Cell("all"), *(Cell(t, num=True, bold=True) for t in total)])
    sec = Section("Corpus (Table 4)", "corpus")
    aligner = st.get("aligner") or {}
    bits = [f"{st.get('total_sentence_pairs', '?')} aligned sentence pairs"]
    if st.get("source") == "pairs":  # a pre-aligned corpus (pairs.path): split by document, not aligned here
        bits[0] += f" read from {st.get('path', '?')} (pre-aligned; split by document id)"
    if st.get("embedder"):
        bits.append(f"embedder {st['embedder']}")
    if aligner:
        bits.append(f"aligner {aligner.get('method', '?')}, θ = {aligner.get('threshold', '?')}")
    split = st.get("article_split") or {}
    if split:
        bits.append("articles per split: " + ", ".join(f"{k} {v}" for k, v in split.items()))
    if st.get("dropped"):
        bits.append("dropped: " + ", ".join(f"{k} {v}" for k, v in st["dropped"].items()))
    sec.blocks.append(Paragraph("; ".join(bits) + "."))
    sec.blocks.append(
        Table(["lang", *(f[1] for f in fields)], rows, caption="Corpus statistics per language")
    )
    return sec


def alignment_section(run: Run) -> Section | None:
    gold = run.gold
    if not gold or not gold.get("methods"):
        return None
    methods = gold["methods"]
    langs = [g for g in next(iter(methods.values())) if g != "all"] + ["all"]
    header = ["lang"]
    for meth in methods:
        header += [f"{meth} θ", "P", "R", "F1"]
    rows = []
    for g in langs:
        row, f1s = [Cell(g)], []
        for meth in methods:
            r = methods[meth].get(g) or {}
            t = r.get("test") or {}
            row += [
                Cell("–" if r.get("threshold") is None else f"{r['threshold']:g}", num=True),
                Cell(num(t.get("precision"), 3), num=True),
                Cell(num(t.get("recall"), 3), num=True),
                Cell(num(t.get("f1"), 3), num=True),
            ]
            f1s.append(t.get("f1"))
        # the method comparison is the point of Table 3: bold the best F1 of each language
        vals = [v for v in f1s if v is not None]
        for i, v in enumerate(f1s):
            if len(vals) > 1 and v == max(vals):
                row[4 + 4 * i].bold = True
        rows.append(row)
    sec = Section("Sentence alignment against the gold (Table 3)", "alignment")
    sec.blocks.append(
        Paragraph(
            f"θ tuned on {len(gold.get('valid_articles', []))} validation article pair(s); precision, recall "
            f"and F1 on {len(gold.get('test_articles', []))} test article pair(s); embedder "
            f"{gold.get('embedder', '?')}. Best F1 per language in bold."
        )
    )
    sec.blocks.append(Table(header, rows, caption="Alignment P/R/F1 at the tuned θ"))
    for meth, per in methods.items():
        curve = (per.get("all") or {}).get("valid_curve") or []
        if not curve:
            continue
        series = [
            Series(name, [(p["threshold"], p[key]) for p in curve if p.get(key) is not None])
            for key, name in (("precision", "precision"), ("recall", "recall"), ("f1", "F1"))
        ]
        title = f"{meth}: P/R/F1 vs θ (validation, all languages)"
        sec.blocks.append(Chart(title, line_chart(series, title, "θ", "score", width=370, height=270), title))
    return sec


def _curves(res: dict) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """Training loss per step and validation loss at the last step of each epoch (step 0: before training)."""
    hist = res.get("history") or []
    steps = [(float(h["step"]), float(h["loss"])) for h in hist if "step" in h and h.get("loss") is not None]
    last_step: dict[int, float] = {}
    for h in hist:
        if "step" in h:
            last_step[h.get("epoch", 0)] = max(last_step.get(h.get("epoch", 0), 0.0), float(h["step"]))
    val = []
    before = (res.get("before") or {}).get("val_loss")
    if before is not None:
        val.append((0.0, float(before)))
    for h in hist:
        if "step" not in h and h.get("val_loss") is not None:
            x = last_step.get(h.get("epoch"), float(h.get("epoch", 0)))
            val.append((x, float(h["val_loss"])))
    return steps, val


def training_section(run: Run) -> Section | None:
    trained = {n: s for n, s in run.systems.items() if s.train_results}
    if not trained:
        return None
    sec = Section("Training", "training")
    for info in trained.values():
        res = info.train_results
        steps, val = _curves(res)
        title = f"{info.label}: loss"
        series = [
            Series("training loss", steps, markers=False),
            Series("validation loss", val, dashed=True),
        ]
        sec.blocks.append(Chart(title, line_chart(series, title, "step", "loss"), title))
        rows = []
        for h in res.get("history") or []:
            if "step" not in h and "val_loss" in h:
                rows.append(
                    [
                        Cell(num(h.get("epoch")), num=True),
                        Cell(num(h.get("val_loss"), 3), num=True),
                        Cell(num(h.get("sari")), num=True),
                        Cell(num(h.get("bleu")), num=True),
                        Cell("yes" if h.get("best") else ""),
                    ]
                )
        if rows:
            sec.blocks.append(
                Table(["epoch", "val. loss", "val. SARI", "val. BLEU", "best"], rows, caption=f"{info.label}")
            )
        facts = []
        if res.get("train_tokens") is not None:
            facts.append(f"{res['train_tokens']} training tokens")
        if res.get("train_seconds") is not None:
            facts.append(f"{num(float(res['train_seconds']), 1)} s of training")
        if res.get("train_tokens_per_second") is not None:
            facts.append(f"{num(float(res['train_tokens_per_second']), 0)} tokens/s")
        if facts:
            sec.blocks.append(Paragraph(f"{info.label}: " + ", ".join(facts) + "."))
    return sec

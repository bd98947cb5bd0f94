"""``align.py mode=gold``: score the aligners against human gold alignments and tune θ (paper Table 3).

For each aligner in ``gold.methods`` (any registered name) and language, θ is chosen on the validation half of
the gold article pairs (max F1 over the aligner's θ grid) and precision / recall / F1 are reported at that θ on
the test half. Outputs, written into
``gold.report_dir`` atomically: ``gold_table.md`` (printed), ``gold_results.json`` (every curve point),
``gold_pr_curve.png`` (precision against recall over the θ grid on the validation half) and
``gold_articles.md`` (each test article pair apart, and the F1 that θ tuned on the test half itself would
give: a diagnostic of how much the tuning on the other half costs, never a result). With ``gold.folds=k``
(k > 1) the aligners are also cross-validated by document (:mod:`multimsd.alignment.goldcv`): the per-fold
table and its summary follow the single split's in ``gold_table.md``, under ``"cv"`` in ``gold_results.json``.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

from multimsd import LANGUAGES, interrupts
from multimsd.alignment.aligners import aligner_candidates, get_aligners
from multimsd.alignment.encode import embed_documents, make_embedder
from multimsd.alignment.goldcv import cv_markdown, evaluate_cv, fold_ids
from multimsd.alignment.goldscore import (
    best_threshold,
    gold_set,
    is_1to1,
    per_article,
    split_gold_ids,
    subsets,
    sweep,
    write_json,
)
from multimsd.config import AlignConfig
from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, check_replaceable, check_writable_dir
from multimsd.gold import GoldDoc, load_gold_docs

log = logging.getLogger(__name__)


def evaluate_gold(cfg: AlignConfig, docs: list[GoldDoc]) -> dict:
    """Tune θ per method and language on validation gold; report on test gold. Returns a JSON-able dict.

    With ``gold.folds`` > 1 also the document-level cross-validation (:mod:`multimsd.alignment.goldcv`)
    under ``"cv"``, from the same sentence embeddings."""
    aligners = get_aligners(cfg.gold.methods, "gold.methods")
    langs = [lang for lang in LANGUAGES if lang in cfg.data.languages and any(d.lang == lang for d in docs)]
    docs = [d for d in docs if d.lang in langs]
    if not docs:
        raise MultimsdError(f"no gold article pairs in languages {', '.join(cfg.data.languages)}")
    valid_ids, test_ids = split_gold_ids(docs, cfg.gold.valid_fraction, cfg.seed)
    if cfg.gold.folds and cfg.gold.folds > 1:
        fold_ids(docs, cfg.gold.folds, cfg.seed)  # too many folds: fail before any encoding
    pairs = [(d.complex, d.simple) for d in docs]
    vecs = None
    if any(a.needs == "embeddings" for a in aligners):  # embed once, for all embedding aligners
        vecs = embed_documents(make_embedder(cfg), pairs, cfg)
    # A trainable aligner (the classifier) learns from the validation half only: the test half stays unseen.
    gold_train = [d for d in docs if d.article_id in valid_ids]
    results: dict = {
        "embedder": cfg.embedder.name,
        "model": cfg.embedder.model,
        "only_1to1": cfg.gold.only_1to1,
        "valid_articles": sorted(valid_ids),
        "test_articles": sorted(test_ids),
        "methods": {},
    }
    for aligner in aligners:
        inputs = vecs if aligner.needs == "embeddings" else pairs
        cands = aligner_candidates(aligner, inputs, [d.lang for d in docs], cfg, gold_train=gold_train)
        by_doc = {(d.article_id, d.lang): ms for d, ms in zip(docs, cands)}
        grid = aligner.thresholds(cfg)
        per_lang = {}
        for lang in [*langs, "all"] if len(langs) > 1 else langs:
            ldocs = [d for d in docs if lang in ("all", d.lang)]
            vdocs = [d for d in ldocs if d.article_id in valid_ids]
            tdocs = [d for d in ldocs if d.article_id in test_ids]
            strict = aligner.strict_threshold
            curve = sweep(by_doc, vdocs, grid, cfg.gold.only_1to1, strict)
            theta = best_threshold(curve)
            test_curve = sweep(by_doc, tdocs, grid, cfg.gold.only_1to1, strict)
            test, oracle = test_curve[theta], best_threshold(test_curve)
            per_lang[lang] = {
                "threshold": theta,
                "valid": curve[theta].as_dict(),
                "test": test.as_dict(),
                # The same θ, test half, 1:1 and n:m items apart (an n:m aligner's gain shows here).
                "test_subsets": {k: v.as_dict() for k, v in subsets(by_doc, tdocs, theta, strict).items()},
                "valid_curve": [{"threshold": t, **curve[t].as_dict()} for t in grid],
                # Diagnostic only: θ chosen on the test half itself. Its gap to "test" is what tuning on the
                # other half costs; its own F1 is the best these candidates give at any θ of the grid.
                "test_best_threshold": {"threshold": oracle, **test_curve[oracle].as_dict()},
            }
            if lang != "all":  # article ids repeat across languages (one article, nine translations)
                arts = per_article(by_doc, tdocs, theta, cfg.gold.only_1to1, strict)
                per_lang[lang]["test_articles"] = {
                    d.article_id: {
                        **arts[d.article_id].as_dict(),
                        "complex_sentences": len(d.complex),
                        "simple_sentences": len(d.simple),
                        "gold_n_to_m": sum(not is_1to1(g) for g in gold_set(d, cfg.gold.only_1to1)),
                    }
                    for d in tdocs
                }
        results["methods"][aligner.name] = per_lang
    if cfg.gold.folds and cfg.gold.folds > 1:
        results["cv"] = evaluate_cv(cfg, aligners, docs, langs, vecs)
    return results


def gold_markdown(results: dict) -> str:
    """One row per language, θ / P / R / F1 per method (Table 3 of the paper, transposed for nine languages)."""
    methods = results["methods"]
    langs = list(next(iter(methods.values())).keys())
    lines = [
        "| lang | " + " | ".join(f"{m} θ | P | R | F1" for m in methods) + " |",
        "|---|" + "---:|" * (4 * len(methods)),
    ]
    for lang in langs:
        cells = []
        for per_lang in methods.values():
            e = per_lang[lang]
            t = e["test"]
            cells.append(f"{e['threshold']:g} | {t['precision']:.3f} | {t['recall']:.3f} | {t['f1']:.3f}")
        lines.append(f"| {lang} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append("| lang | method | 1:1 P | R | F1 | n:m P | R | F1 |")
    lines.append("|---|---|" + "---:|" * 6)
    for lang in langs:
        for method, per_lang in methods.items():
            sub = per_lang[lang].get("test_subsets")
            if sub:
                cells = [f"{sub[k][m]:.3f}" for k in ("1:1", "n:m") for m in ("precision", "recall", "f1")]
                lines.append(f"| {lang} | {method} | " + " | ".join(cells) + " |")
    lines.append("")
    lines.append(
        f"θ tuned on {len(results['valid_articles'])} validation article pair(s), P/R/F1 on "
        f"{len(results['test_articles'])} test article pair(s); embedder {results['embedder']}; "
        f"gold {'1:1 only' if results['only_1to1'] else 'all alignments'}."
    )
    return "\n".join(lines)


def articles_markdown(results: dict) -> str:
    """Each test article pair apart (most gold items first): where a method's misses are, and the F1 that θ
    tuned on the test half would give (a diagnostic, not a result)."""
    methods = results["methods"]
    langs = [lang for lang in next(iter(methods.values())) if lang != "all"]
    lines = [
        "| lang | article | complex | simple | gold | n:m gold | "
        + " | ".join(f"{m} F1 (correct / predicted)" for m in methods)
        + " |",
        "|---|---|" + "---:|" * (4 + len(methods)),
    ]
    for lang in langs:
        arts = next(iter(methods.values()))[lang]["test_articles"]
        for aid in sorted(arts, key=lambda a: (-arts[a]["gold"], a)):
            a = arts[aid]
            cells = []
            for per_lang in methods.values():
                e = per_lang[lang]["test_articles"][aid]
                cells.append(f"{e['f1']:.3f} ({e['correct']} / {e['predicted']})")
            lines.append(
                f"| {lang} | {aid} | {a['complex_sentences']} | {a['simple_sentences']} | {a['gold']} | "
                f"{a['gold_n_to_m']} | " + " | ".join(cells) + " |"
            )
    lines.append("")
    lines.append(
        "Diagnostic, not a result — θ tuned on the test half itself (what tuning on the other half costs):"
    )
    lines.append("")
    lines.append("| lang | method | θ (validation) | test F1 | θ (test) | test F1 at that θ |")
    lines.append("|---|---|---:|---:|---:|---:|")
    for lang in next(iter(methods.values())):
        for method, per_lang in methods.items():
            e = per_lang[lang]
            o = e["test_best_threshold"]
            lines.append(
                f"| {lang} | {method} | {e['threshold']:g} | {e['test']['f1']:.3f} | {o['threshold']:g} | {o['f1']:.3f} |"
            )
    return "\n".join(lines)


def plot_pr(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = results["methods"]
    langs = list(next(iter(methods.values())).keys())
    cols = min(len(langs), 5)
    rows = (len(langs) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.0 * rows), squeeze=False)
    for ax, lang in zip(axes.flat, langs):
        for method in methods:
            # A θ that predicts nothing has no precision: leave it off rather than draw it at (0, 0).
            curve = [p for p in methods[method][lang]["valid_curve"] if p["predicted"]]
            ax.plot([p["recall"] for p in curve], [p["precision"] for p in curve], marker=".", label=method)
            chosen = methods[method][lang]["valid"]
            ax.plot([chosen["recall"]], [chosen["precision"]], marker="o", mfc="none", color="black")
        ax.set_title(lang)
        ax.set_xlabel("recall")
        ax.set_ylabel("precision")
        ax.set_xlim(0, 1.02)
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(langs) :]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle(
        f"Alignment P/R over θ (validation gold; circle = chosen θ) — {results['embedder']}", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_gold(cfg: AlignConfig) -> dict:
    out = Path(cfg.gold.report_dir)
    check_replaceable(out, "gold_results.json", "a gold report")
    check_writable_dir(out, "gold.report_dir")
    started = time.time()
    with interrupts.note(state=lambda: interrupts.output_state(out, started)):  # an interrupt: one line
        return _run_gold(cfg, out)


def _run_gold(cfg: AlignConfig, out: Path) -> dict:
    docs = load_gold_docs(cfg.gold.path)
    results = evaluate_gold(cfg, docs)
    table = gold_markdown(results)
    if "cv" in results:
        table += "\n\n" + cv_markdown(results["cv"])
    with atomic_directory(out) as tmp:
        (tmp / "gold_table.md").write_text(table + "\n", encoding="utf-8")
        write_json(tmp / "gold_results.json", results)
        plot_pr(results, tmp / "gold_pr_curve.png")
        (tmp / "gold_articles.md").write_text(articles_markdown(results) + "\n", encoding="utf-8")
    print(table)
    print(f"\ngold report written to {out.resolve()} (each test article pair apart: gold_articles.md)")
    results["report_dir"] = str(out.resolve())
    return results

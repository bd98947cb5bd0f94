"""Cardon & Grabar's class-imbalance experiment (``align.py mode=imbalance aligner=classifier``).

As in both papers (RANLP 2019; MIE 2020): for each negatives:positives ratio (1:1 up to 3,000:1) and each of 50
repeats, sample that many negatives, split positives + sampled negatives 2/3 for training and 1/3 for testing
(stratified, seeded per repeat), train a forest (:mod:`multimsd.alignment.aligners.classifier_model`), report
precision/recall/F1 of the positive class on the test third; then apply the same model to the whole data (every
pair of every gold article pair) — which includes its own training pairs, as the papers note — and, beyond the
papers, to the whole data minus its training pairs ("unseen"). Features are computed once and shared by every
repeat.

*(Ours)*: a ratio above the available negatives (the bundled sample has ~17 negatives per positive) uses all of
them; the table marks it.

The report directory (``aligner.classifier.report_dir``) holds ``imbalance_table.md``, ``imbalance_results.json``
(every run's numbers) and ``imbalance_prf.png``.
"""

from __future__ import annotations

import json
import logging
import math
from pathlib import Path

import numpy as np

from multimsd.alignment.aligners.classifier_model import (
    ClassifierConfig,
    check_classifier_config,
    corpus_tokens,
    featurize,
    make_forest,
    make_vectors,
    pair_labels,
    positive_proba,
    stack_examples,
)
from multimsd.alignment.aligners.features import FEATURE_NAMES, prepare_docs
from multimsd.alignment.goldscore import PRF
from multimsd.config import AlignConfig
from multimsd.console import progress_bar
from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, check_replaceable

log = logging.getLogger(__name__)

REPORT_MARKER = "imbalance_results.json"


def check_experiment_config(c: ClassifierConfig) -> None:
    p = "aligner.classifier"
    if not c.ratios:
        raise MultimsdError(f"{p}.ratios is empty: give negatives:positives ratios such as [1,10,100]")
    bad = [r for r in c.ratios if not (r >= 1 and math.isfinite(r))]
    if bad:
        raise MultimsdError(
            f"{p}.ratios: {bad[0]:g} is not a ratio (negatives per positive): each must be >= 1"
        )
    if len(set(c.ratios)) != len(c.ratios):
        raise MultimsdError(f"{p}.ratios has a ratio twice")
    if c.repeats < 1:
        raise MultimsdError(f"{p}.repeats={c.repeats}: must be >= 1")
    if not 0 < c.test_fraction < 1:
        raise MultimsdError(f"{p}.test_fraction={c.test_fraction}: must lie strictly between 0 and 1")


def _prf(y: np.ndarray, pred: np.ndarray) -> PRF:
    return PRF(int((pred & (y == 1)).sum()), int(pred.sum()), int((y == 1).sum()))


def _one_run(X, y, pos, neg, n_neg, c: ClassifierConfig, seeds, threshold: float) -> dict:
    """One repeat at one ratio: sample negatives, split 2/3-1/3, train, score on test / whole / unseen."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(seeds[0])
    sample = np.concatenate([pos, rng.choice(neg, size=n_neg, replace=False)])
    train, test = train_test_split(
        sample, test_size=c.test_fraction, stratify=y[sample], random_state=int(seeds[1])
    )
    # Repeats run in parallel threads; each forest builds its trees on one.
    forest = make_forest(c, int(seeds[2]), n_jobs=1).fit(X[train], y[train])
    pred_all = positive_proba(forest, X) >= threshold
    seen = np.zeros(len(y), dtype=bool)
    seen[train] = True
    return {
        "test": _prf(y[test], pred_all[test]).as_dict(),
        "whole": _prf(y, pred_all).as_dict(),
        "unseen": _prf(y[~seen], pred_all[~seen]).as_dict(),
    }


EVALS = ("test", "whole", "unseen")


def imbalance_experiment(
    X: np.ndarray, y: np.ndarray, c: ClassifierConfig, seed: int, threshold: float
) -> dict:
    """Cardon & Grabar's experiment on a featurised labelled set; returns per-ratio means, stds and runs."""
    from joblib import Parallel, delayed

    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    plan = []
    for r in c.ratios:
        want = round(r * len(pos))
        if want > len(neg):
            log.warning(
                "ratio %g:1 needs %d negatives, only %d exist: using all (%.1f:1)",
                r,
                want,
                len(neg),
                len(neg) / len(pos),
            )
        plan.append((r, min(want, len(neg))))
    jobs = [
        (k, rep, np.random.SeedSequence([seed, k, rep]).generate_state(3))
        for k in range(len(plan))
        for rep in range(c.repeats)
    ]
    runs = Parallel(n_jobs=c.n_jobs, prefer="threads", return_as="generator")(
        delayed(_one_run)(X, y, pos, neg, plan[k][1], c, seeds, threshold) for k, _rep, seeds in jobs
    )
    per_ratio: list[list[dict]] = [[] for _ in plan]
    for (k, _rep, _s), run in zip(
        jobs, progress_bar(runs, total=len(jobs), desc="imbalance runs", unit="run")
    ):
        per_ratio[k].append(run)
    rows = []
    for (r, n_neg), rs in zip(plan, per_ratio):
        row = {
            "ratio": r,
            "negatives": n_neg,
            "positives": len(pos),
            "effective_ratio": n_neg / len(pos),
            "capped": n_neg < round(r * len(pos)),
        }
        for ev in EVALS:
            for metric in ("precision", "recall", "f1"):
                vals = np.array([run[ev][metric] for run in rs])
                row[f"{ev}_{metric}"] = float(vals.mean())
                row[f"{ev}_{metric}_std"] = float(vals.std())
        row["runs"] = [
            {ev: {m: run[ev][m] for m in ("precision", "recall", "f1")} for ev in EVALS} for run in rs
        ]
        rows.append(row)
    return {"rows": rows}


def imbalance_markdown(results: dict) -> str:
    lines = [
        "| neg:pos | used | " + " | ".join(f"{ev} {m}" for ev in EVALS for m in ("P", "R", "F1")) + " |",
        "|---:|---:|" + "---:|" * (3 * len(EVALS)),
    ]
    for row in results["rows"]:
        used = f"{row['effective_ratio']:.1f}{'*' if row['capped'] else ''}"
        cells = [
            f"{row[f'{ev}_{m}']:.3f} ± {row[f'{ev}_{m}_std']:.3f}"
            for ev in EVALS
            for m in ("precision", "recall", "f1")
        ]
        lines.append(f"| {row['ratio']:g}:1 | {used} | " + " | ".join(cells) + " |")
    d = results["data"]
    lines += [
        "",
        f"Mean ± std over {results['repeats']} repeats per ratio; positive class (aligned pairs) only; "
        f"P(aligned) >= {results['threshold']:g}. Data: {d['pairs']} sentence pairs of {d['articles']} gold "
        f"article pairs ({', '.join(d['languages'])}), {d['positives']} aligned, real ratio "
        f"{d['real_ratio']:.1f}:1. test = the held-out {results['test_fraction']:.2f} of positives + sampled "
        "negatives; whole = every pair of every gold article pair (includes the training pairs, as in the "
        "papers); unseen = whole minus the training pairs.",
    ]
    if any(row["capped"] for row in results["rows"]):
        lines.append("\n\\* fewer negatives exist than the ratio asks for: all of them are used.")
    return "\n".join(lines)


def plot_imbalance(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["rows"]
    x = [row["ratio"] for row in rows]
    titles = {"test": "test split", "whole": "whole data", "unseen": "whole data minus training pairs"}
    fig, axes = plt.subplots(1, len(EVALS), figsize=(4.2 * len(EVALS), 3.4), sharey=True)
    for ax, ev in zip(axes, EVALS):
        for metric, label in (("precision", "P"), ("recall", "R"), ("f1", "F1")):
            mean = np.array([row[f"{ev}_{metric}"] for row in rows])
            std = np.array([row[f"{ev}_{metric}_std"] for row in rows])
            ax.plot(x, mean, marker="o", label=label)
            ax.fill_between(x, mean - std, mean + std, alpha=0.15)
        ax.set_xscale("log")
        ax.set_title(titles[ev], fontsize=9)
        ax.set_xlabel("negatives : positives (training)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("positive class")
    axes[0].legend(fontsize=8)
    d = results["data"]
    capped = [row["ratio"] for row in rows if row["capped"]]
    note = f"; ratios >= {min(capped):g} use all negatives ({d['real_ratio']:.1f}:1)" if capped else ""
    fig.suptitle(
        f"Random-forest aligner vs class imbalance ({', '.join(d['languages'])}; "
        f"{results['repeats']} repeats, mean ± std{note})",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_imbalance(cfg: AlignConfig, c: ClassifierConfig) -> dict:
    """``align.py mode=imbalance aligner=classifier``: the experiment on the training gold; writes the report.

    ``c``: the classifier's settings in this run (``aligner.classifier``)."""
    from multimsd.gold import load_gold_docs

    if cfg.aligner.method != "classifier":
        raise MultimsdError("mode=imbalance is the classifier's experiment: add aligner=classifier")
    check_classifier_config(c)
    check_experiment_config(c)
    out = Path(c.report_dir).expanduser()
    check_replaceable(out, REPORT_MARKER, "an imbalance report")
    gold = [d for d in load_gold_docs(c.train_gold) if d.lang in cfg.data.languages]
    if not gold:
        raise MultimsdError(f"no gold article pairs in languages {', '.join(cfg.data.languages)}")
    prepared = prepare_docs([(d.complex, d.simple) for d in gold], [d.lang for d in gold])
    vectors, source = make_vectors(c, corpus_tokens(prepared), cfg.seed)
    X, y = stack_examples(featurize(prepared, vectors), [pair_labels(d, c.nm_gold) for d in gold])
    n_pos = int((y == 1).sum())
    log.info("%d labelled pairs (%d aligned) from %d gold article pairs", len(y), n_pos, len(gold))
    results = imbalance_experiment(X, y, c, cfg.seed, cfg.aligner.threshold)
    results = {
        "data": {
            "gold": c.train_gold,
            "articles": len(gold),
            "languages": sorted({d.lang for d in gold}),
            "pairs": len(y),
            "positives": n_pos,
            "negatives": len(y) - n_pos,
            "real_ratio": (len(y) - n_pos) / n_pos,
            "nm_gold": c.nm_gold,
        },
        "repeats": c.repeats,
        "test_fraction": c.test_fraction,
        "threshold": cfg.aligner.threshold,
        "seed": cfg.seed,
        "forest": {
            "n_estimators": c.n_estimators,
            "max_depth": c.max_depth,
            "min_samples_leaf": c.min_samples_leaf,
        },
        "vectors": source,
        "features": list(FEATURE_NAMES),
        **results,
    }
    table = imbalance_markdown(results)
    with atomic_directory(out) as tmp:
        (tmp / "imbalance_table.md").write_text(table + "\n", encoding="utf-8")
        (tmp / REPORT_MARKER).write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", "utf-8")
        plot_imbalance(results, tmp / "imbalance_prf.png")
    print(table)
    print(f"\nimbalance report written to {out.resolve()}")
    results["report_dir"] = str(out.resolve())
    return results

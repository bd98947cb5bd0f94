"""``align.py mode=gold gold.folds=k``: document-level cross-validation of the aligners against gold.

The single split of gold mode (θ tuned on one half of the article pairs, scored on the other) rests on one
seeded draw of a few documents. With ``gold.folds=k`` the article ids are also dealt into k folds (seeded
shuffle, then round-robin: sizes differ by at most one; an article's translations stay in one fold). For each
fold, θ — and for ``aligner=nm`` its ``floor`` / ``penalty`` / ``skip_simple`` (from ``aligner.nm.*_grid``,
when ``tune_on_gold``) — is chosen on the other k−1 folds (best F1; ties as in the single split: the more
conservative setting, then the higher θ) and the fold is scored with those settings. Every article pair is
scored exactly once. Reported per fold and language: θ, the settings, P / R / F1; across folds the mean and
sample sd (n − 1) of P, R and F1, and the pooled held-out P / R / F1 (the counts of all folds summed: each
fold at its own settings). Next to them, ``fixed``: the configured settings as align mode uses them (θ =
``aligner.threshold`` and the nm options as given), scored on each fold without any tuning.

Nothing is encoded twice: sentence embeddings are computed once for all documents (and the embedding cache
serves the single split's), and ``aligner=nm``'s block candidates are computed once per setting of its grids
for all documents; each fold only re-reads them. A trainable aligner (the classifier) or a plugin is called
once per fold with that fold's training documents as ``gold_train``.
"""

from __future__ import annotations

import itertools
import logging
import random
import statistics
from collections.abc import Callable, Sequence

from omegaconf import DictConfig, OmegaConf

from multimsd.alignment.aligners import Aligner, aligner_candidates
from multimsd.alignment.goldscore import PRF, best_threshold, sweep
from multimsd.alignment.match import Match
from multimsd.config import AlignConfig
from multimsd.errors import MultimsdError
from multimsd.gold import GoldDoc

log = logging.getLogger(__name__)

DocKey = tuple[str, str]  # (article_id, lang)
Variant = tuple  # an aligner's tuned settings (nm: (floor, penalty, skip_simple)); () for θ alone
Candidates = dict[Variant, dict[DocKey, list[Match]]]
NM_SETTINGS = ("floor", "penalty", "skip_simple")


def fold_ids(docs: Sequence[GoldDoc], k: int, seed: int) -> list[set[str]]:
    """The article ids dealt into ``k`` folds: seeded shuffle, then round-robin (every id in one fold)."""
    ids = sorted({d.article_id for d in docs})
    if k < 2:
        raise MultimsdError(f"gold.folds={k}: cross-validation needs at least 2 folds (null or 1: one split)")
    if k > len(ids):
        raise MultimsdError(f"gold.folds={k}: only {len(ids)} gold article pair(s) to deal into folds")
    random.Random(seed).shuffle(ids)
    return [set(ids[f::k]) for f in range(k)]


def cross_validate(
    candidates_for: Callable[[list[GoldDoc]], Candidates],
    docs: Sequence[GoldDoc],
    folds: Sequence[set[str]],
    grid: Sequence[float],
    *,
    only_1to1: bool = False,
    strict: bool = False,
    fixed: tuple[Variant, float] | None = None,
    tunable: Sequence[Variant] | None = None,
) -> dict:
    """Tune (variant, θ) on the other folds, score each fold with it; per-fold rows and their summary.

    ``candidates_for(train_docs)`` returns threshold-free candidates of every document of ``docs`` for each
    variant (the aligner's settings); it is called once per fold with that fold's training documents. ``fixed``:
    (variant, θ) scored on each fold as is (align mode's settings), or None. ``tunable``: the variants the
    tuning may choose from (None: all; aligner=nm: its grids, not a configured setting outside them).
    """
    rows = []
    for f, held in enumerate(folds):
        train = [d for d in docs if d.article_id not in held]
        test = [d for d in docs if d.article_id in held]
        if not test or not train:
            continue  # a language none of whose articles fall in this fold (or all of them)
        cands = candidates_for(train)
        variant, theta, train_prf = choose(cands, train, grid, only_1to1, strict, tunable)
        row = {
            "fold": f,
            "articles": sorted(held),
            "threshold": theta,
            "variant": list(variant),
            "train": train_prf.as_dict(),
            "test": _score(cands[variant], test, theta, only_1to1, strict).as_dict(),
        }
        if fixed is not None:
            row["fixed"] = _score(cands[fixed[0]], test, fixed[1], only_1to1, strict).as_dict()
        rows.append(row)
    # What the aligner would ship with if tuned on every document: the settings the folds estimate.
    cands = candidates_for(list(docs))
    variant, theta, prf = choose(cands, list(docs), grid, only_1to1, strict, tunable)
    all_docs = {"threshold": theta, "variant": list(variant), "in_sample": prf.as_dict()}
    return {"folds": rows, **summarise(rows), "tuned_on_all": all_docs}


def choose(
    cands: Candidates,
    train: list[GoldDoc],
    grid: Sequence[float],
    only_1to1: bool,
    strict: bool,
    tunable: Sequence[Variant] | None = None,
) -> tuple[Variant, float, PRF]:
    """(variant, θ) with the best F1 on ``train``; like the single split, ties go to the more conservative
    setting (the higher tuple: floor, then penalty, then skip cost), then the higher θ."""
    chosen = {}
    for variant in cands if tunable is None else tunable:
        curve = sweep(cands[variant], train, list(grid), only_1to1, strict)
        theta = best_threshold(curve)
        chosen[variant] = (round(curve[theta].f1, 12), theta, curve[theta])
    variant = max(chosen, key=lambda v: (chosen[v][0], v, chosen[v][1]))
    return variant, chosen[variant][1], chosen[variant][2]


def _score(
    by_doc: dict[DocKey, list[Match]], docs: list[GoldDoc], theta: float, only: bool, strict: bool
) -> PRF:
    return sweep(by_doc, docs, [theta], only, strict)[theta]


def summarise(rows: list[dict]) -> dict:
    """Mean and sample sd across folds of P / R / F1, and the pooled P / R / F1 (the folds' counts summed)."""
    out = {}
    for part in ("test", "fixed"):
        if not rows or part not in rows[0]:
            continue
        stats = {}
        for m in ("precision", "recall", "f1"):
            vals = [r[part][m] for r in rows]
            stats[m] = {
                "mean": statistics.fmean(vals),
                "sd": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            }
        pooled = PRF(0, 0, 0)
        for r in rows:
            pooled = pooled + PRF(r[part]["correct"], r[part]["predicted"], r[part]["gold"])
        out[part] = {"across_folds": stats, "pooled": pooled.as_dict()}
    return out


def nm_candidates(
    aligner: Aligner, docs: list[GoldDoc], cfg: AlignConfig
) -> tuple[Candidates, Variant, list[Variant]]:
    """``aligner=nm``'s candidates of every document for the configured (floor, penalty, skip_simple) and each
    one of its grids; the configured setting; the settings tuning chooses from (the grids when
    ``tune_on_gold``, else the configured one). Block vectors are computed once (one encoder call a side,
    through the cache)."""
    from multimsd.alignment.aligners.nm import _align, block_vectors, check_nm_config

    c = aligner.settings(cfg).nm
    check_nm_config(c)
    configured = (c.floor, c.penalty, c.skip_simple)
    grid = list(itertools.product(c.floor_grid, c.penalty_grid, c.skip_simple_grid)) if c.tune_on_gold else []
    vecs = block_vectors([(d.complex, d.simple) for d in docs], cfg)
    out: Candidates = {}
    for setting in dict.fromkeys([*grid, configured]):
        out[setting] = {
            (d.article_id, d.lang): _align(cb, cv, sb, sv, c, *setting)
            for d, (cb, cv, sb, sv) in zip(docs, vecs)
        }
    return out, configured, grid or [configured]


def evaluate_cv(
    cfg: AlignConfig,
    aligners: Sequence[Aligner],
    docs: list[GoldDoc],
    langs: Sequence[str],
    vecs: list | None,
) -> dict:
    """Cross-validate each aligner on ``docs`` (``gold.folds`` folds); ``vecs``: the documents' sentence
    embeddings (as gold mode computed them), or None when no aligner needs them."""
    folds = fold_ids(docs, cfg.gold.folds, cfg.seed)
    out: dict = {"folds": cfg.gold.folds, "seed": cfg.seed, "fold_articles": [sorted(f) for f in folds]}
    methods = {}
    for aligner in aligners:
        grid = aligner.thresholds(cfg)
        theta = fixed_threshold(aligner, cfg)
        candidates_for, configured, settings, tunable = _candidate_source(aligner, docs, vecs, cfg)
        per_lang = {}
        for lang in [*langs, "all"] if len(langs) > 1 else langs:
            ldocs = [d for d in docs if lang in ("all", d.lang)]
            res = cross_validate(
                candidates_for,
                ldocs,
                folds,
                grid,
                only_1to1=cfg.gold.only_1to1,
                strict=aligner.strict_threshold,
                fixed=(configured, theta),
                tunable=tunable,
            )
            for row in [*res["folds"], res["tuned_on_all"]]:
                row["settings"] = dict(zip(settings, row.pop("variant")))
            res["fixed_threshold"] = theta
            res["fixed_settings"] = dict(zip(settings, configured))
            per_lang[lang] = res
        methods[aligner.name] = per_lang
    out["methods"] = methods
    return out


def fixed_threshold(aligner: Aligner, cfg: AlignConfig) -> float:
    """The θ align mode would use with this aligner: ``aligner.threshold`` when the run's ``aligner=`` holds
    its options, else its own default (another method of ``gold.methods``: margin's 1.0, not symmetric's θ)."""
    node = cfg.aligner
    kind = OmegaConf.get_type(node) if isinstance(node, DictConfig) else type(node)
    if kind is aligner.options:
        return float(node.threshold)
    theta = aligner.default_options().threshold
    # symmetric / asymmetric default to the encoder's recommended θ (an interpolation in their options)
    return cfg.embedder.recommended_threshold if isinstance(theta, str) else float(theta)


def _candidate_source(
    aligner: Aligner, docs: list[GoldDoc], vecs: list | None, cfg: AlignConfig
) -> tuple[Callable[[list[GoldDoc]], Candidates], Variant, tuple[str, ...], list[Variant] | None]:
    """(candidates_for(train_docs), the configured variant, the names of its settings, the variants tuning
    chooses from: None for all).

    aligner=nm: every variant's candidates computed once, whatever the training documents. Any other aligner:
    called with the training documents as ``gold_train`` (a trainable one learns from them), memoised per
    training set (the languages' rows of one fold share it only when they are the same documents)."""
    from multimsd.alignment.aligners.nm import NmAligner

    if isinstance(aligner, NmAligner):
        cands, configured, tunable = nm_candidates(aligner, docs, cfg)
        return (lambda train: cands), configured, NM_SETTINGS, tunable
    inputs = vecs if aligner.needs == "embeddings" else [(d.complex, d.simple) for d in docs]
    memo: dict[tuple[DocKey, ...], Candidates] = {}

    def candidates_for(train: list[GoldDoc]) -> Candidates:
        key = tuple(sorted((d.article_id, d.lang) for d in train))
        if key not in memo:
            got = aligner_candidates(aligner, inputs, [d.lang for d in docs], cfg, gold_train=train)
            memo[key] = {(): {(d.article_id, d.lang): ms for d, ms in zip(docs, got)}}
        return memo[key]

    return candidates_for, (), (), None


def cv_markdown(cv: dict) -> str:
    """The per-fold table and the summary (mean ± sd across folds, pooled held-out, the fixed settings)."""
    lines = [
        f"Cross-validation by document: {cv['folds']} folds (seed {cv['seed']}); θ and the aligner's settings "
        f"tuned on the other {cv['folds'] - 1} folds, each article pair scored once.",
        "",
        "| lang | method | fold | articles | θ | settings | P | R | F1 |",
        "|---|---|---:|---:|---:|---|---:|---:|---:|",
    ]
    for method, per_lang in cv["methods"].items():
        for lang, res in per_lang.items():
            for r in res["folds"]:
                t = r["test"]
                settings = " ".join(f"{k}={v:g}" for k, v in r["settings"].items()) or "—"
                lines.append(
                    f"| {lang} | {method} | {r['fold'] + 1} | {len(r['articles'])} | {r['threshold']:g} | "
                    f"{settings} | {t['precision']:.3f} | {t['recall']:.3f} | {t['f1']:.3f} |"
                )
    lines += [
        "",
        "| lang | method | P mean ± sd | R mean ± sd | F1 mean ± sd | pooled P / R / F1 | fixed settings | "
        "fixed F1 mean ± sd | fixed pooled F1 |",
        "|---|---|---:|---:|---:|---:|---|---:|---:|",
    ]
    for method, per_lang in cv["methods"].items():
        for lang, res in per_lang.items():
            a, p = res["test"]["across_folds"], res["test"]["pooled"]
            fa, fp = res["fixed"]["across_folds"], res["fixed"]["pooled"]
            fixed = " ".join(
                f"{k}={v:g}" for k, v in {"θ": res["fixed_threshold"], **res["fixed_settings"]}.items()
            )
            lines.append(
                f"| {lang} | {method} | "
                + " | ".join(f"{a[m]['mean']:.3f} ± {a[m]['sd']:.3f}" for m in ("precision", "recall", "f1"))
                + f" | {p['precision']:.3f} / {p['recall']:.3f} / {p['f1']:.3f} | {fixed} | "
                f"{fa['f1']['mean']:.3f} ± {fa['f1']['sd']:.3f} | {fp['f1']:.3f} |"
            )
    lines += [
        "",
        "| lang | method | tuned on all article pairs: θ | settings | in-sample F1 |",
        "|---|---|---:|---|---:|",
    ]
    for method, per_lang in cv["methods"].items():
        for lang, res in per_lang.items():
            t = res["tuned_on_all"]
            settings = " ".join(f"{k}={v:g}" for k, v in t["settings"].items()) or "—"
            lines.append(
                f"| {lang} | {method} | {t['threshold']:g} | {settings} | {t['in_sample']['f1']:.3f} |"
            )
    lines += [
        "",
        "sd: sample standard deviation across folds (n − 1). Pooled: the held-out counts of all folds summed. "
        "Fixed: the configured settings (align mode's θ and options) on each fold, untuned. Tuned on all: the "
        "settings the same tuning picks from every article pair (what the folds estimate; its F1 is in-sample).",
    ]
    return "\n".join(lines)

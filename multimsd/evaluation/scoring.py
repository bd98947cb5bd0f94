"""Scoring in the evaluation stage: per language with the metric registry, pooled over languages, ranked.

Per language, with that language's tokenizer, every metric of ``metrics.include`` is computed by
:func:`multimsd.metrics.score_language` (the scorer validation during training uses too), plus distinct
medical-term types of sources, references and every system (``terms.enabled``).

Pooling across languages ("all"), by each metric's :attr:`~multimsd.metrics.Metric.pooling`
(:data:`multimsd.metrics.POOLING`): SARI, BLEU and TER count tokens, and a corpus score over a mix of
tokenisations (13a words for English, MeCab morphemes for Japanese, characters for Chinese) is not a
meaningful number, so they are pooled (computed over the concatenation of all languages) **only when every
evaluated language uses the same tokenizer and the same number of references**; otherwise they are reported
per language only and ``results.json`` says why under ``pooled.skipped``. chrF works on characters and is
pooled whenever the number of references agrees. METEOR (a mean of sentence scores) is pooled as the
sentence-weighted mean when all languages share one tokenizer *and* one METEOR mode; the quality features
likewise when they share one tokenizer. FKGL is never pooled (its coefficients are English-fitted; grades are
comparable within one language only), and term types are summed (dictionaries are per language).

Ranking (``select_by``): a rankable metric or ``mean(a,b,...)`` of them. Per language, systems are ordered by
that score; overall, by its mean over the languages (macro average; defined even when nothing can be pooled).
The order and the best follow the one rule for "best" (:mod:`multimsd.metrics.best`): a system flagged for
degenerate outputs there (overall: in any language), or whose outputs are all empty, is listed after the
others with its flags (``flagged``) and is never the best; ties are broken by system name.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from multimsd.config import EvaluateConfig
from multimsd.errors import MultimsdError
from multimsd.evaluation.inputs import ReferenceSet

if TYPE_CHECKING:
    from multimsd.metrics import Metric

__all__ = [
    "evaluate_language",
    "included_metrics",
    "parse_select_by",
    "pool_languages",
    "rank_systems",
    "term_dictionary",
]


# ---------------------------------------------------------------------------------------------- selection
def parse_select_by(select_by: str) -> list[str]:
    """``"sari"`` -> ``["sari"]``; ``"mean(sari, bleu)"`` -> ``["sari", "bleu"]``; raises on anything else."""
    from multimsd.metrics import rankable_metrics

    rankable = rankable_metrics()
    s = select_by.strip().lower().replace(" ", "")
    m = re.fullmatch(r"mean\((.*)\)", s)
    names = m.group(1).split(",") if m else [s]
    bad = [n for n in names if n not in rankable]
    if not names or bad:
        raise MultimsdError(
            f"select_by={select_by!r}: expected one of {', '.join(rankable)} or mean(<metric>,...) of them"
        )
    return names


def included_metrics(cfg: EvaluateConfig) -> list[Metric]:
    """The metrics of ``metrics.include``, in registry order."""
    from multimsd.metrics import METRICS

    return [m for name, m in METRICS.items() if name in cfg.metrics.include]


# ---------------------------------------------------------------------------------------------- per language
def term_dictionary(lang: str, cfg: EvaluateConfig):
    """(TermDictionary, its path) for ``lang``, or (None, None) when ``terms.dir`` has no file for it."""
    from multimsd.metrics.terms import dictionary_for

    return dictionary_for(lang, cfg.terms.dir, what="terms.dir")


def evaluate_language(
    lang: str, tok: str, rows: list[int], refs: ReferenceSet, systems: dict[str, list], cfg: EvaluateConfig
) -> tuple[dict, dict[str, dict]]:
    """(reference-side facts, per-system scores) for one language."""
    from multimsd.metrics import TOKENIZER_DESCRIPTIONS, reference_streams, score_language
    from multimsd.metrics.terms import is_bundled, term_type_table

    settings = cfg.metrics
    metrics = included_metrics(cfg)
    sources = [refs.complex[i] for i in rows]
    streams = reference_streams([refs.refs[i] for i in rows], f"{refs.name} ({lang})")
    outputs = {name: [preds[i] for i in rows] for name, preds in systems.items()}
    info: dict[str, Any] = {
        "n_sentences": len(rows),
        "n_references": len(streams),
        "tokenizer": tok,
        "tokenizer_description": TOKENIZER_DESCRIPTIONS.get(tok, "registered tokenizer"),
        "signatures": {
            m.name: m.signature(len(streams), tokenizer=tok, settings=settings)
            for m in metrics
            if m.signature
        },
    }
    for m in metrics:
        if m.describe:
            info.update(m.describe(sources, streams, lang=lang, tokenizer=tok, settings=settings))
    term_table = None
    if cfg.terms.enabled:
        dictionary, path = term_dictionary(lang, cfg)
        if dictionary is not None:
            term_table = term_type_table(sources, streams, outputs, dictionary)
            info["term_types"] = {"source": term_table["source"], "reference": term_table["reference"]}
            info["terms_dictionary"] = {
                "path": str(path),
                "n_terms": len(dictionary),
                "bundled": is_bundled(path),
            }
        else:
            info["term_types"] = None
            info["terms_dictionary"] = None
    scores = {}
    for name, outs in outputs.items():
        res: dict[str, Any] = {"n_sentences": len(rows), "tokenizer": tok}
        res.update(score_language(sources, outs, streams, lang=lang, tokenizer=tok, settings=settings))
        if term_table is not None:
            res["term_types"] = term_table[name]
        scores[name] = res
    return info, scores


# ---------------------------------------------------------------------------------------------- pooling
def pool_languages(
    langs: list[str],
    info: dict[str, dict],
    per_lang: dict[str, dict[str, dict]],
    refs: ReferenceSet,
    systems: dict[str, list],
    cfg: EvaluateConfig,
) -> tuple[dict[str, dict], dict]:
    """Scores over all languages together where meaningful (module docstring); (per-system, report)."""
    why_tok, why_k = _pooling_obstacles(langs, info)
    computed, skipped = [], {}
    rows = [i for i, lang in enumerate(refs.lang) if lang in langs]
    n = len(rows)
    pooled: dict[str, dict] = {name: {"n_sentences": n} for name in systems}
    metrics = included_metrics(cfg)

    # Rescored over the concatenation of all languages: token-counting metrics need one tokenizer and one
    # number of references, character-based ones only the latter.
    rescored = []
    for m in metrics:
        if m.pooling == "corpus" and (why_tok or why_k):
            skipped[m.name] = why_tok or why_k
        elif m.pooling == "characters" and why_k:
            skipped[m.name] = why_k
        elif m.pooling in ("corpus", "characters"):
            rescored.append(m.name)
    if rescored:
        one_tok = info[langs[0]]["tokenizer"] if why_tok is None else None
        _rescore(pooled, rescored, rows, refs, systems, cfg, one_tok)
        computed += rescored

    # Combined from the per-language results: a mean weighted by the sentences, or a sum.
    weights = [info[lang]["n_sentences"] for lang in langs]
    for m in metrics:
        if m.pooling == "weighted-mean":
            disagree = [why for key, why in m.agree if len({info[g].get(key) for g in langs}) > 1]
            if why_tok or disagree:
                skipped[m.name] = why_tok or disagree[0]
                continue
            for name in systems:
                for key in m.result_keys:
                    pooled[name][key] = _weighted([per_lang[g][name][key] for g in langs], weights, n)
            computed.append(m.name)
        elif m.pooling == "sum":
            for name in systems:
                for key in m.result_keys:
                    pooled[name][key] = sum(per_lang[g][name][key] for g in langs)
            computed.append(m.name)
    for m in metrics:  # listed last in results.json, as before the registry
        if m.pooling == "never":
            skipped[m.name] = m.never_pooled_because
    if cfg.terms.enabled:
        counted = [lang for lang in langs if info[lang].get("term_types")]
        if counted:
            for name in systems:
                pooled[name]["term_types"] = sum(per_lang[g][name]["term_types"] for g in counted)
            computed.append("term_types (sum over languages with a dictionary)")
    return pooled, {"computed": computed, "skipped": skipped}


def _pooling_obstacles(langs: list[str], info: dict[str, dict]) -> tuple[str | None, str | None]:
    """Why the languages cannot be pooled: their tokenizers differ, their numbers of references differ
    (None where they agree)."""
    by_tok: dict[str, list[str]] = {}
    for g in langs:
        by_tok.setdefault(info[g]["tokenizer"], []).append(g)
    why_tok = (
        "languages use different tokenizers ("
        + "; ".join(f"{t}: {' '.join(gs)}" for t, gs in by_tok.items())
        + ")"
    )
    why_k = "languages have different numbers of references"
    one_k = len({info[lang]["n_references"] for lang in langs}) == 1
    return (None if len(by_tok) == 1 else why_tok), (None if one_k else why_k)


def _rescore(
    pooled: dict[str, dict],
    include: list[str],
    rows: list[int],
    refs: ReferenceSet,
    systems: dict[str, list],
    cfg: EvaluateConfig,
    one_tok: str | None,
) -> None:
    """Each system's ``include`` metrics over the ``rows`` of all languages at once, into ``pooled``;
    ``one_tok``: the languages' one tokenizer (None where they differ: then only character metrics are here)."""
    from multimsd.metrics import reference_streams, score_language

    sources = [refs.complex[i] for i in rows]
    streams = reference_streams([refs.refs[i] for i in rows], refs.name)
    tok = one_tok if one_tok is not None else "13a"  # character metrics alone ignore the tokenizer
    for name, preds in systems.items():
        outputs = [preds[i] for i in rows]
        pooled[name].update(
            score_language(
                sources, outputs, streams, lang=None, tokenizer=tok, settings=cfg.metrics, include=include
            )
        )
        if one_tok is not None:
            pooled[name]["tokenizer"] = tok


def _weighted(values: list, weights: list[int], n: int) -> Any:
    """The mean of per-language ``values`` weighted by their sentences; a dict key by key; a string (a fact
    that agrees over the languages, checked by the metric's ``agree``) as it is."""
    if isinstance(values[0], dict):
        return {k: _weighted([v[k] for v in values], weights, n) for k in values[0]}
    if isinstance(values[0], str):
        return values[0]
    return sum(v * w for v, w in zip(values, weights)) / n


# ---------------------------------------------------------------------------------------------- ranking
def rank_systems(
    langs: list[str],
    per_lang: dict[str, dict[str, dict]],
    select_by: str,
    flagged: dict[str, dict[str, list[str]]] | None = None,
) -> dict[str, Any]:
    """Systems ordered by the ``select_by`` score, per language and overall (mean over languages), by the one
    rule for "best"; ``flagged[lang or "overall"][system]``: why the system cannot be best there."""
    from multimsd.metrics.best import best, order

    names = parse_select_by(select_by)
    flagged = flagged or {}

    def score(res: dict) -> float:
        return sum(res[m] for m in names) / len(names)

    winners: dict[str, str | None] = {}

    def ranked(scored: dict[str, float], column: str) -> list[dict]:
        placed = order(scored, flagged.get(column))  # rankable metrics: higher is better
        winners[column] = best(placed)
        return [
            {"system": p.system, "score": p.score, **({"flagged": list(p.flagged)} if p.flagged else {})}
            for p in placed
        ]

    per_language = {lang: ranked({s: score(r) for s, r in per_lang[lang].items()}, lang) for lang in langs}
    systems = list(per_lang[langs[0]])
    overall = ranked(
        {s: sum(score(per_lang[lang][s]) for lang in langs) / len(langs) for s in systems}, "overall"
    )
    return {
        "select_by": select_by,
        "metrics": names,
        "overall_is": "mean over languages of the per-language score",
        "per_language": per_language,
        "overall": overall,
        "best": winners,  # per language and "overall"; null where every system is flagged
    }

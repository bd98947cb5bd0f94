"""Other aligners than the run's, and the scorers that rank candidate sentences, for the alignment view.

**Other aligners** (``multimsd studio PATH --aligner METHOD[:THETA]``, repeatable): each is one of the
project's registered aligners, run through its own candidates (:func:`multimsd.alignment.api.align_article`)
(nothing is re-implemented here) on one article pair at a time, lazily, the first time the article is shown,
and kept. An embedding aligner (symmetric, asymmetric, margin) gets the article's vectors from the corpus (the
run's embedding cache: nothing is encoded on a cached run); ``nm`` embeds its blocks through the run's embedder
and cache (blocks of several sentences the run did not embed are encoded once, and counted in
``sentences_encoded``); ``lexical`` needs no vectors. θ keeps what the aligner's own rule keeps
(``Aligner.keeps``), then the run's post-filters apply (``filter_pairs``), as in ``align.py``. An aligner that
needs a trained model (classifier) is refused.

**Scorers** rank the sentences of the other side for one selected sentence: ``cosine`` (the run's embedder,
from the cached vectors), ``lexical`` (the mean of the lexical aligner's 11 string similarities, Adduru et al.
2018) and each of those similarities by name (``levenshtein_char``, ``jaccard``, …), computed for the one
selected sentence against the other side (one row, not the article's whole matrix).

**Combining scorers** (``scorers=a,b``): the combined ranking orders the sentences by the *mean of their
ranks* under the chosen scorers (tied scores share the mean of the ranks they span; equal means go to the lower
sentence index). Ranks, not normalised scores: the scorers' scales are not comparable — an e5 cosine lives in
a narrow band near 0.8 where a string similarity spreads over [0, 1] — and a min-max normalisation per sentence
would hang on the single most (or least) similar sentence. A mean rank puts every scorer on the same scale
(1 … n) and ranks a sentence high only when the scorers agree on it.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from multimsd.errors import MultimsdError
from multimsd.studio.journal import item_label

if TYPE_CHECKING:
    from multimsd.alignment.api import Aligner
    from multimsd.config import AlignConfig
    from multimsd.studio.corpus import Article, Corpus, Key

# Aligners that only run with a model trained first: the studio has none to give them.
NEEDS_TRAINING = ("classifier",)


@dataclass
class OtherAligner:
    """One ``--aligner METHOD[:THETA]``: the aligner, its config (the run's, with this aligner's options)."""

    name: str  # "margin:1.0": the legend's label
    method: str
    threshold: float
    aligner: Aligner
    cfg: AlignConfig
    items: dict[Key, list[dict]] = field(default_factory=dict)
    n_encoded: int = 0


def _with_aligner(run_cfg: AlignConfig, method: str, theta: float | None) -> AlignConfig:
    """The run's config with ``method``'s options: the run's own when it is the run's method, else the
    aligner's defaults. θ: ``theta``, else the aligner's config default (for a cosine aligner the embedder's
    recommended θ), also when it is the run's method (the run's own θ is what the run's items show)."""
    from omegaconf import OmegaConf

    from multimsd.alignment.api import aligner_defaults

    node = OmegaConf.structured(run_cfg)
    default = aligner_defaults(method)
    if run_cfg.aligner.method != method:
        node.aligner = default
    node.aligner.threshold = default.threshold if theta is None else theta
    return OmegaConf.to_object(node)


def parse_aligners(specs: list[str], run_cfg: AlignConfig) -> list[OtherAligner]:
    """``--aligner`` values, checked: an unknown method or a bad θ is a :class:`MultimsdError` (one line)."""
    from multimsd.alignment.api import aligner as get_aligner

    out: list[OtherAligner] = []
    for spec in specs:
        method, sep, raw = spec.partition(":")
        if method in NEEDS_TRAINING:
            raise MultimsdError(
                f"--aligner {spec}: the {method} aligner needs a trained model; not in the studio"
            )
        aligner = get_aligner(method)  # unknown: one line listing the registered ones
        theta = None
        if sep:
            try:
                theta = float(raw)
            except ValueError:
                raise MultimsdError(f"--aligner {spec}: θ {raw!r} is not a number") from None
            if not np.isfinite(theta):
                raise MultimsdError(f"--aligner {spec}: θ must be a finite number")
        cfg = _with_aligner(run_cfg, method, theta)
        try:
            aligner.check_threshold(cfg.aligner.threshold)
            aligner.check_options(cfg)
        except MultimsdError as e:
            raise MultimsdError(f"--aligner {spec}: {e}") from None
        name = f"{method}:{cfg.aligner.threshold:g}"
        if any(o.name == name for o in out):
            raise MultimsdError(f"--aligner {spec}: given twice")
        out.append(OtherAligner(name, method, float(cfg.aligner.threshold), aligner, cfg))
    return out


_lock = threading.Lock()  # one aligner computation at a time (the embedding cache, the aligners' state)


def aligner_items(corpus: Corpus, art: Article, other: OtherAligner) -> list[dict]:
    """``other``'s alignments of ``art`` (computed on first use, then kept): members, score, cosine."""
    from multimsd.alignment.api import align_article

    key = (art.lang, art.article_id)
    if key in other.items:
        return other.items[key]
    a = other.aligner
    if a.needs == "embeddings":
        corpus.vectors(art)  # outside the lock: the embedding worker may take a while on an uncached run
    with _lock:
        if key in other.items:
            return other.items[key]
        rows = align_article(
            a,
            (art.complex, art.simple),
            art.lang,
            other.cfg,
            other.threshold,
            vectors=lambda: corpus.vectors(art),
        )
        if a.needs != "embeddings":
            other.n_encoded += a.n_encoded  # nm embeds its blocks itself (0 when they are cached)
        items = [
            {
                "complex": r["complex"],
                "simple": r["simple"],
                "score": round(r["score"], 4),
                "cosine": None if r["cosine"] is None else round(r["cosine"], 4),
            }
            for r in rows
        ]
        other.items[key] = items
    return items


def others_view(corpus: Corpus, art: Article, gold: set, rejected: set) -> dict:
    """The ``others`` of the article view: each other aligner's items with their status in the journal."""
    out = []
    for other in getattr(corpus, "others", []):
        items = []
        for it in aligner_items(corpus, art, other):
            item = (tuple(it["complex"]), tuple(it["simple"]))
            status = "accepted" if item in gold else "rejected" if item in rejected else "open"
            items.append(it | {"status": status, "label": item_label(item)})
        out.append(
            {"aligner": other.name, "method": other.method, "threshold": other.threshold, "items": items}
        )
    return {"others": out}


def n_encoded(corpus: Corpus) -> int:
    """Texts the other aligners ran through the encoder themselves (aligner nm's blocks)."""
    return sum(o.n_encoded for o in getattr(corpus, "others", []))


# ---------------------------------------------------------------------------------------------- scorers
def scorer_names() -> list[str]:
    from multimsd.alignment.api import string_scorers

    # "cosine" is the run's embedder here; the lexical aligner's string cosine (also named "cosine") stays a
    # part of the "lexical" mean, not a scorer of its own: each name once.
    return list(dict.fromkeys(["cosine", "lexical", *string_scorers()]))


# The columns the page shows unless told otherwise: the embedder, the string-metric mean, two of its parts.
DEFAULT_SCORERS = ("cosine", "lexical", "levenshtein_char", "jaccard")


def parse_scorers(raw: str | None, default: tuple[str, ...] | list[str]) -> list[str]:
    if raw is None or raw == "":
        return list(default)
    names = list(dict.fromkeys(n.strip() for n in raw.split(",") if n.strip()))
    known = scorer_names()
    bad = [n for n in names if n not in known]
    if bad or not names:
        raise ValueError(f"unknown scorer {', '.join(map(repr, bad))} (scorers: {', '.join(known)})")
    return names


def scores(corpus: Corpus, art: Article, side: str, idx: int, names: list[str]) -> dict[str, np.ndarray]:
    """Each scorer's similarity of sentence ``idx`` of ``side`` with every sentence of the other side."""
    out: dict[str, np.ndarray] = {}
    if "cosine" in names:
        vc, vs = corpus.vectors(art)
        out["cosine"] = (vc[idx] @ vs.T) if side == "complex" else (vs[idx] @ vc.T)
    strings = [n for n in names if n != "cosine"]
    if strings:
        from multimsd.alignment.api import mean_string_score, string_scorers, string_scores

        wanted = list(string_scorers()) if "lexical" in strings else [n for n in strings if n != "lexical"]
        if side == "complex":
            mats = {
                k: m[0] for k, m in string_scores([art.complex[idx]], art.simple, art.lang, wanted).items()
            }
        else:
            mats = {
                k: m[:, 0] for k, m in string_scores(art.complex, [art.simple[idx]], art.lang, wanted).items()
            }
        if "lexical" in strings:
            out["lexical"] = mean_string_score(mats)
        for n in strings:
            if n != "lexical":
                out[n] = mats[n]
    return {n: np.asarray(out[n], dtype=np.float64) for n in names}


def fractional_ranks(sims: np.ndarray) -> np.ndarray:
    """Rank 1 = most similar; tied scores share the mean of the ranks they span (1, 2.5, 2.5, 4)."""
    order = np.argsort(-sims, kind="stable")
    ranks = np.empty(len(sims), dtype=np.float64)
    ranks[order] = np.arange(1, len(sims) + 1)
    for value in np.unique(sims):
        tied = sims == value
        if tied.sum() > 1:
            ranks[tied] = ranks[tied].mean()
    return ranks


def ranked(sims: np.ndarray, k: int) -> list[dict]:
    """The top ``k`` sentences, most similar first (ties: lower index first), with 1-based rank and score."""
    order = np.argsort(-sims, kind="stable")[:k]
    return [{"idx": int(j), "rank": r + 1, "score": round(float(sims[j]), 4)} for r, j in enumerate(order)]


def combine(by_scorer: dict[str, np.ndarray], k: int) -> list[dict]:
    """The mean-rank combination: top ``k`` by mean fractional rank (lower first; ties: lower index)."""
    ranks = {n: fractional_ranks(s) for n, s in by_scorer.items()}
    mean = np.mean(np.stack(list(ranks.values())), axis=0)
    order = np.argsort(mean, kind="stable")[:k]
    return [
        {
            "idx": int(j),
            "rank": r + 1,
            "score": round(float(mean[j]), 4),
            "ranks": {n: float(rk[j]) for n, rk in ranks.items()},
        }
        for r, j in enumerate(order)
    ]


def candidates_view(corpus: Corpus, art: Article, side: str, idx: int, k: int, raw: str | None) -> dict:
    """``/api/candidates``' rankings: ``scorers`` (each scorer's top k: the default columns and any scorer
    ``raw`` names) and, when ``raw`` names scorers (``scorers=a,b``), ``combined`` (their mean-rank
    combination). A bad name is a ValueError."""
    names = parse_scorers(raw, DEFAULT_SCORERS)
    shown = list(dict.fromkeys([*DEFAULT_SCORERS, *names]))  # the page's columns, whatever it combines
    sims = scores(corpus, art, side, idx, shown)
    out: dict = {"scorers": {n: ranked(s, k) for n, s in sims.items()}}
    if raw:
        ranking = combine({n: sims[n] for n in names}, k)
        out["combined"] = {"scorers": names, "method": "mean rank", "ranking": ranking}
    return out


def info(corpus: Corpus) -> dict:
    return {
        "others": [
            {"aligner": o.name, "method": o.method, "threshold": o.threshold}
            for o in getattr(corpus, "others", [])
        ],
        "scorers": scorer_names(),
        "default_scorers": list(DEFAULT_SCORERS),
    }

"""Scoring sentence alignments against human gold alignments, and tuning θ (MultiMSD section 3.3, Table 3).

Scoring follows the DEplain authors and the MultiMSD paper: a predicted pair is correct iff it is exactly a
gold pair; precision = correct / predicted, recall = correct / gold. An n:m prediction (aligner=nm) is correct
iff its complex and simple member sets both equal those of one gold item. An argmax aligner only ever predicts
1:1 pairs, so n:m gold items count as misses unless ``only_1to1`` restricts the gold to 1:1. :func:`subsets`
scores the 1:1 and the n:m items apart (predictions and gold of that shape only); :func:`per_article` each
article pair apart (the micro-averaged totals hide that a few long articles can hold most of the misses).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path

from multimsd.alignment.match import Match, passes
from multimsd.errors import MultimsdError
from multimsd.gold import GoldDoc, GoldPair


@dataclass
class PRF:
    correct: int
    predicted: int
    gold: int

    @property
    def precision(self) -> float:
        return self.correct / self.predicted if self.predicted else 0.0

    @property
    def recall(self) -> float:
        return self.correct / self.gold if self.gold else 0.0

    @property
    def f1(self) -> float:
        p, r = self.precision, self.recall
        return 2 * p * r / (p + r) if p + r else 0.0

    def __add__(self, other: PRF) -> PRF:
        return PRF(self.correct + other.correct, self.predicted + other.predicted, self.gold + other.gold)

    def as_dict(self) -> dict:
        return {
            "precision": self.precision,
            "recall": self.recall,
            "f1": self.f1,
            "correct": self.correct,
            "predicted": self.predicted,
            "gold": self.gold,
        }


def gold_set(doc: GoldDoc, only_1to1: bool = False) -> set[GoldPair]:
    return {g for g in doc.gold if len(g[0]) == 1 and len(g[1]) == 1} if only_1to1 else set(doc.gold)


def as_item(p: tuple[int, int] | GoldPair | Match) -> GoldPair:
    """A prediction as a gold-shaped item: (complex members, simple members), each sorted."""
    if isinstance(p, Match):
        return p.complex_members, p.simple_members
    c, s = p
    return (c,) if isinstance(c, int) else tuple(sorted(c)), (s,) if isinstance(s, int) else tuple(sorted(s))


def is_1to1(item: GoldPair) -> bool:
    return len(item[0]) == 1 and len(item[1]) == 1


def score_doc(pred: list[tuple[int, int]] | list[GoldPair] | list[Match], gold: set[GoldPair]) -> PRF:
    """Exact-item precision/recall counts for one document (1:1 (i, j) pairs, n:m items or matches)."""
    pred_set = {as_item(p) for p in pred}
    return PRF(len(pred_set & gold), len(pred_set), len(gold))


def split_gold_ids(docs: list[GoldDoc], valid_fraction: float, seed: int) -> tuple[set[str], set[str]]:
    """Split gold article ids in a validation part (θ tuning) and a test part (reporting), like the paper."""
    ids = sorted({d.article_id for d in docs})
    if len(ids) < 2:
        raise MultimsdError("gold evaluation needs at least 2 article pairs (one to tune θ, one to test)")
    random.Random(seed).shuffle(ids)
    n_valid = min(len(ids) - 1, max(1, round(len(ids) * valid_fraction)))
    return set(ids[:n_valid]), set(ids[n_valid:])


def sweep(
    candidates: dict[tuple[str, str], list[Match]],
    docs: list[GoldDoc],
    thresholds: list[float],
    only_1to1: bool = False,
    strict: bool = False,
) -> dict[float, PRF]:
    """Micro-averaged P/R/F1 over ``docs`` for each θ, from threshold-free candidate matches.

    Matching decides *which* pairs compete before θ is applied, so the candidates (matches at θ = -inf)
    are computed once and each θ is a filter on their scores (``score > θ`` if ``strict``, else ``>=``).
    """
    out = {}
    for theta in thresholds:
        total = PRF(0, 0, 0)
        for d in docs:
            total = total + _doc_prf(candidates, d, theta, only_1to1, strict)
        out[theta] = total
    return out


def subsets(
    candidates: dict[tuple[str, str], list[Match]], docs: list[GoldDoc], theta: float, strict: bool = False
) -> dict[str, PRF]:
    """P/R/F1 of the 1:1 items and of the n:m items (1:m, n:1, n:m) apart, at one θ.

    Each subset compares the predictions of that shape with the gold items of that shape, so a 1:1 aligner's
    "n:m" row is empty and its "1:1" row is its score on the 1:1 gold.
    """
    out = {"1:1": PRF(0, 0, 0), "n:m": PRF(0, 0, 0)}
    for d in docs:
        pred = {as_item(m) for m in candidates[(d.article_id, d.lang)] if passes(m.score, theta, strict)}
        for name, shape in (("1:1", True), ("n:m", False)):
            p = {x for x in pred if is_1to1(x) == shape}
            g = {x for x in d.gold if is_1to1(x) == shape}
            out[name] = out[name] + PRF(len(p & g), len(p), len(g))
    return out


def per_article(
    candidates: dict[tuple[str, str], list[Match]],
    docs: list[GoldDoc],
    theta: float,
    only_1to1: bool = False,
    strict: bool = False,
) -> dict[str, PRF]:
    """P/R/F1 of each article pair of ``docs`` (one language: article ids are unique in it) at one θ.

    The counts add up to :func:`sweep`'s micro-averaged total at the same θ.
    """
    return {d.article_id: _doc_prf(candidates, d, theta, only_1to1, strict) for d in docs}


def _doc_prf(
    candidates: dict[tuple[str, str], list[Match]], d: GoldDoc, theta: float, only_1to1: bool, strict: bool
) -> PRF:
    """One article pair's counts at θ (the candidates whose score passes θ against its gold)."""
    pred = [m for m in candidates[(d.article_id, d.lang)] if passes(m.score, theta, strict)]
    return score_doc(pred, gold_set(d, only_1to1))


def best_threshold(curve: dict[float, PRF]) -> float:
    """θ with the highest F1; on ties the higher θ (fewer, surer pairs)."""
    return max(curve, key=lambda t: (round(curve[t].f1, 12), t))


def write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

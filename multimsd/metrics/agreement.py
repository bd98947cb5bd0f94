"""Agreement between two annotators of gold sentence alignments: item-level F1 and Cohen's κ.

Both take one annotator's work as ``{article key: Annotation}``, an article key being anything hashable (the
studio uses ``(lang, article_id)``) and an item anything hashable (the studio uses ``(complex members, simple
members)``, sorted index tuples, as :mod:`multimsd.gold` reads them). Only the article pairs **both**
annotators annotated count: an article one of them never touched says nothing about agreement.

**Item-level F1** (:func:`item_f1`) compares the two gold item sets exactly, as the gold scorer compares a
prediction with the gold (an item agrees iff both annotators have exactly that item, every member the same).
It is symmetric: with ``A`` and ``B`` the two sets, F1 = 2 |A ∩ B| / (|A| + |B|) — the F1 of either annotator
scored against the other. Per article pair, and pooled over the shared article pairs (the counts summed,
then F1: micro-averaged like the gold scorer's P/R/F1). Two empty sets agree (F1 1.0): both said "no
alignment here".

**Cohen's κ over candidate decisions** (:func:`decisions`, :func:`kappa`). The decision set is, within the
article pairs both annotated, every item that either annotator accepted (it is in their gold), or rejected,
or that the run predicted (the aligner's output the annotator looked at): the union of those four sets (plus
the predictions) per article pair. Each annotator's decision on an item is 1 if the item is in their gold,
else 0 (rejected, or never accepted). κ is :func:`sklearn.metrics.cohen_kappa_score` of the two decision
lists; it is undefined (``None``) when there is no decision or both annotators used one label only (chance
agreement is then 1).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field


@dataclass
class Annotation:
    """One annotator's work on one article pair: the items in their gold and the items they rejected."""

    gold: set[Hashable] = field(default_factory=set)
    rejected: set[Hashable] = field(default_factory=set)


def pair_f1(a: set, b: set) -> float:
    """F1 of one item set against another: 2 |A ∩ B| / (|A| + |B|); 1.0 when both are empty."""
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 1.0


def shared_articles(a: dict, b: dict) -> list:
    """The article keys both annotators annotated, sorted."""
    return sorted(set(a) & set(b))


def item_f1(a: dict[Hashable, Annotation], b: dict[Hashable, Annotation]) -> dict:
    """Item-level agreement of two annotators' gold over the article pairs both annotated.

    Returns ``{"articles": n, "items_a": |A|, "items_b": |B|, "both": |A ∩ B|, "f1": pooled F1 or None
    (no shared article), "per_article": {key: F1}}``."""
    keys = shared_articles(a, b)
    both = sum(len(a[k].gold & b[k].gold) for k in keys)
    n_a = sum(len(a[k].gold) for k in keys)
    n_b = sum(len(b[k].gold) for k in keys)
    pooled = (2 * both / (n_a + n_b) if n_a + n_b else 1.0) if keys else None
    return {
        "articles": len(keys),
        "items_a": n_a,
        "items_b": n_b,
        "both": both,
        "f1": pooled,
        "per_article": {k: pair_f1(a[k].gold, b[k].gold) for k in keys},
    }


def decisions(
    a: dict[Hashable, Annotation],
    b: dict[Hashable, Annotation],
    predicted: dict[Hashable, Iterable[Hashable]] | None = None,
) -> tuple[list[tuple[Hashable, Hashable]], list[int], list[int]]:
    """The candidate decisions of both annotators (the decision set is in the module docstring).

    Returns ``(items, labels_a, labels_b)``: ``items`` the ``(article key, item)`` decided, sorted; each
    label 1 if the item is in that annotator's gold, else 0."""
    predicted = predicted or {}
    items: list[tuple[Hashable, Hashable]] = []
    la: list[int] = []
    lb: list[int] = []
    for k in shared_articles(a, b):
        cand = a[k].gold | a[k].rejected | b[k].gold | b[k].rejected | set(predicted.get(k, ()))
        for it in sorted(cand):
            items.append((k, it))
            la.append(int(it in a[k].gold))
            lb.append(int(it in b[k].gold))
    return items, la, lb


def kappa(labels_a: list[int], labels_b: list[int]) -> float | None:
    """Cohen's κ of two label lists (scikit-learn's); None where undefined (no label, or one class only)."""
    if not labels_a or len(set(labels_a) | set(labels_b)) < 2:
        return None
    from sklearn.metrics import cohen_kappa_score

    k = float(cohen_kappa_score(labels_a, labels_b))
    return None if math.isnan(k) else k


def agreement(
    a: dict[Hashable, Annotation],
    b: dict[Hashable, Annotation],
    predicted: dict[Hashable, Iterable[Hashable]] | None = None,
) -> dict:
    """Both measures for one pair of annotators: :func:`item_f1`'s dict (``per_article`` left out) with
    ``"decisions"`` (how many), ``"agree"`` (how many with the same label) and ``"kappa"``."""
    f1 = item_f1(a, b)
    f1.pop("per_article")
    _, la, lb = decisions(a, b, predicted)
    return {
        **f1,
        "decisions": len(la),
        "agree": sum(x == y for x, y in zip(la, lb)),
        "kappa": kappa(la, lb),
    }


__all__ = ["Annotation", "agreement", "decisions", "item_f1", "kappa", "pair_f1", "shared_articles"]

"""Article-level train/validation/test split (MultiMSD section 5.1).

The nine language versions of an article are translations of each other, so a sentence-level random split
would put translations of one test sentence into the training data of the multilingual model. The split is
therefore made once over *article ids*, and every language uses the same assignment.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

SPLITS = ("train", "validation", "test")


def split_article_ids(
    article_ids: Iterable[str],
    valid_articles: int = 128,
    test_articles: int = 128,
    small_corpus_fraction: float = 0.1,
    seed: int = 42,
) -> dict[str, str]:
    """Map each article id to "train", "validation" or "test".

    Validation and test get ``valid_articles``/``test_articles`` ids each (the paper's 128), capped at
    ``small_corpus_fraction`` of the ids (at least one each) so a small corpus keeps most of its articles for
    training. Fewer than 3 ids: everything is training data. Deterministic for a given id set and seed,
    independent of input order.
    """
    ids = sorted(set(article_ids))
    n = len(ids)
    if n < 3:
        return dict.fromkeys(ids, "train")
    cap = max(1, round(n * small_corpus_fraction))
    n_valid, n_test = min(valid_articles, cap), min(test_articles, cap)
    random.Random(seed).shuffle(ids)
    assignment = {}
    for k, article_id in enumerate(ids):
        if k < n_valid:
            assignment[article_id] = "validation"
        elif k < n_valid + n_test:
            assignment[article_id] = "test"
        else:
            assignment[article_id] = "train"
    return assignment

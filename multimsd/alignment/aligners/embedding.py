"""``aligner=symmetric|asymmetric|margin``: MultiMSD's embedding aligners (the rules in :mod:`..match`).

Each article pair's sentences are compared through their embeddings' k nearest neighbours in the other
article; the three aligners differ only in the matching rule applied to those neighbour lists.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from multimsd.alignment.aligners.registry import Aligner, register_aligner
from multimsd.alignment.match import KNN_METHODS, STRICT_METHODS, Match, article_knn, match_from_knn
from multimsd.config import AlignConfig, GoldConfig
from multimsd.errors import MultimsdError

# Neighbours searched per sentence: the margin's k, and at least 4 so FAISS tie order can be made exact.
MIN_SEARCH_K = 4


def candidate_matches(
    vecs: Sequence[tuple[np.ndarray, np.ndarray]], method: str, margin_k: int, use_faiss: bool
) -> list[list[Match]]:
    """Matches of every document at θ = -inf (θ is a filter on their scores applied afterwards)."""
    k = max(margin_k, MIN_SEARCH_K)
    result = []
    for c_vecs, s_vecs in vecs:
        fwd, bwd = article_knn(c_vecs, s_vecs, k, use_faiss)
        result.append(match_from_knn(fwd, bwd, method, float("-inf"), margin_k))
    return result


class EmbeddingAligner(Aligner):
    """One k-NN matching rule over sentence embeddings; ``score`` is the cosine (or the margin)."""

    needs = "embeddings"

    def __init__(self, name: str) -> None:
        self.name = name
        # The authors' script keeps ``sim > threshold`` (pattern1 / pattern2); see multimsd.alignment.match.
        self.strict_threshold = name in STRICT_METHODS

    def score_article(
        self, complex_side: np.ndarray, simple_side: np.ndarray, lang: str, cfg: AlignConfig
    ) -> list[Match]:
        [matches] = candidate_matches(
            [(complex_side, simple_side)], self.name, cfg.aligner.margin_k, cfg.aligner.use_faiss
        )
        return matches

    def thresholds(self, gold: GoldConfig) -> list[float]:
        return list(gold.margin_thresholds if self.name == "margin" else gold.thresholds)

    def check_threshold(self, threshold: float) -> None:
        if self.name == "margin":
            if threshold < 0:
                raise MultimsdError(f"aligner.threshold={threshold}: a margin threshold must be >= 0")
        elif not -1.0 <= threshold <= 1.0:
            raise MultimsdError(f"aligner.threshold={threshold} is outside [-1, 1], the range of a cosine")


for _name in KNN_METHODS:
    register_aligner(EmbeddingAligner(_name))

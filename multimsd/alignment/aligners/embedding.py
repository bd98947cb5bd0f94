"""``aligner=symmetric|asymmetric|margin``: MultiMSD's embedding aligners (the rules in :mod:`..match`).

Each article pair's sentences are compared through their embeddings' k nearest neighbours in the other
article; the three aligners differ only in the matching rule applied to those neighbour lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from multimsd.alignment.aligners.registry import Aligner, register_aligner
from multimsd.alignment.match import KNN_METHODS, STRICT_METHODS, Match, article_knn, match_from_knn
from multimsd.config import AlignConfig, AlignerConfig
from multimsd.errors import MultimsdError


@dataclass
class EmbeddingAlignerConfig(AlignerConfig):
    """``aligner=symmetric`` (mutual argmax: precision; MultiMSD's choice) and ``aligner=asymmetric`` (the
    union of both argmax directions: recall). θ is on the cosine and defaults to the embedder's tuned value."""

    threshold: float = "${embedder.recommended_threshold}"  # type: ignore[assignment]  # resolved by OmegaConf
    threshold_grid: list[float] = field(default_factory=lambda: [round(0.5 + 0.05 * i, 2) for i in range(10)])
    # FAISS inner-product search (false: numpy; the same neighbours, ties included).
    use_faiss: bool = True


@dataclass
class MarginAlignerConfig(EmbeddingAlignerConfig):
    """``aligner=margin``: mutual argmax of the ratio margin score (LASER-style bitext mining); θ is on the
    margin, a ratio around 1."""

    threshold: float = 1.0
    threshold_grid: list[float] = field(
        default_factory=lambda: [round(0.9 + 0.025 * i, 3) for i in range(17)]
    )
    margin_k: int = 4  # neighbours averaged in the margin's denominator


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
        self.options = MarginAlignerConfig if name == "margin" else EmbeddingAlignerConfig
        # The authors' script keeps ``sim > threshold`` (pattern1 / pattern2); see multimsd.alignment.match.
        self.strict_threshold = name in STRICT_METHODS

    def score_article(
        self, complex_side: np.ndarray, simple_side: np.ndarray, lang: str, cfg: AlignConfig
    ) -> list[Match]:
        o = self.settings(cfg)
        margin_k = o.margin_k if isinstance(o, MarginAlignerConfig) else MIN_SEARCH_K
        [matches] = candidate_matches([(complex_side, simple_side)], self.name, margin_k, o.use_faiss)
        return matches

    def check_options(self, cfg: AlignConfig) -> None:
        o = self.settings(cfg)
        if isinstance(o, MarginAlignerConfig) and o.margin_k < 1:
            raise MultimsdError(f"aligner.margin_k={o.margin_k}: must be >= 1")

    def check_threshold(self, threshold: float) -> None:
        if self.name == "margin":
            if threshold < 0:
                raise MultimsdError(f"aligner.threshold={threshold}: a margin threshold must be >= 0")
        elif not -1.0 <= threshold <= 1.0:
            raise MultimsdError(f"aligner.threshold={threshold} is outside [-1, 1], the range of a cosine")


for _name in KNN_METHODS:
    register_aligner(EmbeddingAligner(_name))

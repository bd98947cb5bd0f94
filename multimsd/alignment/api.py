"""The alignment package as the commands above it see it: a small, public set of functions.

``multimsd studio`` reads a run's alignments through this module and nothing else of the package
(``tests/studio/test_studio.py`` checks it), so the stage, the encoder, the aligners and gold mode can change their
insides without the studio noticing. Each function is what ``align.py`` itself does at that step, for an
output directory or one article pair at a time:

- :func:`read_output_config`: the config an ``align.py`` output was made with (``align_config.yaml``);
- :func:`segment_articles`: article pairs segmented as the run segmented them (sentence positions mean what
  they meant to the aligner);
- :func:`segment_text`: one document's sentences, by the segmenter every stage uses (``multimsd simplify``'s);
- :func:`make_embedder`: the run's embedder over its on-disk cache;
- :func:`aligner`, :func:`aligner_defaults`, :func:`align_article`: a registered aligner, its default
  options, and its alignments of one article pair (θ by the aligner's own rule, then the run's post-filters);
- :func:`string_scorers`, :func:`string_scores`, :func:`mean_string_score`: the lexical aligner's string
  similarities;
- :func:`evaluate_gold`: gold mode's scores of the aligners against gold article pairs.

Every import is inside the function that needs it: importing this module loads nothing heavy.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from multimsd.errors import MultimsdError

if TYPE_CHECKING:
    import numpy as np

    from multimsd.alignment.aligners import Aligner  # the type of what aligner() returns
    from multimsd.alignment.embed import Embedder
    from multimsd.config import AlignConfig, AlignerConfig
    from multimsd.gold import GoldDoc
    from multimsd.io import ArticlePair


def read_output_config(align_dir: Path) -> AlignConfig:
    """The config an ``align.py`` output directory was made with; a damaged file is one line."""
    from omegaconf import OmegaConf

    from multimsd.alignment.stage import to_config
    from multimsd.config import ALIGN_CONFIG_FILE

    try:
        raw = OmegaConf.load(align_dir / ALIGN_CONFIG_FILE)
    except Exception as e:  # a damaged file: YAML's own message, first line
        first = (str(e).strip().splitlines() or [type(e).__name__])[0]
        raise MultimsdError(f"{align_dir / ALIGN_CONFIG_FILE}: {first}") from None
    return to_config(raw)


def segment_articles(pairs: list[ArticlePair], cfg: AlignConfig) -> list[tuple[list[str], list[str]]]:
    """Each pair's (professional, consumer) sentences, segmented with ``cfg``'s settings, as the run did."""
    from multimsd.alignment.encode import segment_pairs

    return segment_pairs(pairs, cfg.segment.cleanup, cfg.segment.boilerplate_fraction, show_progress=False)


def segment_text(text: str, lang: str) -> list[str]:
    """The sentences of one document in ``lang``, cut as ``multimsd simplify`` and the alignment cut them; an
    unknown language is one error line."""
    from multimsd.alignment.segment import segment_document

    return segment_document(text, lang)


def make_embedder(cfg: AlignConfig) -> Embedder:
    """The run's embedder; it opens the run's cache and loads the model only on a cache miss."""
    from multimsd.alignment.encode import make_embedder as make

    return make(cfg)


def aligner(method: str) -> Aligner:
    """The registered aligner ``method`` (an unknown one: one line that lists the registered ones)."""
    from multimsd.alignment.aligners import get_aligner

    return get_aligner(method)


def aligner_defaults(method: str) -> AlignerConfig:
    """Aligner ``method``'s default options (what ``aligner=METHOD`` composes)."""
    from multimsd.alignment.aligners import ALIGNERS

    return ALIGNERS[method].default_options()


def align_article(
    aligner: Aligner,
    sentences: tuple[list[str], list[str]],
    lang: str,
    cfg: AlignConfig,
    threshold: float,
    vectors: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None,
) -> list[dict]:
    """One article pair aligned as ``align.py`` aligns it: the aligner's candidates, θ by its own rule
    (``Aligner.keeps``), then ``cfg``'s post-filters. ``vectors`` gives the two sides' sentence vectors; it is
    called only for an aligner that matches embeddings. Rows, sorted by members: ``complex`` and ``simple``
    (sentence positions, 0-based), ``score``, ``cosine`` (None where the aligner has none)."""
    import math

    from multimsd.alignment.aligners import aligner_candidates
    from multimsd.alignment.filters import filter_pairs

    complex_side, simple_side = sentences
    if aligner.needs == "embeddings":
        if vectors is None:
            raise MultimsdError(f"aligner {aligner.name!r} needs sentence vectors")
        inputs = vectors()
    else:
        inputs = (complex_side, simple_side)
    [matches] = aligner_candidates(aligner, [inputs], [lang], cfg, min_score=threshold)
    rows = [
        {  # the filters read the texts and the language
            "complex": " ".join(complex_side[k] for k in m.complex_members),
            "simple": " ".join(simple_side[k] for k in m.simple_members),
            "lang": lang,
            "members": (list(m.complex_members), list(m.simple_members)),
            "score": float(m.score),
            "cosine": None if math.isnan(m.cosine) else float(m.cosine),
        }
        for m in matches
        if aligner.keeps(m.score, threshold)
    ]
    rows, _ = filter_pairs(rows, cfg.filters)
    out = [
        {"complex": r["members"][0], "simple": r["members"][1], "score": r["score"], "cosine": r["cosine"]}
        for r in rows
    ]
    return sorted(out, key=lambda r: (r["complex"], r["simple"]))


def string_scorers() -> tuple[str, ...]:
    """The names of the lexical aligner's string similarities (``levenshtein_char``, ``jaccard``, …)."""
    from multimsd.alignment.aligners.lexical import STRING_SCORES

    return tuple(STRING_SCORES)


def string_scores(
    complex_sents: Sequence[str], simple_sents: Sequence[str], lang: str, names: Sequence[str]
) -> dict[str, np.ndarray]:
    """Each named string similarity of every (complex i, simple j) pair: name -> (m, n) array."""
    from multimsd.alignment.aligners.lexical import score_matrices

    return score_matrices(complex_sents, simple_sents, lang, list(names))


def mean_string_score(matrices: dict[str, np.ndarray]) -> np.ndarray:
    """The lexical aligner's score: the mean of its string similarities (Adduru et al. 2018)."""
    from multimsd.alignment.aligners.lexical import mean_similarity

    return mean_similarity(matrices)


def evaluate_gold(cfg: AlignConfig, docs: list[GoldDoc]) -> dict:
    """What ``align.py mode=gold`` computes for ``docs`` under ``cfg`` (θ tuned on the validation half, P/R/F1
    on the test half), without writing its report."""
    from multimsd.alignment.goldmode import evaluate_gold as evaluate

    return evaluate(cfg, docs)


__all__ = [
    "align_article",
    "aligner",
    "aligner_defaults",
    "evaluate_gold",
    "make_embedder",
    "mean_string_score",
    "read_output_config",
    "segment_articles",
    "segment_text",
    "string_scorers",
    "string_scores",
]

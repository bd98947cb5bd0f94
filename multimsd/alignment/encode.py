"""What both alignment modes do before any aligner runs: article pairs -> sentences -> sentence embeddings.

Shared by align mode (:mod:`multimsd.alignment.stage`) and gold mode (:mod:`multimsd.alignment.goldmode`),
below both, so neither has to import the other.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from itertools import accumulate
from pathlib import Path
from typing import TYPE_CHECKING

from multimsd.config import AlignConfig
from multimsd.console import progress_bar
from multimsd.errors import MultimsdError
from multimsd.io import ArticlePair

if TYPE_CHECKING:
    from multimsd.alignment.embed import Embedder
    from multimsd.alignment.embed.shard import Shard


def segment_pairs(
    pairs: list[ArticlePair], cleanup: bool, fraction: float, show_progress: bool = True
) -> list[tuple[list[str], list[str]]]:
    """Sentences of each side of each pair, optionally with the Cardon & Grabar clean-up per sub-corpus."""
    from multimsd.alignment.segment import clean_documents, segment_document

    docs = [
        (segment_document(p.complex, p.lang), segment_document(p.simple, p.lang))
        for p in progress_bar(
            pairs, desc="segmenting", unit="article", disable=not show_progress or len(pairs) < 50
        )
    ]
    if cleanup:
        # A sub-corpus is one language's professional (or consumer) articles: boilerplate such as
        # "See also ..." repeats across the articles of one side of one language.
        by_lang = defaultdict(list)
        for k, p in enumerate(pairs):
            by_lang[p.lang].append(k)
        for ks in by_lang.values():
            for side in (0, 1):
                cleaned = clean_documents([docs[k][side] for k in ks], fraction)
                for k, sents in zip(ks, cleaned):
                    docs[k] = (sents, docs[k][1]) if side == 0 else (docs[k][0], sents)
    for p, (c, s) in zip(pairs, docs):
        if not c or not s:
            side = "complex" if not c else "simple"
            raise MultimsdError(
                f"article {p.article_id!r} ({p.lang}): no {side} sentences left after segmentation"
            )
    return docs


def make_embedder(cfg: AlignConfig, shard: Shard | None = None) -> Embedder:
    """The configured embedder; in a multi-process run (``shard``) on this process's own GPU."""
    from multimsd.alignment.embed import Embedder

    root = Path(cfg.cache_dir) / "embeddings" if cfg.cache_dir else None
    ecfg = cfg.embedder
    if shard is not None and ecfg.device in ("cuda", "auto") and shard.device.startswith("cuda"):
        # "cuda" alone would put every process's copy of the model on GPU 0.
        ecfg = replace(ecfg, device=shard.device)
    return Embedder(ecfg, root, shard)


def embed_documents(
    embedder: Embedder, docs: list[tuple[list[str], list[str]]], cfg: AlignConfig
) -> list | None:
    """Embed all sentences of all documents in two calls (one per side), then cut per document.

    None on the processes other than the main one of a multi-process run: they only encode their share.
    """
    sides = []
    for side, prefix in ((0, cfg.embedder.complex_prefix), (1, cfg.embedder.simple_prefix)):
        sents = [s for d in docs for s in d[side]]
        vecs = embedder.encode(sents, prefix=prefix)
        if vecs is None:
            continue  # not the main process; it still takes part in the other side's collectives
        bounds = [0, *accumulate(len(d[side]) for d in docs)]
        sides.append([vecs[bounds[k] : bounds[k + 1]] for k in range(len(docs))])
    if embedder.shard is not None and not embedder.shard.is_main:
        return None
    return list(zip(sides[0], sides[1]))

"""What the studio shows: the article pairs of an alignment output, as the aligner saw them.

An ``align.py`` output directory holds the aligned rows (a ``DatasetDict``) and the config that made them
(``align_config.yaml``), but not the articles' sentences. They are rebuilt here from the same input with the
same segmentation, so sentence positions mean what they meant to the aligner and to ``align.py mode=gold``.
Sentence vectors come through the project's own embedder and its on-disk cache: on a run whose embeddings are
cached nothing is encoded and the model is never loaded. All of it through the alignment package's public
interface, :mod:`multimsd.alignment.api`.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError

Key = tuple[str, str]  # (lang, article_id)


@dataclass
class Predicted:
    """One aligned row of the run: member sentence indices on each side and the aligner's score."""

    complex: tuple[int, ...]
    simple: tuple[int, ...]
    score: float
    cosine: float


@dataclass
class Article:
    lang: str
    article_id: str
    split: str
    complex: list[str]
    simple: list[str]
    predicted: list[Predicted] = field(default_factory=list)


def find_align_dir(path: Path) -> Path:
    """``path`` itself when it is an ``align.py`` output, its ``align/`` when it is a ``multimsd run``."""
    if not path.exists():
        raise MultimsdError(f"{path}: no such directory")
    if not path.is_dir():
        raise MultimsdError(f"{path}: not a directory (a multimsd run directory or a multimsd align output)")
    for candidate in (path, path / "align"):
        if (candidate / "dataset_dict.json").is_file() and (candidate / "align_config.yaml").is_file():
            return candidate
    raise MultimsdError(
        f"{path}: no alignments found (neither a multimsd run directory with align/ nor a multimsd align output "
        "directory with dataset_dict.json and align_config.yaml)"
    )


def input_path(raw: str | None, align_dir: Path) -> str | None:
    """The run's ``data.path``. A relative one was relative to where the run started, which is unknown
    here: the current directory is tried first, then the directories above the output."""
    if raw is None or Path(raw).expanduser().is_absolute() or Path(raw).exists():
        return raw
    for base in (align_dir.parent, align_dir.parent.parent, align_dir.parent.parent.parent):
        if (base / raw).exists():
            return str(base / raw)
    return raw  # a Hub id, or a file that is gone: load_article_pairs says which in one line


def _predicted_rows(align_dir: Path) -> dict[Key, list[tuple[Predicted, str]]]:
    from multimsd.io import load_saved

    out: dict[Key, list[tuple[Predicted, str]]] = {}
    for split, ds in load_saved(align_dir).items():
        cols = ds.select_columns(
            ["lang", "article_id", "complex_members", "simple_members", "score", "cosine"]
        )
        for r in cols.to_list():
            p = Predicted(tuple(r["complex_members"]), tuple(r["simple_members"]), r["score"], r["cosine"])
            out.setdefault((r["lang"], r["article_id"]), []).append((p, split))
    return out


class Corpus:
    """The article pairs of one alignment output, with their predicted alignments and (lazily) vectors."""

    def __init__(self, align_dir: Path):
        from multimsd.alignment.api import read_output_config, segment_articles
        from multimsd.io import load_article_pairs
        from multimsd.split import split_article_ids

        self.align_dir = align_dir
        self.cfg = read_output_config(align_dir)
        cfg = self.cfg
        langs = list(cfg.data.languages)
        pairs = [
            p
            for p in load_article_pairs(input_path(cfg.data.path, align_dir), cfg.data.hub_split)
            if p.lang in langs
        ]
        if cfg.data.max_articles:  # the same articles as the run (multimsd.alignment.stage)
            keep = set(sorted({p.article_id for p in pairs})[: cfg.data.max_articles])
            pairs = [p for p in pairs if p.article_id in keep]
        if not pairs:
            raise MultimsdError(f"{align_dir}: its input has no article pairs in {', '.join(langs)}")
        docs = segment_articles(pairs, cfg)
        assignment = split_article_ids((p.article_id for p in pairs), cfg.split)
        rows = _predicted_rows(align_dir)
        order = {lang: k for k, lang in enumerate(LANGUAGES)}
        self.articles: dict[Key, Article] = {}
        for p, (c, s) in sorted(zip(pairs, docs), key=lambda x: (order[x[0].lang], x[0].article_id)):
            art = Article(p.lang, p.article_id, assignment[p.article_id], list(c), list(s))
            for pred, _split in rows.get((p.lang, p.article_id), []):
                if max(pred.complex) >= len(c) or max(pred.simple) >= len(s):
                    # The input changed since the run: indices would point at the wrong sentences.
                    raise MultimsdError(
                        f"{align_dir}: article {p.article_id!r} ({p.lang}) has fewer sentences than its "
                        "alignments refer to: the run's input has changed since it was aligned"
                    )
                art.predicted.append(pred)
            art.predicted.sort(key=lambda q: (q.complex, q.simple))
            self.articles[(p.lang, p.article_id)] = art
        missing = sorted(set(rows) - set(self.articles))
        if missing:
            lang, aid = missing[0]
            raise MultimsdError(
                f"{align_dir}: article {aid!r} ({lang}) is aligned but not in the run's input any more "
                f"({len(missing)} such article(s))"
            )
        # The embedding cache is SQLite, whose connection belongs to the thread that opened it: one worker
        # thread owns the embedder, whichever server thread asks.
        self._worker = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="studio-embed")
        self._embedder = None
        self._vectors: dict[Key, tuple[np.ndarray, np.ndarray]] = {}
        self.others: list = []  # --aligner: multimsd.studio.scorers.OtherAligner, computed per article lazily

    # ------------------------------------------------------------------------------------------ reading
    @property
    def languages(self) -> list[str]:
        return list(dict.fromkeys(lang for lang, _ in self.articles))

    def get(self, lang: str, article_id: str) -> Article | None:
        """The article, or None: ids are only ever looked up here, never turned into a path."""
        return self.articles.get((lang, article_id))

    @property
    def n_encoded(self) -> int:
        """Sentences run through the encoder so far (0 on a run whose embeddings are all cached)."""
        own = 0 if self._embedder is None else self._embedder.n_encoded
        return own + sum(o.n_encoded for o in self.others)  # + what --aligner nm embedded for its blocks

    # ------------------------------------------------------------------------------------------ vectors
    def _encode(self, art: Article) -> tuple[np.ndarray, np.ndarray]:
        from multimsd.alignment.api import make_embedder

        if self._embedder is None:
            self._embedder = make_embedder(self.cfg)  # opens the cache; the model loads only on a miss
        e = self.cfg.embedder
        vc = self._embedder.encode(art.complex, prefix=e.complex_prefix, show_progress=False)
        vs = self._embedder.encode(art.simple, prefix=e.simple_prefix, show_progress=False)

        def unit(v: np.ndarray) -> np.ndarray:  # cosines even where the run kept raw vectors
            return v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)

        return unit(vc), unit(vs)

    def vectors(self, art: Article) -> tuple[np.ndarray, np.ndarray]:
        key = (art.lang, art.article_id)
        if key not in self._vectors:
            self._vectors[key] = self._worker.submit(self._encode, art).result()
        return self._vectors[key]

    def candidates(self, art: Article, side: str, idx: int, k: int = 10) -> list[dict]:
        """The sentences of the other side ranked by cosine with sentence ``idx`` of ``side``."""
        vc, vs = self.vectors(art)
        sims = vc[idx] @ vs.T if side == "complex" else vs[idx] @ vc.T
        order = np.argsort(-sims, kind="stable")[:k]
        return [{"idx": int(j), "cosine": round(float(sims[j]), 4)} for j in order]

    def close(self) -> None:
        self._worker.shutdown(wait=False)

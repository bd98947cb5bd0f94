"""The random forest of Cardon & Grabar's sentence aligner: its settings, its examples, training and saving it.

Cardon & Grabar (RANLP 2019; MIE 2020) align specialised and simplified French medical sentences by binary
classification: every (specialised sentence, simplified sentence) pair of a document pair is one example,
described by lexical and embedding features (:mod:`multimsd.alignment.aligners.features`), and a scikit-learn random
forest decides "aligned" or "not aligned". Positives are the manually aligned pairs; negatives are *all* other
pairs of the same document pairs — about 4,000 negatives per positive in their data, which is the method's
main difficulty. This module is that forest; the aligner that applies it is
:mod:`multimsd.alignment.aligners.classifier`, and the papers' class-imbalance experiment, which trains many of
them, is :mod:`multimsd.alignment.aligners.imbalance`.

Decisions *(ours)*:

* n:m gold items ("these two complex sentences together say this simple one") expand to their member pairs,
  each a positive (``nm_gold=positive``): each member sentence carries part of the shared content, and
  calling such pairs negatives would teach the forest that related sentences are unrelated. With
  ``nm_gold=ignore`` they are left out of training and scoring instead. Gold *scoring* (``mode=gold``)
  is unchanged: it counts exact gold items, so an n:m item can only be missed.
* Word vectors are trained on the corpus at hand, as in the papers: the training gold's sentences plus the
  sentences being aligned (no labels are involved). A saved model keeps its vectors (or the path of the
  user's file, ``w2v_path``); words a reused model has never seen get no vector.

Model directory (``save_dir`` / ``model_path``): ``model.joblib`` (the forest; joblib is pickle, so load only
models you trust), ``vectors.bin`` (word2vec binary format, unless the vectors are a user's file) and
``classifier.json`` (format, feature names, settings, training summary).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from multimsd.alignment.aligners.features import (
    FEATURE_NAMES,
    N_FEATURES,
    Sentence,
    article_features,
    load_word_vectors,
    prepare_docs,
    train_word_vectors,
)
from multimsd.console import progress_bar
from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, check_replaceable
from multimsd.gold import GoldDoc

log = logging.getLogger(__name__)

MODEL_FORMAT = "multimsd-classifier/1"
MODEL_MARKER = "classifier.json"
NM_GOLD = ("positive", "ignore")

PreparedDocs = list[tuple[list[Sentence], list[Sentence]]]


# ---------------------------------------------------------------------------------------------- settings
@dataclass
class ClassifierConfig:
    # A trained random forest (a directory written through `save_dir`); null = train one on `train_gold` first.
    model_path: str | None = None
    # Gold alignments to train on (our gold JSONL or a DEplain directory); null = the bundled sample gold.
    # Only its article pairs in data.languages are used.
    train_gold: str | None = None
    # Save a freshly trained model here (a directory; reuse it with model_path=<dir>); null = do not save.
    save_dir: str | None = None
    # Random forest (scikit-learn); seeded with the top-level `seed`. n_jobs=-1: every core.
    n_estimators: int = 100
    max_depth: int | None = None
    min_samples_leaf: int = 1
    n_jobs: int = -1
    # Training negatives per positive, sampled from the non-gold pairs; null = all of them (the real data).
    negative_ratio: float | None = None
    # n:m gold items: "positive" = each member pair is a positive; "ignore" = member pairs are neither
    # positives nor negatives (left out of training and of the imbalance experiment's scores).
    nm_gold: str = "positive"
    # Word vectors for WAVG / CWASA: a word2vec-format file, or null = train word2vec on the corpus itself.
    w2v_path: str | None = None
    w2v_binary: bool = False
    w2v_dim: int = 50
    w2v_window: int = 5
    w2v_min_count: int = 1
    w2v_epochs: int = 20
    # mode=imbalance (Cardon & Grabar): negatives:positives ratios, repeats per ratio, held-out share.
    ratios: list[float] = field(
        default_factory=lambda: [1.0, 10.0, 50.0, 100.0, 250.0, 500.0, 1000.0, 3000.0]
    )
    repeats: int = 50
    test_fraction: float = 1 / 3
    # mode=imbalance: the imbalance experiment's report directory.
    report_dir: str = "outputs/classifier"


def check_classifier_config(c: ClassifierConfig) -> None:
    """Reject bad settings with one clear line, before anything is computed or written."""
    p = "aligner.classifier"
    if c.n_estimators < 1:
        raise MultimsdError(f"{p}.n_estimators={c.n_estimators}: must be >= 1")
    if c.max_depth is not None and c.max_depth < 1:
        raise MultimsdError(f"{p}.max_depth={c.max_depth}: must be >= 1 or null")
    if c.min_samples_leaf < 1:
        raise MultimsdError(f"{p}.min_samples_leaf={c.min_samples_leaf}: must be >= 1")
    if c.n_jobs == 0:
        raise MultimsdError(f"{p}.n_jobs=0: use a positive number of workers, or -1 for every core")
    if c.negative_ratio is not None and not c.negative_ratio > 0:
        raise MultimsdError(f"{p}.negative_ratio={c.negative_ratio}: must be > 0 or null (all negatives)")
    if c.nm_gold not in NM_GOLD:
        raise MultimsdError(f"{p}.nm_gold={c.nm_gold!r}: choose {' or '.join(NM_GOLD)}")
    for key in ("w2v_dim", "w2v_window", "w2v_min_count", "w2v_epochs"):
        if getattr(c, key) < 1:
            raise MultimsdError(f"{p}.{key}={getattr(c, key)}: must be >= 1")
    if c.w2v_path is not None and not Path(c.w2v_path).expanduser().is_file():
        raise MultimsdError(f"{p}.w2v_path={c.w2v_path}: no such file")
    if c.model_path is not None:
        d = Path(c.model_path).expanduser()
        if not d.is_dir():
            raise MultimsdError(f"{p}.model_path={c.model_path}: no such directory")
        if not (d / MODEL_MARKER).is_file():
            raise MultimsdError(f"{p}.model_path={c.model_path}: not a saved classifier (no {MODEL_MARKER})")
    if c.save_dir is not None:
        check_replaceable(Path(c.save_dir).expanduser(), MODEL_MARKER, "a saved classifier")


def make_forest(c: ClassifierConfig, seed: int, n_jobs: int | None = None):
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(
        n_estimators=c.n_estimators,
        max_depth=c.max_depth,
        min_samples_leaf=c.min_samples_leaf,
        random_state=seed,
        n_jobs=c.n_jobs if n_jobs is None else n_jobs,
    )


def positive_proba(forest, X: np.ndarray) -> np.ndarray:
    """P(aligned) for each row; 0 everywhere if the forest never saw a positive."""
    classes = list(forest.classes_)
    if 1 not in classes:
        return np.zeros(len(X))
    return forest.predict_proba(X)[:, classes.index(1)]


# ---------------------------------------------------------------------------------------------- examples
def pair_labels(doc: GoldDoc, nm_gold: str = "positive") -> np.ndarray:
    """Label of every pair of a gold article pair, row i * n + j: 1 gold, 0 not gold, -1 ignored (n:m)."""
    labels = np.zeros((len(doc.complex), len(doc.simple)), dtype=np.int8)
    ignored = []
    for cs, ss in doc.gold:
        if (len(cs) == 1 and len(ss) == 1) or nm_gold == "positive":
            labels[np.ix_(cs, ss)] = 1
        else:
            ignored.append((cs, ss))
    for cs, ss in ignored:  # a pair that is also 1:1 gold stays a positive
        block = labels[np.ix_(cs, ss)]
        labels[np.ix_(cs, ss)] = np.where(block == 1, 1, -1)
    return labels.reshape(-1)


def featurize(prepared: PreparedDocs, vectors) -> list[np.ndarray]:
    return [
        article_features(c, s, vectors)
        for c, s in progress_bar(prepared, desc="pair features", unit="article", disable=len(prepared) < 50)
    ]


def corpus_tokens(*prepared: PreparedDocs) -> list[tuple[str, ...]]:
    """Distinct tokenised sentences (first-seen order): the word2vec corpus."""
    seen = dict.fromkeys(x.tokens for docs in prepared for c, s in docs for x in (*c, *s) if x.tokens)
    return list(seen)


def make_vectors(c: ClassifierConfig, tokens: list[tuple[str, ...]], seed: int):
    """The word vectors and a description of where they come from (stored with a saved model)."""
    if c.w2v_path is not None:
        path = Path(c.w2v_path).expanduser().resolve()
        return load_word_vectors(path, c.w2v_binary), {
            "kind": "file",
            "path": str(path),
            "binary": c.w2v_binary,
        }
    kv = train_word_vectors(tokens, c.w2v_dim, c.w2v_window, c.w2v_min_count, c.w2v_epochs, seed)
    source = {
        "kind": "word2vec on the corpus",
        "dim": c.w2v_dim,
        "window": c.w2v_window,
        "min_count": c.w2v_min_count,
        "epochs": c.w2v_epochs,
        "sentences": len(tokens),
        "vocabulary": len(kv),
    }
    return kv, source


def stack_examples(feats: list[np.ndarray], labels: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """One (X, y) from per-article features and labels; ignored (n:m) pairs are left out."""
    X = np.concatenate([*feats, np.zeros((0, N_FEATURES), np.float32)])
    y = np.concatenate([*labels, np.zeros(0, np.int8)])
    keep = y >= 0
    X, y = X[keep], y[keep]
    if not (y == 1).any():
        raise MultimsdError("the training gold has no aligned pairs: the classifier needs positives")
    if not (y == 0).any():
        raise MultimsdError("the training gold has no unaligned pairs: the classifier needs negatives")
    return X, y


def fit_forest(feats: list[np.ndarray], labels: list[np.ndarray], c: ClassifierConfig, seed: int):
    """A forest on every labelled pair, or on every positive and ``negative_ratio`` negatives per positive."""
    X, y = stack_examples(feats, labels)
    if c.negative_ratio is not None:
        n_pos, n_neg = int((y == 1).sum()), int((y == 0).sum())
        k = min(n_neg, max(1, round(c.negative_ratio * n_pos)))
        neg = np.sort(np.random.default_rng(seed).choice(np.flatnonzero(y == 0), size=k, replace=False))
        rows = np.concatenate([np.flatnonzero(y == 1), neg])
        X, y = X[rows], y[rows]
    return make_forest(c, seed).fit(X, y), int((y == 1).sum()), int((y == 0).sum())


# ---------------------------------------------------------------------------------------------- the model
@dataclass
class PairClassifier:
    """A trained forest with the word vectors its WAVG / CWASA features were computed with."""

    forest: object
    vectors: object  # gensim KeyedVectors
    vectors_source: dict
    info: dict = field(default_factory=dict)

    def proba(self, prepared: PreparedDocs) -> list[np.ndarray]:
        """P(aligned) of every pair of every article pair (row i * n + j)."""
        return model_scores(self, featurize(prepared, self.vectors))

    def save(self, directory: str | Path) -> Path:
        """Write the model directory atomically (a previous model there is replaced only on success)."""
        import joblib
        import sklearn

        out = Path(directory).expanduser()
        check_replaceable(out, MODEL_MARKER, "a saved classifier")
        meta = {
            "format": MODEL_FORMAT,
            "features": list(FEATURE_NAMES),
            "scikit_learn": sklearn.__version__,
            "vectors": dict(self.vectors_source),
            **self.info,
        }
        with atomic_directory(out) as tmp:
            joblib.dump(self.forest, tmp / "model.joblib")
            if self.vectors_source.get("kind") != "file":
                self.vectors.save_word2vec_format(str(tmp / "vectors.bin"), binary=True)
                meta["vectors"]["file"] = "vectors.bin"
            (tmp / MODEL_MARKER).write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", "utf-8")
        log.info("classifier saved to %s", out.resolve())
        return out

    @classmethod
    def load(cls, directory: str | Path) -> PairClassifier:
        import joblib

        d = Path(directory).expanduser()
        where = f"aligner.classifier.model_path={directory}"
        if not (d / MODEL_MARKER).is_file():
            raise MultimsdError(f"{where}: not a saved classifier (no {MODEL_MARKER})")
        try:
            meta = json.loads((d / MODEL_MARKER).read_text("utf-8"))
        except json.JSONDecodeError as e:
            raise MultimsdError(f"{where}: {MODEL_MARKER} is not valid JSON ({e.msg})") from None
        if meta.get("format") != MODEL_FORMAT:
            raise MultimsdError(f"{where}: format {meta.get('format')!r}, expected {MODEL_FORMAT!r}")
        if meta.get("features") != list(FEATURE_NAMES):
            raise MultimsdError(f"{where}: trained on other features than this version computes; retrain it")
        if not (d / "model.joblib").is_file():
            raise MultimsdError(f"{where}: model.joblib is missing")
        source = meta["vectors"]
        if source.get("kind") == "file":
            vectors = load_word_vectors(source["path"], source.get("binary", False))
        else:
            vectors = load_word_vectors(d / source.get("file", "vectors.bin"), binary=True)
        try:
            forest = joblib.load(d / "model.joblib")
        except Exception as e:  # a truncated or foreign file: one line, not a pickle traceback
            raise MultimsdError(f"{where}: cannot read model.joblib ({type(e).__name__})") from None
        if getattr(forest, "n_features_in_", None) != N_FEATURES:
            raise MultimsdError(f"{where}: model.joblib is not a forest over the {N_FEATURES} pair features")
        info = {k: v for k, v in meta.items() if k not in ("format", "features", "scikit_learn", "vectors")}
        return cls(forest, vectors, source, info)


def fit_classifier(
    gold: list[GoldDoc],
    c: ClassifierConfig,
    seed: int,
    extra: PreparedDocs | None = None,
    vectors: tuple | None = None,
    feats: list[np.ndarray | None] | None = None,
) -> tuple[PairClassifier, list[np.ndarray]]:
    """Train on the pairs of the gold article pairs; word vectors from the gold plus the ``extra`` sentences.

    ``vectors`` (kv, source) and ``feats`` (ready features of some gold documents, None where not computed)
    let a caller share work. Returns the model and every gold document's features.
    """
    feats = list(feats) if feats is not None else [None] * len(gold)
    todo = [k for k, f in enumerate(feats) if f is None]
    if vectors is None:
        prepared = prepare_docs([(d.complex, d.simple) for d in gold], [d.lang for d in gold])
        vectors = make_vectors(c, corpus_tokens(prepared, extra or []), seed)
        prepared = [prepared[k] for k in todo]
    else:
        prepared = prepare_docs(
            [(gold[k].complex, gold[k].simple) for k in todo], [gold[k].lang for k in todo]
        )
    kv, source = vectors
    for k, f in zip(todo, featurize(prepared, kv)):
        feats[k] = f
    forest, n_pos, n_neg = fit_forest(feats, [pair_labels(d, c.nm_gold) for d in gold], c, seed)
    info = {
        "training": {
            "articles": len({(d.article_id, d.lang) for d in gold}),
            "languages": sorted({d.lang for d in gold}),
            "positives": n_pos,
            "negatives": n_neg,
            "negative_ratio": c.negative_ratio,
            "nm_gold": c.nm_gold,
            "gold": c.train_gold,
            "seed": seed,
        },
        "forest": {
            "n_estimators": c.n_estimators,
            "max_depth": c.max_depth,
            "min_samples_leaf": c.min_samples_leaf,
        },
    }
    log.info(
        "classifier trained on %d positive and %d negative pairs of %d article pairs",
        n_pos,
        n_neg,
        info["training"]["articles"],
    )
    return PairClassifier(forest, kv, source, info), feats


def model_scores(model: PairClassifier, feats: list[np.ndarray]) -> list[np.ndarray]:
    """P(aligned) of every pair of every article pair (row i * n + j), one prediction call for all."""
    if not feats:
        return []
    p = positive_proba(model.forest, np.concatenate(feats))
    bounds = np.cumsum([0, *(len(f) for f in feats)])
    return [p[bounds[k] : bounds[k + 1]] for k in range(len(feats))]

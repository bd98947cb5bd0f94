"""``aligner=classifier``: Cardon & Grabar's random-forest sentence aligner, and their class-imbalance experiment.

Cardon & Grabar (RANLP 2019; MIE 2020) align specialised and simplified French medical sentences by binary
classification: every (specialised sentence, simplified sentence) pair of a document pair is one example,
described by lexical and embedding features (:mod:`multimsd.alignment.aligners.features`), and a scikit-learn random
forest decides "aligned" or "not aligned". Positives are the manually aligned pairs; negatives are *all* other
pairs of the same document pairs — about 4,000 negatives per positive in their data, which is the method's
main difficulty. Here:

* **aligning** (``align.py aligner=classifier``): the forest's positive-class probability is each pair's score;
  ``aligner.threshold`` (0.5 = the forest's majority vote) keeps pairs, so one complex sentence may align
  with several simple ones (n:m, as in the papers' annotation). The forest comes from
  ``aligner.classifier.model_path`` (a directory saved by an earlier run) or is trained first on
  ``aligner.classifier.train_gold`` (null = the bundled sample gold), in the languages of ``data.languages``;
  ``aligner.classifier.save_dir`` keeps it for reuse.
* **gold mode** (``align.py mode=gold gold.methods=[classifier]``) trains on the validation half of the gold
  article pairs only and is scored on the other half, so a test pair is never a training example.
* **the imbalance experiment** (``align.py mode=imbalance aligner=classifier``, :func:`run_imbalance`), as in
  both papers: for each negatives:positives ratio (1:1 up to 3,000:1) and each of 50 repeats, sample that many
  negatives, split positives + sampled negatives 2/3 for training and 1/3 for testing (stratified, seeded per
  repeat), train a forest, report precision/recall/F1 of the positive class on the test third; then apply the
  same model to the whole data (every pair of every gold article pair) — which includes its own training
  pairs, as the papers note — and, beyond the papers, to the whole data minus its training pairs ("unseen").
  Features are computed once and shared by every repeat.

Decisions *(ours)*:

* n:m gold items ("these two complex sentences together say this simple one") expand to their member pairs,
  each a positive (``nm_gold=positive``): each member sentence carries part of the shared content, and
  calling such pairs negatives would teach the forest that related sentences are unrelated. With
  ``nm_gold=ignore`` they are left out of training and scoring instead. Gold *scoring* (``mode=gold``)
  is unchanged: it counts exact gold items, so an n:m item can only be missed.
* Word vectors are trained on the corpus at hand, as in the papers: the training gold's sentences plus the
  sentences being aligned (no labels are involved). A saved model keeps its vectors (or the path of the
  user's file, ``w2v_path``); words a reused model has never seen get no vector.
* A ratio above the available negatives (the bundled sample has ~17 negatives per positive) uses all of them;
  the table marks it.

Model directory (``save_dir`` / ``model_path``): ``model.joblib`` (the forest; joblib is pickle, so load only
models you trust), ``vectors.bin`` (word2vec binary format, unless the vectors are a user's file) and
``classifier.json`` (format, feature names, settings, training summary).

Why this module is long: it is one paper's method end to end — training, persisting and applying the forest
(the aligner) and the class-imbalance experiment, which reuses every one of those steps on the same labelled
pairs; split apart, each half would only make sense next to the other.
"""

from __future__ import annotations

import json
import logging
import math
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
from multimsd.alignment.aligners.registry import Aligner, check_unit_threshold, register_aligner
from multimsd.alignment.goldscore import PRF
from multimsd.alignment.match import Match
from multimsd.config import AlignConfig, AlignerConfig
from multimsd.console import progress_bar
from multimsd.errors import MultimsdError
from multimsd.fsutil import atomic_directory, check_replaceable
from multimsd.gold import GoldDoc

log = logging.getLogger(__name__)

MODEL_FORMAT = "multimsd-classifier/1"
MODEL_MARKER = "classifier.json"
REPORT_MARKER = "imbalance_results.json"
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


@dataclass
class ClassifierAlignerConfig(AlignerConfig):
    """``aligner=classifier`` (Cardon & Grabar): a random forest over sentence-pair features; θ is on its
    positive-class probability. E.g. aligner.classifier.save_dir=models/rf keeps the trained forest (+ word
    vectors), aligner.classifier.model_path=models/rf reuses it, aligner.classifier.train_gold=gold.jsonl trains
    on your gold, mode=imbalance aligner.classifier.ratios=[1,10,100] runs the imbalance experiment."""

    threshold: float = 0.5
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)


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


def check_experiment_config(c: ClassifierConfig) -> None:
    p = "aligner.classifier"
    if not c.ratios:
        raise MultimsdError(f"{p}.ratios is empty: give negatives:positives ratios such as [1,10,100]")
    bad = [r for r in c.ratios if not (r >= 1 and math.isfinite(r))]
    if bad:
        raise MultimsdError(
            f"{p}.ratios: {bad[0]:g} is not a ratio (negatives per positive): each must be >= 1"
        )
    if len(set(c.ratios)) != len(c.ratios):
        raise MultimsdError(f"{p}.ratios has a ratio twice")
    if c.repeats < 1:
        raise MultimsdError(f"{p}.repeats={c.repeats}: must be >= 1")
    if not 0 < c.test_fraction < 1:
        raise MultimsdError(f"{p}.test_fraction={c.test_fraction}: must lie strictly between 0 and 1")


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


# Gold mode tunes θ on the training gold itself; its scores come from this many article-grouped folds.
CV_FOLDS = 5


def cross_fitted_scores(
    docs: list[tuple[list[str], list[str]]],
    prepared: PreparedDocs,
    gold_train: list[GoldDoc],
    c: ClassifierConfig,
    seed: int,
) -> tuple[PairClassifier, list[np.ndarray]]:
    """Gold mode: P(aligned) of every document, honest for the training documents too.

    ``align.py mode=gold`` trains on the validation half and then tunes θ on that same half. A forest
    scores its own training pairs almost perfectly, so in-sample scores would pick a θ that only works on
    training data. The documents of ``docs`` that are training documents are therefore scored out of fold:
    by a forest trained on the other folds (folds group whole articles, every language of an article in
    the same fold). The other documents (the test half) are scored by the forest trained on all of
    ``gold_train``, which is also the model returned (and saved with ``save_dir``).
    """
    where = {(tuple(cx), tuple(sx)): k for k, (cx, sx) in enumerate(docs)}
    at = [where.get((tuple(d.complex), tuple(d.simple))) for d in gold_train]
    missing = [d for d, k in zip(gold_train, at) if k is None]
    extra = prepare_docs([(d.complex, d.simple) for d in missing], [d.lang for d in missing])
    # Featurise every document once: the training documents' rows serve both training and scoring.
    vectors = make_vectors(c, corpus_tokens(prepared, extra), seed)
    feats = featurize(prepared, vectors[0])
    model, gold_feats = fit_classifier(
        gold_train, c, seed, vectors=vectors, feats=[None if k is None else feats[k] for k in at]
    )
    scores = model_scores(model, feats)
    labels = [pair_labels(d, c.nm_gold) for d in gold_train]
    ids = sorted({d.article_id for d in gold_train})
    np.random.default_rng(seed).shuffle(ids)
    n_folds = min(CV_FOLDS, len(ids))
    if n_folds < 2:
        log.warning("one training article: its gold-mode scores are in-sample (θ tuning will be optimistic)")
        return model, scores
    fold = {a: k % n_folds for k, a in enumerate(ids)}
    for f in range(n_folds):
        rest = [k for k, d in enumerate(gold_train) if fold[d.article_id] != f]
        held = [k for k, d in enumerate(gold_train) if fold[d.article_id] == f and at[k] is not None]
        if not held:
            continue
        forest, _, _ = fit_forest([gold_feats[k] for k in rest], [labels[k] for k in rest], c, seed)
        for k in held:
            scores[at[k]] = positive_proba(forest, gold_feats[k])
    return model, scores


def model_scores(model: PairClassifier, feats: list[np.ndarray]) -> list[np.ndarray]:
    """P(aligned) of every pair of every article pair (row i * n + j), one prediction call for all."""
    if not feats:
        return []
    p = positive_proba(model.forest, np.concatenate(feats))
    bounds = np.cumsum([0, *(len(f) for f in feats)])
    return [p[bounds[k] : bounds[k + 1]] for k in range(len(feats))]


def classifier_matches(
    docs: list[tuple[list[str], list[str]]],
    langs: list[str],
    cfg: AlignConfig,
    gold_train: list[GoldDoc] | None = None,
) -> list[list[Match]]:
    """Every pair of every article pair scored with P(aligned) (pairs with P = 0 left out), sorted by (i, j).

    ``gold_train`` (gold mode: the validation half) is trained on; otherwise ``model_path`` is loaded, or a
    forest is trained on ``train_gold`` in the languages of ``data.languages``.
    """
    from multimsd.gold import load_gold_docs

    c = ClassifierAligner().settings(cfg).classifier
    check_classifier_config(c)
    prepared = prepare_docs(docs, langs)
    if gold_train is not None:
        if c.model_path:
            log.warning("gold mode trains on the validation gold: aligner.classifier.model_path is not used")
        model, scores = cross_fitted_scores(docs, prepared, gold_train, c, cfg.seed)
    elif c.model_path:
        model = PairClassifier.load(c.model_path)
        scores = model.proba(prepared)
    else:
        gold = [d for d in load_gold_docs(c.train_gold) if d.lang in cfg.data.languages]
        if not gold:
            raise MultimsdError(
                f"no training gold in languages {', '.join(cfg.data.languages)}: set "
                "aligner.classifier.train_gold=<gold JSONL or DEplain dir> or aligner.classifier.model_path"
            )
        model, _ = fit_classifier(gold, c, cfg.seed, extra=prepared)
        scores = model.proba(prepared)
    if c.save_dir and (gold_train is not None or not c.model_path):
        model.save(c.save_dir)
    out = []
    for (_, s_sents), p in zip(docs, scores):
        n = len(s_sents)
        keep = np.flatnonzero(p > 0)
        out.append([Match(int(k // n), int(k % n), float(p[k]), float("nan")) for k in keep])
    return out


# ---------------------------------------------------------------------------------------------- imbalance
def _prf(y: np.ndarray, pred: np.ndarray) -> PRF:
    return PRF(int((pred & (y == 1)).sum()), int(pred.sum()), int((y == 1).sum()))


def _one_run(X, y, pos, neg, n_neg, c: ClassifierConfig, seeds, threshold: float) -> dict:
    """One repeat at one ratio: sample negatives, split 2/3-1/3, train, score on test / whole / unseen."""
    from sklearn.model_selection import train_test_split

    rng = np.random.default_rng(seeds[0])
    sample = np.concatenate([pos, rng.choice(neg, size=n_neg, replace=False)])
    train, test = train_test_split(
        sample, test_size=c.test_fraction, stratify=y[sample], random_state=int(seeds[1])
    )
    # Repeats run in parallel threads; each forest builds its trees on one.
    forest = make_forest(c, int(seeds[2]), n_jobs=1).fit(X[train], y[train])
    pred_all = positive_proba(forest, X) >= threshold
    seen = np.zeros(len(y), dtype=bool)
    seen[train] = True
    return {
        "test": _prf(y[test], pred_all[test]).as_dict(),
        "whole": _prf(y, pred_all).as_dict(),
        "unseen": _prf(y[~seen], pred_all[~seen]).as_dict(),
    }


EVALS = ("test", "whole", "unseen")


def imbalance_experiment(
    X: np.ndarray, y: np.ndarray, c: ClassifierConfig, seed: int, threshold: float
) -> dict:
    """Cardon & Grabar's experiment on a featurised labelled set; returns per-ratio means, stds and runs."""
    from joblib import Parallel, delayed

    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == 0)
    plan = []
    for r in c.ratios:
        want = round(r * len(pos))
        if want > len(neg):
            log.warning(
                "ratio %g:1 needs %d negatives, only %d exist: using all (%.1f:1)",
                r,
                want,
                len(neg),
                len(neg) / len(pos),
            )
        plan.append((r, min(want, len(neg))))
    jobs = [
        (k, rep, np.random.SeedSequence([seed, k, rep]).generate_state(3))
        for k in range(len(plan))
        for rep in range(c.repeats)
    ]
    runs = Parallel(n_jobs=c.n_jobs, prefer="threads", return_as="generator")(
        delayed(_one_run)(X, y, pos, neg, plan[k][1], c, seeds, threshold) for k, _rep, seeds in jobs
    )
    per_ratio: list[list[dict]] = [[] for _ in plan]
    for (k, _rep, _s), run in zip(
        jobs, progress_bar(runs, total=len(jobs), desc="imbalance runs", unit="run")
    ):
        per_ratio[k].append(run)
    rows = []
    for (r, n_neg), rs in zip(plan, per_ratio):
        row = {
            "ratio": r,
            "negatives": n_neg,
            "positives": len(pos),
            "effective_ratio": n_neg / len(pos),
            "capped": n_neg < round(r * len(pos)),
        }
        for ev in EVALS:
            for metric in ("precision", "recall", "f1"):
                vals = np.array([run[ev][metric] for run in rs])
                row[f"{ev}_{metric}"] = float(vals.mean())
                row[f"{ev}_{metric}_std"] = float(vals.std())
        row["runs"] = [
            {ev: {m: run[ev][m] for m in ("precision", "recall", "f1")} for ev in EVALS} for run in rs
        ]
        rows.append(row)
    return {"rows": rows}


def imbalance_markdown(results: dict) -> str:
    lines = [
        "| neg:pos | used | " + " | ".join(f"{ev} {m}" for ev in EVALS for m in ("P", "R", "F1")) + " |",
        "|---:|---:|" + "---:|" * (3 * len(EVALS)),
    ]
    for row in results["rows"]:
        used = f"{row['effective_ratio']:.1f}{'*' if row['capped'] else ''}"
        cells = [
            f"{row[f'{ev}_{m}']:.3f} ± {row[f'{ev}_{m}_std']:.3f}"
            for ev in EVALS
            for m in ("precision", "recall", "f1")
        ]
        lines.append(f"| {row['ratio']:g}:1 | {used} | " + " | ".join(cells) + " |")
    d = results["data"]
    lines += [
        "",
        f"Mean ± std over {results['repeats']} repeats per ratio; positive class (aligned pairs) only; "
        f"P(aligned) >= {results['threshold']:g}. Data: {d['pairs']} sentence pairs of {d['articles']} gold "
        f"article pairs ({', '.join(d['languages'])}), {d['positives']} aligned, real ratio "
        f"{d['real_ratio']:.1f}:1. test = the held-out {results['test_fraction']:.2f} of positives + sampled "
        "negatives; whole = every pair of every gold article pair (includes the training pairs, as in the "
        "papers); unseen = whole minus the training pairs.",
    ]
    if any(row["capped"] for row in results["rows"]):
        lines.append("\n\\* fewer negatives exist than the ratio asks for: all of them are used.")
    return "\n".join(lines)


def plot_imbalance(results: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = results["rows"]
    x = [row["ratio"] for row in rows]
    titles = {"test": "test split", "whole": "whole data", "unseen": "whole data minus training pairs"}
    fig, axes = plt.subplots(1, len(EVALS), figsize=(4.2 * len(EVALS), 3.4), sharey=True)
    for ax, ev in zip(axes, EVALS):
        for metric, label in (("precision", "P"), ("recall", "R"), ("f1", "F1")):
            mean = np.array([row[f"{ev}_{metric}"] for row in rows])
            std = np.array([row[f"{ev}_{metric}_std"] for row in rows])
            ax.plot(x, mean, marker="o", label=label)
            ax.fill_between(x, mean - std, mean + std, alpha=0.15)
        ax.set_xscale("log")
        ax.set_title(titles[ev], fontsize=9)
        ax.set_xlabel("negatives : positives (training)")
        ax.set_ylim(0, 1.02)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("positive class")
    axes[0].legend(fontsize=8)
    d = results["data"]
    capped = [row["ratio"] for row in rows if row["capped"]]
    note = f"; ratios >= {min(capped):g} use all negatives ({d['real_ratio']:.1f}:1)" if capped else ""
    fig.suptitle(
        f"Random-forest aligner vs class imbalance ({', '.join(d['languages'])}; "
        f"{results['repeats']} repeats, mean ± std{note})",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_imbalance(cfg: AlignConfig) -> dict:
    """``align.py mode=imbalance aligner=classifier``: the experiment on the training gold; writes the report."""
    from multimsd.gold import load_gold_docs

    if cfg.aligner.method != "classifier":
        raise MultimsdError("mode=imbalance is the classifier's experiment: add aligner=classifier")
    c = ClassifierAligner().settings(cfg).classifier
    check_classifier_config(c)
    check_experiment_config(c)
    out = Path(c.report_dir).expanduser()
    check_replaceable(out, REPORT_MARKER, "an imbalance report")
    gold = [d for d in load_gold_docs(c.train_gold) if d.lang in cfg.data.languages]
    if not gold:
        raise MultimsdError(f"no gold article pairs in languages {', '.join(cfg.data.languages)}")
    prepared = prepare_docs([(d.complex, d.simple) for d in gold], [d.lang for d in gold])
    vectors, source = make_vectors(c, corpus_tokens(prepared), cfg.seed)
    X, y = stack_examples(featurize(prepared, vectors), [pair_labels(d, c.nm_gold) for d in gold])
    n_pos = int((y == 1).sum())
    log.info("%d labelled pairs (%d aligned) from %d gold article pairs", len(y), n_pos, len(gold))
    results = imbalance_experiment(X, y, c, cfg.seed, cfg.aligner.threshold)
    results = {
        "data": {
            "gold": c.train_gold,
            "articles": len(gold),
            "languages": sorted({d.lang for d in gold}),
            "pairs": len(y),
            "positives": n_pos,
            "negatives": len(y) - n_pos,
            "real_ratio": (len(y) - n_pos) / n_pos,
            "nm_gold": c.nm_gold,
        },
        "repeats": c.repeats,
        "test_fraction": c.test_fraction,
        "threshold": cfg.aligner.threshold,
        "seed": cfg.seed,
        "forest": {
            "n_estimators": c.n_estimators,
            "max_depth": c.max_depth,
            "min_samples_leaf": c.min_samples_leaf,
        },
        "vectors": source,
        "features": list(FEATURE_NAMES),
        **results,
    }
    table = imbalance_markdown(results)
    with atomic_directory(out) as tmp:
        (tmp / "imbalance_table.md").write_text(table + "\n", encoding="utf-8")
        (tmp / REPORT_MARKER).write_text(json.dumps(results, indent=2, ensure_ascii=False) + "\n", "utf-8")
        plot_imbalance(results, tmp / "imbalance_prf.png")
    print(table)
    print(f"\nimbalance report written to {out.resolve()}")
    results["report_dir"] = str(out.resolve())
    return results


# ---------------------------------------------------------------------------------------------- the aligner
@register_aligner
class ClassifierAligner(Aligner):
    """``aligner=classifier``: every sentence pair scored with the forest's P(aligned)."""

    name = "classifier"
    options = ClassifierAlignerConfig
    needs = "sentences"

    def candidates(
        self,
        docs: list[tuple[list[str], list[str]]],
        langs: list[str],
        cfg: AlignConfig,
        *,
        gold_train: list[GoldDoc] | None = None,
        min_score: float | None = None,
    ) -> list[list[Match]]:
        # One forest for all articles: trained (or loaded) once, so scoring is per corpus, not per article.
        return classifier_matches(docs, langs, cfg, gold_train=gold_train)

    def check_threshold(self, threshold: float) -> None:
        check_unit_threshold(self.name, threshold)

    def modes(self) -> dict:
        # mode=imbalance: Cardon & Grabar's class-imbalance experiment (run_imbalance checks aligner=classifier).
        return {"imbalance": run_imbalance}

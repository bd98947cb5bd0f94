"""``aligner=classifier``: Cardon & Grabar's random-forest sentence aligner.

Every (complex sentence, simple sentence) pair of an article pair is scored by the random forest of
:mod:`multimsd.alignment.aligners.classifier_model` (the method, its examples and its saved form are described
there):

* **aligning** (``align.py aligner=classifier``): the forest's positive-class probability is each pair's score;
  ``aligner.threshold`` (0.5 = the forest's majority vote) keeps pairs, so one complex sentence may align
  with several simple ones (n:m, as in the papers' annotation). The forest comes from
  ``aligner.classifier.model_path`` (a directory saved by an earlier run) or is trained first on
  ``aligner.classifier.train_gold`` (null = the bundled sample gold), in the languages of ``data.languages``;
  ``aligner.classifier.save_dir`` keeps it for reuse.
* **gold mode** (``align.py mode=gold gold.methods=[classifier]``) trains on the validation half of the gold
  article pairs only and is scored on the other half, so a test pair is never a training example; the
  training half's own scores are cross-fitted (:func:`cross_fitted_scores`).
* **the imbalance experiment** (``align.py mode=imbalance aligner=classifier``), the papers' study of the
  negatives:positives ratio, is a mode of this aligner: :mod:`multimsd.alignment.aligners.imbalance`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from multimsd.alignment.aligners.classifier_model import (
    ClassifierConfig,
    PairClassifier,
    PreparedDocs,
    check_classifier_config,
    corpus_tokens,
    featurize,
    fit_classifier,
    fit_forest,
    make_vectors,
    model_scores,
    pair_labels,
    positive_proba,
)
from multimsd.alignment.aligners.features import prepare_docs
from multimsd.alignment.aligners.imbalance import run_imbalance
from multimsd.alignment.aligners.registry import Aligner, check_unit_threshold, register_aligner
from multimsd.alignment.match import Match
from multimsd.config import AlignConfig, AlignerConfig
from multimsd.errors import MultimsdError
from multimsd.gold import GoldDoc

log = logging.getLogger(__name__)


@dataclass
class ClassifierAlignerConfig(AlignerConfig):
    """``aligner=classifier`` (Cardon & Grabar): a random forest over sentence-pair features; θ is on its
    positive-class probability. E.g. aligner.classifier.save_dir=models/rf keeps the trained forest (+ word
    vectors), aligner.classifier.model_path=models/rf reuses it, aligner.classifier.train_gold=gold.jsonl trains
    on your gold, mode=imbalance aligner.classifier.ratios=[1,10,100] runs the imbalance experiment."""

    threshold: float = 0.5
    classifier: ClassifierConfig = field(default_factory=ClassifierConfig)


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


# ---------------------------------------------------------------------------------------------- the aligner
def _run_imbalance(cfg: AlignConfig) -> dict:
    """``mode=imbalance``, with the classifier's settings of this run (registration asks for it before the class
    below exists, hence a function here rather than a method)."""
    return run_imbalance(cfg, ClassifierAligner().settings(cfg).classifier)


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
        return {"imbalance": _run_imbalance}

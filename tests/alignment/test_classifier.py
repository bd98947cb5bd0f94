"""aligner=classifier (Cardon & Grabar): hand-checked features, bulk = per pair, better than chance, save/reload,
the imbalance experiment and the CLI."""

import json
import math

import datasets
import numpy as np
import pytest
from conftest import run_cli
from gensim.models import KeyedVectors

from multimsd.alignment.aligners import classifier_model as forest
from multimsd.alignment.aligners import imbalance
from multimsd.alignment.aligners.classifier_model import ClassifierConfig
from multimsd.alignment.aligners.features import (
    FEATURE_NAMES,
    article_features,
    pair_features,
    prepare,
    prepare_docs,
    train_word_vectors,
)
from multimsd.alignment.goldscore import PRF, split_gold_ids
from multimsd.errors import MultimsdError
from multimsd.gold import GoldDoc, load_gold_docs


def toy_vectors() -> KeyedVectors:
    kv = KeyedVectors(vector_size=2)
    vecs = np.array([[1, 0], [0, 1], [1, 1], [-1, 0]], dtype=np.float32)
    kv.add_vectors(["cat", "sat", "mat", "the"], vecs)  # "a" and "on" have no vector
    return kv


def features(c: str, s: str, lang: str = "en", vectors=None) -> dict:
    return dict(zip(FEATURE_NAMES, pair_features(prepare(c, lang), prepare(s, lang), vectors)))


# ---------------------------------------------------------------------------------------------- features by hand
def test_features_by_hand_english():
    f = features("The cat sat on the mat.", "A cat sat.", vectors=toy_vectors())
    # words: c = the cat sat on the mat (6 tokens), W_c = {the, cat, sat, on, mat}; s = a cat sat, W_s = {a, cat, sat}
    # W_c ∩ W_s = {cat, sat} (2), W_c ∪ W_s has 6 words; stopwords the/on/a -> C_c ∩ C_s = {cat, sat}
    expected = {
        "common_content_words": 2,
        "incl_complex_in_simple": 2 / 5,
        "incl_simple_in_complex": 2 / 3,
        "length_diff": 6 - 3,
        # mean word length: c (3+3+3+2+3+3)/6 = 17/6, s (1+3+3)/3 = 7/3
        "avg_word_length_diff": 17 / 6 - 7 / 3,
        # "the cat sat on the mat." vs "a cat sat.": common bigrams " c" ca at "t " " s" sa "t." (7; "a " is
        # only in s), common trigrams " ca" cat "at " "t s" " sa" sat "at." (7; "a c" is only in s)
        "common_char_ngrams": 14,
        "word_cosine": 2 / math.sqrt(5 * 3),
        "word_dice": 2 * 2 / (5 + 3),
        "word_jaccard": 2 / 6,
        # "the " -> "a " (1 substitution + 2 deletions), then delete " on the mat" (11): 14; s is not a
        # subsequence of c (no "c" after an "a "), so fewer than 13 + 1 edits is impossible
        "char_levenshtein": 14,
        # the -> a, delete on the mat: 4
        "word_levenshtein": 4,
        # mean vectors: c (the cat sat the mat) = (0, 2)/5 ~ (0, 1); s (cat sat) = (1, 1)/2: cos = 1/sqrt(2)
        "wavg": 1 / math.sqrt(2),
        # U_c = [cat, mat, sat, the], U_s = [cat, sat]. forward: cat->cat (1), mat->cat (tie 0.707 with sat;
        # first in sorted order), sat->sat (1), the->sat (cos 0 > -1). backward: cat->cat, sat->sat (both
        # already edges). Edges {cat-cat 1, mat-cat 0.707, sat-sat 1, the-sat 0}; the 0 edge is dropped:
        # (1 + 1/sqrt(2) + 1) / 3
        "cwasa": (2 + 1 / math.sqrt(2)) / 3,
    }
    assert f == pytest.approx(expected, abs=1e-6)


def test_features_by_hand_chinese_and_empty():
    f = features("哮喘是一种疾病。", "哮喘是病。", lang="zh")
    # one word per Han character: c = 哮 喘 是 一 种 疾 病 (7), s = 哮 喘 是 病 (4); ∩ = 4, ∪ = 7
    # stopwords 是 一: C_c ∩ C_s = {哮, 喘, 病}
    # bigrams in common: 哮喘 喘是 病。 (3); trigrams: 哮喘是 (1)
    # edits: delete 一 种 疾 (3 characters, 3 words)
    expected = {
        "common_content_words": 3,
        "incl_complex_in_simple": 4 / 7,
        "incl_simple_in_complex": 1.0,
        "length_diff": 3,
        "avg_word_length_diff": 0.0,
        "common_char_ngrams": 4,
        "word_cosine": 4 / math.sqrt(28),
        "word_dice": 8 / 11,
        "word_jaccard": 4 / 7,
        "char_levenshtein": 3,
        "word_levenshtein": 3,
        "wavg": 0.0,  # no vectors
        "cwasa": 0.0,
    }
    assert f == pytest.approx(expected, abs=1e-6)
    # No words at all: every ratio is 0 instead of a division by zero.
    g = features("!!!", "Cat.", vectors=toy_vectors())
    assert (
        g["incl_complex_in_simple"] == g["word_cosine"] == g["word_jaccard"] == g["wavg"] == g["cwasa"] == 0
    )
    assert (g["length_diff"], g["avg_word_length_diff"]) == (-1, -3)
    assert (g["char_levenshtein"], g["word_levenshtein"]) == (4, 1)


@pytest.mark.integration
def test_bulk_matrix_equals_per_pair():
    gold = load_gold_docs(None)
    docs = [d for d in gold if d.lang == "en"][:2] + [
        next(d for d in gold if d.lang == lang) for lang in ("ja", "zh")
    ]
    # 6 x 6 sentences per article keep the pure-Python reference edit distances quick.
    pairs = [(d.complex[:6], d.simple[:6]) for d in docs] + [
        (["!!!", "Cat sat.", ""], ["A cat.", "—", "x y z"])
    ]
    prepared = prepare_docs(pairs, [d.lang for d in docs] + ["en"])
    vectors = train_word_vectors([x.tokens for c, s in prepared for x in c + s], dim=16, epochs=3)
    for c, s in prepared:
        bulk = article_features(c, s, vectors)
        assert bulk.shape == (len(c) * len(s), len(FEATURE_NAMES))
        ref = np.array([pair_features(a, b, vectors) for a in c for b in s])
        np.testing.assert_allclose(bulk, ref, rtol=1e-5, atol=1e-5)
        assert np.abs(bulk[:, -2:]).max() > 0  # the vector features are exercised, not all zero


def test_word_vectors_are_reproducible():
    sents = [("the", "cat", "sat"), ("a", "cat", "ran"), ("the", "dog", "sat")] * 5
    a, b = train_word_vectors(sents, dim=8, epochs=2), train_word_vectors(sents, dim=8, epochs=2)
    assert a.index_to_key == b.index_to_key
    assert np.array_equal(a.vectors, b.vectors)


def test_pair_labels_n_to_m():
    doc = GoldDoc("a", "en", ["c0", "c1", "c2"], ["s0", "s1"], {((0,), (0,)), ((1, 2), (1,))})
    assert forest.pair_labels(doc, "positive").reshape(3, 2).tolist() == [[1, 0], [0, 1], [0, 1]]
    assert forest.pair_labels(doc, "ignore").reshape(3, 2).tolist() == [[1, 0], [0, -1], [0, -1]]


@pytest.mark.parametrize(
    "override, check, message",
    [
        ({"n_estimators": 0}, "classifier", "n_estimators=0"),
        ({"negative_ratio": 0.0}, "classifier", "negative_ratio"),
        ({"nm_gold": "both"}, "classifier", "nm_gold"),
        ({"model_path": "/nonexistent/model"}, "classifier", "no such directory"),
        ({"ratios": [0.5, 10.0]}, "experiment", "ratios.*must be >= 1"),
        ({"ratios": []}, "experiment", "empty"),
        ({"repeats": 0}, "experiment", "repeats"),
        ({"test_fraction": 1.0}, "experiment", "test_fraction"),
    ],
)
def test_bad_settings(override, check, message):
    # Each setting is refused by its own check (one call per pytest.raises: a second call after the raising
    # one would never run), and the other check lets it through.
    checks = {"classifier": forest.check_classifier_config, "experiment": imbalance.check_experiment_config}
    c = ClassifierConfig(**override)
    with pytest.raises(MultimsdError, match=message):
        checks.pop(check)(c)
    [other] = checks.values()
    other(c)


# ---------------------------------------------------------------------------------------------- the classifier
@pytest.fixture(scope="module")
def english_model():
    """A forest trained on half of the English sample gold articles; the other half held out."""
    docs = [d for d in load_gold_docs(None) if d.lang == "en"]
    train_ids, _ = split_gold_ids(docs, 0.5, seed=42)
    train = [d for d in docs if d.article_id in train_ids]
    test = [d for d in docs if d.article_id not in train_ids]
    prepared = prepare_docs([(d.complex, d.simple) for d in test], [d.lang for d in test])
    model, _ = forest.fit_classifier(
        train, ClassifierConfig(n_estimators=50, n_jobs=1), seed=0, extra=prepared
    )
    return model, test, prepared


@pytest.mark.integration
def test_classifier_beats_random_baseline(english_model):
    model, test, prepared = english_model
    scores = model.proba(prepared)
    prf, pairs = PRF(0, 0, 0), 0
    for d, p in zip(test, scores):
        y = forest.pair_labels(d)
        pred = p >= 0.5
        prf = prf + PRF(int((pred & (y == 1)).sum()), int(pred.sum()), int((y == 1).sum()))
        pairs += len(y)
    # A random classifier that flags the same share q of pairs, independently of the gold (base rate pi):
    # expected precision pi, recall q, so F1 = 2 pi q / (pi + q).
    pi, q = prf.gold / pairs, prf.predicted / pairs
    random_f1 = 2 * pi * q / (pi + q)
    assert prf.predicted > 0
    assert prf.f1 > 2 * random_f1 and prf.f1 > random_f1 + 0.15, (prf.as_dict(), random_f1)


def test_save_reload_identical(english_model, tmp_path):
    model, _, prepared = english_model
    out = model.save(tmp_path / "model")
    meta = json.loads((out / "classifier.json").read_text())
    assert meta["features"] == list(FEATURE_NAMES) and meta["training"]["languages"] == ["en"]
    assert (out / "model.joblib").is_file() and (out / "vectors.bin").is_file()
    again = forest.PairClassifier.load(out)
    for a, b in zip(model.proba(prepared), again.proba(prepared)):
        assert np.array_equal(a, b)
    # A directory that is not a saved model is never overwritten, and a broken one is one clear error.
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(MultimsdError, match="refusing to overwrite"):
        model.save(tmp_path / "other")
    (out / "classifier.json").write_text("{oops")
    with pytest.raises(MultimsdError, match="not valid JSON"):
        forest.PairClassifier.load(out)


def test_imbalance_experiment_caps_and_counts():
    rng = np.random.default_rng(0)
    y = np.array([1] * 12 + [0] * 60, dtype=np.int8)
    X = rng.normal(size=(len(y), len(FEATURE_NAMES))).astype(np.float32)
    X[y == 1] += 10.0  # separable on every feature
    c = ClassifierConfig(ratios=[1.0, 10.0], repeats=3, n_estimators=10, n_jobs=1)
    rows = imbalance.imbalance_experiment(X, y, c, seed=0, threshold=0.5)["rows"]
    assert [(r["negatives"], r["capped"]) for r in rows] == [(12, False), (60, True)]
    assert rows[1]["effective_ratio"] == 5.0
    for r in rows:
        assert len(r["runs"]) == 3
        assert r["test_f1"] > 0.9 and r["whole_recall"] > 0.9
    # Whole data at 1:1 has 60 negatives the 24-pair training set mostly never saw; F1 is in range either way.
    assert all(
        0 <= r[f"{ev}_{m}"] <= 1
        for r in rows
        for ev in imbalance.EVALS
        for m in ("precision", "recall", "f1")
    )


# ---------------------------------------------------------------------------------------------- CLI


@pytest.mark.e2e
def test_cli_align_save_and_reuse(tmp_path, python, repo_root):
    out, model = tmp_path / "aligned", tmp_path / "model"
    common = ["aligner=classifier", "debug=tiny", "aligner.classifier.n_estimators=30"]
    proc = run_cli(python, repo_root, *common, f"output.dir={out}", f"aligner.classifier.save_dir={model}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    dsd = datasets.load_from_disk(str(out))
    rows = [r for ds in dsd.values() for r in ds.to_list()]
    assert rows and {r["lang"] for r in rows} == {"en", "ja"}
    assert all(r["score"] >= 0.5 and math.isnan(r["cosine"]) for r in rows)
    assert json.loads((model / "classifier.json").read_text())["training"]["languages"] == ["en", "ja"]
    # The saved model, applied to the same articles, gives the same pairs and scores.
    out2 = tmp_path / "aligned2"
    proc = run_cli(python, repo_root, *common, f"output.dir={out2}", f"aligner.classifier.model_path={model}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    rows2 = [r for ds in datasets.load_from_disk(str(out2)).values() for r in ds.to_list()]
    key = lambda r: (r["lang"], r["article_id"], r["complex_idx"], r["simple_idx"], r["score"])  # noqa: E731
    assert sorted(map(key, rows)) == sorted(map(key, rows2))


@pytest.mark.e2e
def test_cli_imbalance(tmp_path, python, repo_root):
    report = tmp_path / "imbalance"
    proc = run_cli(
        python,
        repo_root,
        "mode=imbalance",
        "aligner=classifier",
        "data.languages=[en]",
        "aligner.classifier.ratios=[1,10]",
        "aligner.classifier.repeats=3",
        "aligner.classifier.n_estimators=10",
        f"aligner.classifier.report_dir={report}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| neg:pos | used | test P |" in proc.stdout
    assert (report / "imbalance_table.md").read_text().startswith("| neg:pos |")
    res = json.loads((report / "imbalance_results.json").read_text())
    assert [r["ratio"] for r in res["rows"]] == [1.0, 10.0]
    assert res["data"]["languages"] == ["en"] and res["data"]["positives"] > 50
    for r in res["rows"]:
        assert len(r["runs"]) == 3
        assert all(0 <= r[f"{ev}_{m}"] <= 1 for ev in imbalance.EVALS for m in ("precision", "recall", "f1"))
        assert r["test_f1"] > 0.3  # far above chance on a held-out third
    # Trained on balanced data, the forest over-predicts on the real (imbalanced) data: the papers' finding.
    assert res["rows"][0]["whole_precision"] < res["rows"][1]["whole_precision"]
    assert (report / "imbalance_prf.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.e2e
def test_cli_gold_mode(tmp_path, python, repo_root):
    report = tmp_path / "gold"
    proc = run_cli(
        python,
        repo_root,
        "mode=gold",
        "gold.methods=[classifier]",
        "data.languages=[en]",
        "aligner=classifier",  # its options (a smaller forest) apply where aligner=classifier
        "aligner.classifier.n_estimators=30",
        f"gold.report_dir={report}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| lang | classifier θ |" in proc.stdout
    e = json.loads((report / "gold_results.json").read_text())["methods"]["classifier"]["en"]
    assert 0 < e["test"]["f1"] <= 1
    # θ is tuned on out-of-fold scores of the training half, not on in-sample (near perfect) ones.
    assert e["valid"]["f1"] < 0.95


@pytest.mark.integration
@pytest.mark.parametrize(
    "args, message",
    [
        (["aligner=classifier", "aligner.classifier.model_path={tmp}/missing"], "no such directory"),
        (
            ["mode=imbalance", "aligner=classifier", "aligner.classifier.ratios=[0.5,10]"],
            "0.5 is not a ratio",
        ),
        (["mode=imbalance", "aligner.classifier.repeats=2"], "add aligner=classifier"),
    ],
)
def test_cli_bad_input(tmp_path, python, repo_root, args, message):
    out, report = tmp_path / "out", tmp_path / "report"
    args = [a.format(tmp=tmp_path) for a in args]
    proc = run_cli(
        python, repo_root, *args, "debug=tiny", f"output.dir={out}", f"aligner.classifier.report_dir={report}"
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    err = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and message in err[0], proc.stderr[-3000:]
    assert not out.exists() and not report.exists()

"""The local 🤗 evaluate SARI metric (multimsd/hf_metrics/sari) loads offline and equals multimsd's corpus SARI.

Run from the repository root with ``python -m pytest``, ``import evaluate`` below first finds the repo's
evaluate.py, which hands over to the 🤗 package (the name-clash handling is tested here in-process too).
"""

import os
import sys

import evaluate
import pytest

from multimsd.hf_metrics import metric_path
from multimsd.metrics import corpus_sari, corpus_sari_operation_scores

SRC = ["About 95 species are currently accepted .", "The Cat sat on the mat .", "It rained heavily all day ."]
PRED = ["About 95 you now get in .", "The cat sat .", "It rained a lot ."]
REFS = [
    ["About 95 species are currently known .", "About 95 species are now accepted ."],
    ["The cat sat on a mat .", "A cat sat ."],
    ["It rained a lot all day .", "There was much rain ."],
]


def streams(refs):
    return [list(s) for s in zip(*refs)]


@pytest.fixture(scope="module")
def sari(tmp_path_factory):
    """The metric, loaded with every 🤗 cache pointed into a temporary HF_HOME."""
    hf_home = tmp_path_factory.mktemp("hf_home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HOME", str(hf_home))
        mp.setenv("HF_EVALUATE_OFFLINE", "1")
        # evaluate read its cache locations from the environment when it was imported: repoint them too.
        mp.setattr(evaluate.config, "HF_MODULES_CACHE", hf_home / "modules")
        mp.setattr(evaluate.config, "HF_METRICS_CACHE", hf_home / "metrics")
        mp.setattr(evaluate.config, "HF_EVALUATE_CACHE", hf_home / "evaluate")
        mp.setattr(sys, "path", list(sys.path))  # evaluate appends its modules cache to sys.path
        metric = evaluate.load(metric_path("sari"), cache_dir=str(hf_home / "metrics"), keep_in_memory=True)
        yield metric
    assert (hf_home / "modules" / "evaluate_modules" / "metrics" / "sari").is_dir()


def test_evaluate_is_the_hf_package(repo_root):
    assert os.path.realpath(evaluate.__file__) != os.path.realpath(repo_root / "evaluate.py")
    assert callable(evaluate.load) and hasattr(evaluate, "Metric")


def test_equals_corpus_sari(sari):
    r = sari.compute(sources=SRC, predictions=PRED, references=REFS)
    add, keep, dele = corpus_sari_operation_scores(SRC, PRED, streams(REFS))
    assert r["sari"] == pytest.approx(corpus_sari(SRC, PRED, streams(REFS)), abs=1e-9)
    assert (r["sari_add"], r["sari_keep"], r["sari_delete"]) == pytest.approx((add, keep, dele), abs=1e-9)
    assert r["tokenizer"] == "13a"


def test_options_lowercase_tokenizer_and_lang(sari):
    r = sari.compute(sources=SRC, predictions=PRED, references=REFS, lowercase=False, tokenizer="intl")
    assert r["sari"] == pytest.approx(
        corpus_sari(SRC, PRED, streams(REFS), lowercase=False, tokenizer="intl")
    )
    assert r["sari"] != pytest.approx(sari.compute(sources=SRC, predictions=PRED, references=REFS)["sari"])
    ja = (
        ["薬を一日二回服用してください。"],
        ["薬を一日二回飲んでください。"],
        [["薬を一日に二回飲みます。"]],
    )
    r = sari.compute(sources=ja[0], predictions=ja[1], references=ja[2], lang="ja")
    assert r["tokenizer"] == "ja-mecab"
    assert r["sari"] == pytest.approx(corpus_sari(ja[0], ja[1], streams(ja[2]), tokenizer="ja-mecab"))


def test_uneven_reference_counts_rejected(sari):
    with pytest.raises(ValueError, match="same number of references"):
        sari.compute(sources=SRC[:2], predictions=PRED[:2], references=[REFS[0], REFS[1][:1]])


def test_metric_path():
    assert metric_path("sari").endswith(os.path.join("hf_metrics", "sari"))
    with pytest.raises(ValueError, match="unknown multimsd metric"):
        metric_path("bleu")

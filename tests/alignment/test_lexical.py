"""aligner=lexical (Adduru et al. 2018): each similarity against hand computations, bulk vs per pair, the band."""

import json
import math

import datasets
import numpy as np
import pytest
from conftest import run_cli

from multimsd.alignment.aligners.lexical import (
    STRING_SCORES,
    LexicalConfig,
    char_ngrams,
    lexical_matches,
    mean_similarity,
    pair_similarities,
    score_matrices,
)
from multimsd.errors import MultimsdError
from multimsd.gold import load_gold_docs

# (score, a, b, expected), every expected value worked out by hand.
HAND = [
    # Levenshtein: kitten -> sitten -> sittin -> sitting = 3 edits, longer string 7 chars -> 1 - 3/7
    ("levenshtein_char", "kitten", "sitting", 1 - 3 / 7),
    # flaw -> law -> lawn: 2 edits over 4 -> 1 - 2/4
    ("levenshtein_char", "flaw", "lawn", 0.5),
    # words [the cat sat] -> [the dog sat down]: substitute cat->dog, insert down = 2 over 4 words
    ("levenshtein_word", "the cat sat", "the dog sat down", 0.5),
    # ca -> ac (one transposition) -> abc (insert b): DL = 2 over 3 -> 1/3
    ("damerau_levenshtein", "ca", "abc", 1 / 3),
    # abcd -> acbd: one transposition over 4 -> 3/4
    ("damerau_levenshtein", "abcd", "acbd", 0.75),
    # OSA may not edit the transposed "ac" again, so ca -> abc costs 3 (as Levenshtein) over 3 -> 0
    ("osa", "ca", "abc", 0.0),
    ("osa", "abcd", "acbd", 0.75),
    # martha/marhta: 6 matches, 2 half-transpositions -> t = 1; Jaro = (6/6 + 6/6 + 5/6)/3 = 0.94444;
    # common prefix "mar" = 3: 0.94444 + 3 * 0.1 * (1 - 0.94444) = 0.96111
    ("jaro_winkler", "martha", "marhta", (1 + 1 + 5 / 6) / 3 + 0.3 * (1 - (1 + 1 + 5 / 6) / 3)),
    # dixon/dicksonx: window 3; matches d, i, o, n = 4, t = 0; Jaro = (4/5 + 4/8 + 4/4)/3 = 0.76667;
    # prefix "di" = 2: 0.76667 + 0.2 * 0.23333 = 0.81333
    ("jaro_winkler", "dixon", "dicksonx", 2.3 / 3 + 0.2 * (1 - 2.3 / 3)),
    # ab/ac: window 0; one match; Jaro = (1/2 + 1/2 + 1)/3 = 2/3 < 0.7, so no prefix boost (Winkler)
    ("jaro_winkler", "ab", "ac", 2 / 3),
    # words [the cat sat] vs [the cat sit]: 2 matches; Jaro = (2/3 + 2/3 + 1)/3 = 7/9; prefix 2 words:
    # 7/9 + 0.2 * 2/9
    ("jaro_winkler_word", "the cat sat", "the cat sit", 7 / 9 + 0.2 * 2 / 9),
    # LCS(abcde, ace) = 3 over 5
    ("lcs", "abcde", "ace", 0.6),
    # 4-grams [abcd bcde] vs [xbcd bcde]: LCS of the gram sequences 1 over 2
    ("ngram4", "abcde", "xbcde", 0.5),
    # [abcd bcde cdef] vs [abcd bcdx cdxf]: only abcd shared -> 1/3
    ("ngram4", "abcdef", "abcdxf", 1 / 3),
    # shorter than 4: the string is its own single gram
    ("ngram4", "abc", "abd", 0.0),
    # bags {the: 2, cat: 1} . {the: 1, dog: 1} = 2; norms sqrt(5), sqrt(2) -> 2 / sqrt(10)
    ("cosine", "the cat the", "the dog", 2 / math.sqrt(10)),
    # sets {the, cat} & {the, dog} = 1, union 3
    ("jaccard", "the cat", "the dog", 1 / 3),
    ("jaccard", "the cat the", "the dog", 1 / 3),  # a set: the repeated "the" counts once
    # 2 * 1 / (2 + 2)
    ("dice", "the cat", "the dog", 0.5),
    # Japanese words are MeCab morphemes: 私 は 猫 が 好き です vs 私 は 犬 が 好き です -> 5 shared of 7
    ("jaccard", "私は猫が好きです", "私は犬が好きです", 5 / 7),
]


@pytest.mark.parametrize("score,a,b,expected", HAND)
def test_hand_computed(score, a, b, expected):
    lang = "ja" if any(ord(ch) > 0x3000 for ch in a) else "en"
    assert pair_similarities(a, b, lang)[score] == pytest.approx(expected, abs=1e-12)
    # the bulk path gives the same number
    assert score_matrices([a], [b], lang, [score])[score][0, 0] == pytest.approx(expected, abs=1e-12)


def test_every_score_is_covered_by_hand():
    assert {h[0] for h in HAND} == set(STRING_SCORES)


def test_identical_disjoint_case_and_punctuation():
    same = pair_similarities("Aspirin reduces fever.", "Aspirin reduces fever.")
    assert same == dict.fromkeys(STRING_SCORES, 1.0)
    # no character, word or gram in common: every similarity is 0
    assert pair_similarities("abcd", "wxyz") == dict.fromkeys(STRING_SCORES, 0.0)
    # lowercased; punctuation is not a word: only the character scores see the full stop
    s = pair_similarities("The Cat.", "the cat")
    for name in ("levenshtein_word", "jaro_winkler_word", "cosine", "jaccard", "dice"):
        assert s[name] == 1.0
    assert s["levenshtein_char"] == pytest.approx(1 - 1 / 8)  # "the cat." vs "the cat"
    # a sentence without words against one with words: 0; two without: identical
    assert pair_similarities("...", "a cat")["jaccard"] == 0.0
    assert pair_similarities("...", "!!")["cosine"] == 1.0


def test_char_ngrams():
    assert char_ngrams("abcde") == ("abcd", "bcde")
    assert char_ngrams("abc") == ("abc",)
    assert char_ngrams("") == ()


def test_bulk_equals_per_pair_on_an_article():
    doc = next(d for d in load_gold_docs(None) if d.lang == "en")
    # edge cases: a sentence without words, a repeated sentence, one short of a 4-gram
    complex_sents = [*doc.complex, "...", doc.simple[0], "abc"]
    mats = score_matrices(complex_sents, doc.simple, "en")
    assert list(mats) == list(STRING_SCORES)
    for i, a in enumerate(complex_sents):
        for j, b in enumerate(doc.simple):
            for name, v in pair_similarities(a, b, "en").items():
                assert mats[name][i, j] == pytest.approx(v, abs=1e-12), (name, i, j)
    for m in mats.values():
        assert m.shape == (len(complex_sents), len(doc.simple))
        assert m.min() >= 0.0 and m.max() <= 1.0


def test_bounded_damerau_keeps_the_band_exact():
    """With min_mean, DL is exact wherever the mean could reach it, and an upper bound elsewhere."""
    for doc in load_gold_docs(None)[::13]:  # nine article pairs, one per language
        full = score_matrices(doc.complex, doc.simple, doc.lang)
        mean = mean_similarity(full)
        for theta in (0.25, 0.4, 0.5):
            bounded = score_matrices(doc.complex, doc.simple, doc.lang, min_mean=theta)
            assert (bounded["damerau_levenshtein"] >= full["damerau_levenshtein"] - 1e-12).all()
            bmean = mean_similarity(bounded)
            keep = mean >= theta
            assert np.array_equal(bmean[keep], mean[keep])
            assert not (bmean[~keep] >= theta).any()


HAND_ARTICLE = (
    ["The patient has a high fever and a cough.", "Aspirin reduces pain and fever in adults."],
    [
        "The patient has a high fever and a cough.",  # a copy of complex 0: mean 1, above the band
        "The patient has high fever and cough.",  # a near copy (mean 0.88)
        "Aspirin lowers pain and fever.",  # a simpler rewrite of complex 1 (mean 0.64)
        "Completely unrelated words here.",
    ],
)


def test_lexical_matches_band():
    c, s = HAND_ARTICLE
    mean = mean_similarity(score_matrices(c, s, "en"))
    [matches] = lexical_matches([HAND_ARTICLE], ["en"], LexicalConfig())
    got = [(m.i, m.j) for m in matches]
    assert got == sorted(got)
    assert set(got) == {(i, j) for i in range(2) for j in range(4) if mean[i, j] <= 0.8}
    assert (0, 0) not in got  # identical sentences are left out (paper: avoid near copies)
    assert (0, 1) not in got and mean[0, 1] > 0.8  # so is a near copy (two articles dropped)
    assert (1, 2) in got and 0.5 <= mean[1, 2] <= 0.8  # a real rewrite lies in the band
    assert (0, 3) in got and mean[0, 3] < 0.5  # below θ is kept here: align.py applies θ
    for m in matches:
        assert m.score == mean[m.i, m.j] and math.isnan(m.cosine)
    # raising max_mean readmits the copy; min_score drops what align.py would drop anyway
    [wide] = lexical_matches([HAND_ARTICLE], ["en"], LexicalConfig(max_mean=1.0))
    assert (0, 0) in [(m.i, m.j) for m in wide]
    [floor] = lexical_matches([HAND_ARTICLE], ["en"], LexicalConfig(), min_score=0.5)
    assert [(m.i, m.j, m.score) for m in floor] == [(m.i, m.j, m.score) for m in matches if m.score >= 0.5]
    # a chosen subset of scores: the mean is over those only
    [jac] = lexical_matches([HAND_ARTICLE], ["en"], LexicalConfig(scores=["jaccard"], max_mean=1.0))
    jmat = score_matrices(c, s, "en", ["jaccard"])["jaccard"]
    assert all(m.score == jmat[m.i, m.j] for m in jac) and len(jac) == 8


def test_config_defaults_and_validation():
    assert LexicalConfig().scores == list(STRING_SCORES)
    doc = [HAND_ARTICLE]
    for cfg, msg in [
        (LexicalConfig(scores=["levenshtein", "jaccard"]), "unknown score 'levenshtein'"),
        (LexicalConfig(scores=["paraphrase"]), "paraphrase.model_path"),
        (LexicalConfig(scores=["lcs", "lcs"]), "lcs listed twice"),
        (LexicalConfig(scores=[]), "is empty"),
        (LexicalConfig(max_mean=1.5), "max_mean=1.5"),
        (LexicalConfig(workers=0), "workers=0"),
    ]:
        with pytest.raises(MultimsdError, match=msg):
            lexical_matches(doc, ["en"], cfg)
    with pytest.raises(MultimsdError, match="band is empty"):
        lexical_matches(doc, ["en"], LexicalConfig(max_mean=0.4), min_score=0.5)


# ---------------------------------------------------------------------------------------------- CLI


@pytest.mark.e2e
def test_cli_align_lexical(tmp_path, python, repo_root):
    out = tmp_path / "aligned"
    proc = run_cli(python, repo_root, "aligner=lexical", "debug=tiny", f"output.dir={out}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads((out / "stats.json").read_text())
    assert stats["aligner"] == {"method": "lexical", "threshold": 0.5}
    assert stats["sentences_encoded"] == 0  # no embedder involved
    rows = [r for ds in datasets.load_from_disk(str(out)).values() for r in ds]
    assert rows, "the sample has at least one pair in the paper's band"
    for r in rows:
        assert 0.5 <= r["score"] <= 0.8 + 1e-6  # float32 column
        assert math.isnan(r["cosine"])
        assert r["lang"] in ("en", "ja")


@pytest.mark.e2e
def test_cli_gold_lexical(tmp_path, python, repo_root):
    report = tmp_path / "gold"
    proc = run_cli(
        python,
        repo_root,
        "mode=gold",
        "gold.methods=[lexical]",
        "data.languages=[en]",
        f"gold.report_dir={report}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| lang | lexical θ |" in proc.stdout
    results = json.loads((report / "gold_results.json").read_text())
    assert list(results["methods"]) == ["lexical"]
    en = results["methods"]["lexical"]["en"]
    assert en["threshold"] in [round(0.05 * i, 2) for i in range(1, 20)]
    # far from useless on the hand-made gold: some gold pairs are found at the tuned θ
    assert en["test"]["correct"] > 0 and 0.0 < en["test"]["f1"] <= 1.0
    assert (report / "gold_pr_curve.png").is_file()


def test_bad_score_name_is_one_error_line(tmp_path, capsys):
    """The CLI contract (one ``error:`` line, exit status 2, no output), run in-process."""
    from multimsd.alignment.stage import run
    from multimsd.commands.stage import run_stage

    out = tmp_path / "aligned"
    cfg = {
        "aligner": {"method": "lexical", "threshold": 0.5, "lexical": {"scores": ["lcs", "cosin"]}},
        "data": {"languages": ["en"], "max_articles": 1},
        "output": {"dir": str(out)},
    }
    with pytest.raises(SystemExit) as exit_info:
        run_stage(run, cfg)
    assert exit_info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "unknown score 'cosin'" in errors[0]
    assert not out.exists()

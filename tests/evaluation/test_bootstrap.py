"""Bootstrap confidence intervals and paired tests (multimsd.metrics.bootstrap, the evaluation stage's
``bootstrap.*``): checked against the library's own corpus scorers, computed one resample at a time."""

import json
import math

import numpy as np
import pytest

from multimsd.errors import MultimsdError
from multimsd.evaluation.stage import run
from multimsd.metrics import corpus_bleu, corpus_fkgl, corpus_sari
from multimsd.metrics.bootstrap import (
    RULE,
    bleu_from_totals,
    bleu_statistics,
    bootstrap_ci,
    fkgl_from_totals,
    fkgl_statistics,
    format_p,
    paired_bootstrap,
    paired_from_resamples,
    percentile_interval,
    resample_counts,
    resample_indices,
    sari_from_totals,
    sari_part_from_totals,
    sari_parts_from_totals,
    sari_statistics,
)

EN_SRC = [
    "Patients with hypertension should reduce their sodium intake considerably.",
    "Deep vein thrombosis is a blood clot in a deep vein, usually in the leg.",
    "Asthma is a chronic inflammatory disease of the airways.",
    "Antibiotics are ineffective against viral infections such as the common cold.",
    "Regular physical activity lowers the risk of cardiovascular disease.",
    "Insulin regulates the concentration of glucose in the blood.",
    "The patient was administered an intravenous analgesic postoperatively.",
    "Vaccination confers immunity against several infectious diseases.",
]
EN_REF = [
    "People with high blood pressure should eat less salt.",
    "A blood clot in a leg vein is called DVT.",
    "Asthma is a long-term illness of the airways.",
    "Antibiotics do not work against colds.",
    "Exercise lowers the risk of heart disease.",
    "Insulin controls blood sugar.",
    "After the operation the patient got a painkiller through a vein.",
    "Vaccines protect you against some diseases.",
]
EN_REF2 = [s.replace(".", "!") for s in EN_REF]
EN_SYS = [
    "People with hypertension should eat less salt.",
    "A blood clot in a deep vein, usually in the leg.",
    "Asthma is a disease of the airways.",
    "Antibiotics do not work against viral infections.",
    "Exercise lowers the risk of cardiovascular disease.",
    "",
    "The patient got a painkiller after the operation.",
    "Vaccination protects against diseases.",
]
JA_SRC = [
    "高血圧の患者はナトリウムの摂取量を大幅に減らすべきです。",
    "深部静脈血栓症は、通常は脚の深部静脈にできる血栓です。",
    "喘息は気道の慢性炎症性疾患です。",
]
JA_REF = [
    "血圧が高い人は塩を減らしましょう。",
    "足の静脈に血のかたまりができる病気です。",
    "ぜんそくは気道の長く続く病気です。",
]
JA_SYS = ["高血圧の人は塩を減らすべきです。", "脚の静脈にできる血栓です。", "喘息は気道の病気です。"]
ZH_SRC = [
    "高血压患者应大幅减少钠的摄入量。",
    "深静脉血栓通常是腿部深静脉中的血凝块。",
    "哮喘是气道的慢性炎症性疾病。",
]
ZH_REF = ["血压高的人应少吃盐。", "腿部静脉里的血块叫DVT。", "哮喘是气道的长期疾病。"]
ZH_SYS = ["高血压的人应少吃盐。", "深静脉血栓是腿部的血块。", "哮喘是气道的疾病。"]

CASES = {
    "en-13a-2refs": (EN_SRC, EN_SYS, [EN_REF, EN_REF2], "13a"),
    "ja-mecab": (JA_SRC, JA_SYS, [JA_REF], "ja-mecab"),
    "zh-char": (ZH_SRC, ZH_SYS, [ZH_REF], "zh-char"),
}


def identity(stats, score):
    n = len(stats)
    return float(score(resample_counts(np.arange(n)[None, :], n) @ stats.astype(float))[0])


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("lowercase", [True, False])
def test_identity_resample_is_the_corpus_score_sari_bleu(case, lowercase):
    src, out, refs, tok = CASES[case]
    sari = sari_statistics(src, out, refs, lowercase=lowercase, tokenizer=tok)
    assert identity(sari, sari_from_totals) == pytest.approx(
        corpus_sari(src, out, refs, lowercase=lowercase, tokenizer=tok), abs=1e-9
    )
    for smooth in ("exp", "floor", "add-k", "none"):
        bleu = bleu_statistics(out, refs, lowercase=lowercase, tokenizer=tok, smooth_method=smooth)
        expected = corpus_bleu(out, refs, lowercase=lowercase, tokenizer=tok, smooth_method=smooth).score
        assert identity(bleu, lambda t, s=smooth: bleu_from_totals(t, smooth_method=s)) == pytest.approx(
            expected, abs=1e-9
        )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("lang", "sents"), [("en", EN_SYS), ("en", EN_SRC), ("de", ["Das ist gut.", "Nein"])]
)
def test_identity_resample_is_the_corpus_score_fkgl(lang, sents):
    assert identity(fkgl_statistics(sents, lang), fkgl_from_totals) == pytest.approx(
        corpus_fkgl(sents, lang), abs=1e-9
    )


def test_bleu_without_matches_and_without_output_is_zero():
    for out in (["zzz qqq"], [""]):
        stats = bleu_statistics(out, [["a b c d e"]])
        assert identity(stats, bleu_from_totals) == corpus_bleu(out, [["a b c d e"]]).score == 0.0


def loop_percentile(values, q):
    """Linear-interpolation percentile, written out (numpy's default method)."""
    s = sorted(values)
    pos = q / 100 * (len(s) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


@pytest.mark.integration
def test_matches_a_plain_loop_over_the_same_resamples():
    n, samples, conf = len(EN_SRC), 200, 0.9
    idx = resample_indices(n, samples, seed=7)
    counts = resample_counts(idx, n)
    refs = [EN_REF, EN_REF2]
    scorers = {
        "sari": (
            sari_statistics(EN_SRC, EN_SYS, refs),
            sari_from_totals,
            lambda r: corpus_sari(
                [EN_SRC[i] for i in r], [EN_SYS[i] for i in r], [[s[i] for i in r] for s in refs]
            ),
        ),
        "bleu": (
            bleu_statistics(EN_SYS, refs, lowercase=True),
            bleu_from_totals,
            lambda r: (
                corpus_bleu([EN_SYS[i] for i in r], [[s[i] for i in r] for s in refs], lowercase=True).score
            ),
        ),
        "fkgl": (
            fkgl_statistics(EN_SYS, "en"),
            fkgl_from_totals,
            lambda r: corpus_fkgl([EN_SYS[i] for i in r], "en"),
        ),
    }
    for name, (stats, score, corpus) in scorers.items():
        looped = [corpus(list(row)) for row in idx]
        expected = (loop_percentile(looped, 5.0), loop_percentile(looped, 95.0))
        got = bootstrap_ci(stats, score, confidence=conf, counts=counts)
        assert got == pytest.approx(expected, abs=1e-9), name
        assert got == bootstrap_ci(
            stats, score, samples=samples, confidence=conf, seed=7
        )  # drawn from the seed


def test_seed_reproducible_and_other_seed_differs():
    stats = sari_statistics(EN_SRC, EN_SYS, [EN_REF])
    a = bootstrap_ci(stats, sari_from_totals, samples=300, seed=1)
    assert a == bootstrap_ci(stats, sari_from_totals, samples=300, seed=1)
    assert a != bootstrap_ci(stats, sari_from_totals, samples=300, seed=2)
    assert np.array_equal(resample_indices(5, 10, 3), resample_indices(5, 10, 3))


def test_identical_systems_are_not_separable():
    stats = sari_statistics(EN_SRC, EN_SYS, [EN_REF])
    r = paired_bootstrap(stats, stats.copy(), sari_from_totals, samples=500)
    assert r.diff == 0.0 and r.ci == (0.0, 0.0) and r.p_value == 1.0 and not r.separable
    assert r.n_sentences == len(EN_SRC)


def test_much_better_on_every_sentence_is_separable():
    good = sari_statistics(EN_SRC, EN_REF, [EN_REF])  # the reference itself
    copy = sari_statistics(EN_SRC, EN_SRC, [EN_REF])  # the source copied
    r = paired_bootstrap(good, copy, sari_from_totals, samples=1000, seed=3)
    assert r.diff > 50 and r.ci[0] > 0 and r.separable and r.p_value < 0.01
    assert r.p_value == 0.0  # no resample on the far side of 0
    rev = paired_bootstrap(copy, good, sari_from_totals, samples=1000, seed=3)
    assert rev.diff == pytest.approx(-r.diff) and rev.ci[1] < 0 and rev.p_value == r.p_value
    assert r.a_score == pytest.approx(corpus_sari(EN_SRC, EN_REF, [EN_REF]), abs=1e-9)


@pytest.mark.integration
def test_paired_p_value_and_interval_definition():
    """p = min(1, 2 min(#{d* <= 0}, #{d* >= 0}) / B); interval [d*_(j), d*_(B+1-j)], j = ceil(alpha B / 2),
    d* the resampled differences (written out here, one resample at a time)."""
    a = sari_statistics(EN_SRC, EN_SYS, [EN_REF])
    b = sari_statistics(EN_SRC, EN_SRC, [EN_REF])
    idx = resample_indices(len(a), 400, 11)
    d = corpus_sari(EN_SRC, EN_SYS, [EN_REF]) - corpus_sari(EN_SRC, EN_SRC, [EN_REF])
    diffs = []
    for row in idx:
        src, out = [EN_SRC[i] for i in row], [EN_SYS[i] for i in row]
        ref = [[EN_REF[i] for i in row]]
        diffs.append(corpus_sari(src, out, ref) - corpus_sari(src, src, ref))
    low, high = sum(x <= 1e-9 for x in diffs), sum(x >= -1e-9 for x in diffs)
    expected = min(1.0, 2 * min(low, high) / 400)
    r = paired_bootstrap(a, b, sari_from_totals, samples=400, seed=11)
    assert r.p_value == pytest.approx(expected) and r.diff == pytest.approx(d, abs=1e-9)
    s = sorted(diffs)
    assert r.ci == pytest.approx((s[10 - 1], s[400 - 10]), abs=1e-9)  # j = ceil(0.05 * 400 / 2) = 10
    r90 = paired_bootstrap(a, b, sari_from_totals, samples=400, seed=11, alpha=0.1)
    assert r90.ci == pytest.approx((s[20 - 1], s[400 - 20]), abs=1e-9) and r90.p_value == r.p_value


def test_paired_rule_hand_computed():
    """Ten resampled differences, counted by hand: 2 of 10 are <= 0, so p = 2 * 2 / 10 = 0.4."""
    a = np.array([1.0, 2, 3, 4, 5, 6, 7, 8, -1, 0])
    b = np.zeros(10)
    r = paired_from_resamples(1.0, 0.0, a, b, alpha=0.5, n_sentences=3)
    # j = ceil(0.5 * 10 / 2) = 3: the 3rd and the 8th of -1 0 1 2 3 4 5 6 7 8
    assert r.p_value == pytest.approx(0.4) and r.ci == (1.0, 6.0) and r.separable
    r = paired_from_resamples(1.0, 0.0, a, b, alpha=0.4, n_sentences=3)  # p = 0.4 is not < 0.4
    assert r.ci == (0.0, 7.0) and not r.separable  # j = 2: the interval reaches 0


@pytest.mark.parametrize("alpha", [0.05, 0.1, 0.01, 0.5, 0.3333])
def test_interval_and_p_value_never_disagree(alpha):
    """separable (p < alpha) <=> the interval excludes 0, on many random inputs: few and many resamples,
    discrete differences with many ties at 0, shifted ones, and identical systems (never separable)."""
    rng = np.random.default_rng(0)
    checked = {"sep": 0, "not": 0}
    for trial in range(3000):
        b = int(rng.choice([1, 2, 3, 7, 10, 19, 20, 40, 99, 100, 1000]))
        kind = trial % 4
        if kind == 0:  # integers: many ties at exactly 0
            d = rng.integers(-3, 4, size=b).astype(float) + rng.integers(-2, 3)
        elif kind == 1:  # continuous, a shift of either sign
            d = rng.normal(rng.normal(0, 2), 1, size=b)
        elif kind == 2:  # mostly zero
            d = np.where(rng.random(b) < 0.9, 0.0, rng.normal(0, 1, size=b))
        else:  # identical systems
            d = np.zeros(b)
        a_res = rng.normal(30, 5, size=b)
        r = paired_from_resamples(1.0, 1.0, a_res + d, a_res, alpha=alpha, n_sentences=5)
        excludes = r.ci[0] > 0 or r.ci[1] < 0
        assert r.separable == excludes == (r.p_value < alpha), (trial, b, r)
        assert r.ci[0] <= r.ci[1] and 0.0 <= r.p_value <= 1.0
        if kind == 3:
            assert r.p_value == 1.0 and r.ci == (0.0, 0.0) and not r.separable
        checked["sep" if r.separable else "not"] += 1
    assert checked["sep"] > 300 and checked["not"] > 300  # both verdicts were exercised


def test_paired_from_real_statistics_agrees_with_its_verdict():
    rng = np.random.default_rng(4)
    good = sari_statistics(EN_SRC, EN_SYS, [EN_REF])
    copy = sari_statistics(EN_SRC, EN_SRC, [EN_REF])
    for seed in range(40):
        samples = int(rng.integers(5, 300))
        r = paired_bootstrap(good, copy, sari_from_totals, samples=samples, seed=seed)
        assert r.separable == (r.ci[0] > 0 or r.ci[1] < 0) == (r.p_value < 0.05)


# ------------------------------------------------------------------------------------------- the stage
def write_inputs(tmp_path):
    tmp_path.mkdir(parents=True, exist_ok=True)
    refs = tmp_path / "refs.jsonl"
    rows = [("en", c, s) for c, s in zip(EN_SRC, EN_REF)] + [("ja", c, s) for c, s in zip(JA_SRC, JA_REF)]
    refs.write_text(
        "".join(
            json.dumps({"complex": c, "simple": s, "lang": g}, ensure_ascii=False) + "\n" for g, c, s in rows
        ),
        encoding="utf-8",
    )
    good = tmp_path / "good.txt"
    good.write_text("".join(s + "\n" for _, _, s in rows), encoding="utf-8")
    mid = tmp_path / "mid.txt"
    mid.write_text("".join(s + "\n" for s in EN_SYS + JA_SYS), encoding="utf-8")
    return refs, good, mid


def stage_cfg(tmp_path, **bootstrap):
    refs, good, mid = write_inputs(tmp_path)
    return {
        "refs": {"path": str(refs)},
        "systems": {"identity": "@identity", "good": str(good), "mid": str(mid)},
        "metrics": {"include": ["sari", "bleu", "fkgl"]},
        "terms": {"enabled": False},
        "bootstrap": bootstrap,
        "output": {"dir": str(tmp_path / "out"), "print_table": False, "plot": False},
    }


def test_stage_writes_intervals_and_comparisons(tmp_path):
    r = run(stage_cfg(tmp_path, samples=300, seed=5))
    saved = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert saved["bootstrap"] == {
        "samples": 300,
        "confidence": 0.95,
        "seed": 5,
        "method": "percentile, sentences resampled",
        "metrics": ["sari", "bleu", "fkgl"],
        "alpha": 0.05,
        "comparison_rule": RULE,
    }
    for name in ("identity", "good", "mid"):
        for lang in ("en", "ja"):
            res = saved["systems"][name][lang]
            for m in ("sari", "bleu", "fkgl"):
                if lang == "ja" and m == "fkgl":
                    assert res["ci"][m] is None and res[m] is None  # FKGL is undefined for Japanese
                    continue
                lo, hi = res["ci"][m]
                assert lo - 1e-9 <= res[m] <= hi + 1e-9, (name, lang, m)
        assert "ci" not in saved["systems"][name]["all"]
    comps = saved["comparisons"]
    assert {(c["a"], c["b"]) for c in comps} == {("identity", "good"), ("identity", "mid"), ("good", "mid")}
    assert len(comps) == 3 * (3 + 2)  # en: sari bleu fkgl; ja: sari bleu
    for c in comps:
        assert c["a_score"] == pytest.approx(saved["systems"][c["a"]][c["lang"]][c["metric"]], abs=1e-9)
        assert c["diff"] == pytest.approx(c["a_score"] - c["b_score"])
        assert c["separable"] == (c["ci"][0] > 0 or c["ci"][1] < 0) == (c["p_value"] < c["alpha"])
        assert c["n_sentences"] == {"en": 8, "ja": 3}[c["lang"]] and 0 <= c["p_value"] <= 1
    ig = next(
        c for c in comps if (c["a"], c["b"], c["lang"], c["metric"]) == ("identity", "good", "en", "sari")
    )
    assert ig["separable"] and ig["diff"] < 0 and ig["p_value"] < 0.01
    assert all(c["resamples"] == 300 for c in comps)
    # the interval is the library's, on the stage's resamples (one index matrix per language from the seed)
    stats = sari_statistics(EN_SRC, EN_SYS, [EN_REF])
    assert saved["systems"]["mid"]["en"]["ci"]["sari"] == pytest.approx(
        list(bootstrap_ci(stats, sari_from_totals, samples=300, seed=5)), abs=1e-9
    )
    table = (tmp_path / "out" / "table.md").read_text(encoding="utf-8")
    lo, hi = saved["systems"]["mid"]["en"]["ci"]["sari"]
    assert f"{saved['systems']['mid']['en']['sari']:.2f} [{lo:.1f}, {hi:.1f}]" in table
    assert "## Paired bootstrap comparisons" in table and "| en | identity | good | SARI |" in table
    if ig["p_value"] == 0:  # every resample on one side: printed as below the resolution 2/B, not 0.000
        # (the Markdown writer escapes "<", as in report.md: table.md is written by it too)
        assert "| \\< 0.00667 |" in table and "| 0.000 |" not in table
    assert r["comparisons"] == comps


def test_stage_compare_subset_small_sets_get_a_note_and_off_switch(tmp_path):
    r = run(stage_cfg(tmp_path, samples=200, compare=["mid:good"], metrics=["sari"]))
    assert {(c["a"], c["b"], c["metric"]) for c in r["comparisons"]} == {("mid", "good", "sari")}
    assert "ci" in r["systems"]["mid"]["en"] and set(r["systems"]["mid"]["en"]["ci"]) == {"sari"}
    table = (tmp_path / "out" / "table.md").read_text(encoding="utf-8")
    for c in r["comparisons"]:
        note = f"{c['lang']}, n={c['n_sentences']} sentences: too few to separate mid and good on SARI"
        assert (note in table) == (not c["separable"])
    off = run(stage_cfg(tmp_path / "off", samples=0))
    assert off["comparisons"] == [] and off["bootstrap"]["method"] == "off"
    assert "ci" not in off["systems"]["good"]["en"]
    assert (
        "["
        not in (tmp_path / "off" / "out" / "table.md").read_text(encoding="utf-8").split("## Per language")[1]
    )


@pytest.mark.parametrize(
    ("bootstrap", "message"),
    [
        ({"samples": -1}, r"bootstrap\.samples=-1: must be >= 0"),
        ({"confidence": 1.0}, r"bootstrap\.confidence=1\.0: must lie strictly between 0 and 1"),
        ({"confidence": 0.0}, r"bootstrap\.confidence=0\.0"),
        ({"metrics": ["sari", "ter"]}, r"bootstrap\.metrics: no bootstrap for ter"),
        ({"compare": ["good:nope"]}, r"bootstrap\.compare: 'good:nope' names unknown system\(s\) nope"),
        ({"compare": ["good"]}, r"bootstrap\.compare: 'good' is not of the form"),
        ({"compare": ["good:good"]}, r"compares a system with itself"),
    ],
)
def test_bad_bootstrap_config_is_one_line_and_writes_nothing(tmp_path, bootstrap, message):
    c = stage_cfg(tmp_path / "in", **bootstrap)
    c["output"]["dir"] = str(tmp_path / "out")
    with pytest.raises(MultimsdError, match=message) as exc:
        run(c)
    assert "\n" not in str(exc.value) and not (tmp_path / "out").exists()


def test_library_errors():
    with pytest.raises(MultimsdError, match="confidence"):
        bootstrap_ci(np.ones((3, 3)), fkgl_from_totals, confidence=1.5)
    with pytest.raises(MultimsdError, match="shapes"):
        paired_bootstrap(np.ones((3, 3)), np.ones((4, 3)), fkgl_from_totals)


def test_a_replaced_scorer_gets_no_interval(tmp_path, monkeypatch, caplog):
    """A plugin that re-registers ``sari`` with another scorer: the statistics no longer give the reported
    score, so the stage reports no interval (and warns) rather than an interval of a different metric."""
    import dataclasses

    from multimsd.metrics import METRICS

    fake = {"sari": 1.0, "sari_add": 1.0, "sari_keep": 1.0, "sari_delete": 1.0}
    monkeypatch.setitem(METRICS, "sari", dataclasses.replace(METRICS["sari"], score=lambda *a, **k: fake))
    r = run(stage_cfg(tmp_path, samples=100))
    assert r["systems"]["good"]["en"]["ci"]["sari"] is None and r["systems"]["good"]["en"]["ci"]["bleu"]
    assert {c["metric"] for c in r["comparisons"]} == {"bleu", "fkgl"}
    assert "no interval" in caplog.text


def test_a_p_value_of_zero_is_printed_below_the_resolution():
    assert format_p(0.0, 1000) == "< 0.002"  # the smallest p above 0 with B = 1000 is 2/1000
    assert format_p(0.0, 300) == "< 0.00667"
    assert format_p(0.0) == "< 0.001"  # B unknown (results written before resamples were recorded)
    assert format_p(0.002, 1000) == "0.002" and format_p(0.5373, 1000) == "0.537" and format_p(None) == "–"
    assert format_p(0.0004, 5000) == "< 0.001"


# ------------------------------------------------------------------------------------------- by hand (unit tier)
# What make mutation runs against multimsd/metrics/bootstrap.py (docs/development.md): small cases counted by
# hand, and the BLEU of totals against sacrebleu's own compute_bleu.
def share(totals):
    """100 * flagged / sentences of [flagged, 1] rows: a linear score, so resampled scores are easy to count."""
    t = np.asarray(totals, dtype=np.float64)
    return 100.0 * t[..., 0] / t[..., 1]


def test_resampling_by_hand():
    assert resample_indices(1, 3, 0).tolist() == [[0], [0], [0]]
    assert resample_indices(2, 1, 0).shape == (1, 2)  # one resample is allowed
    idx = resample_indices(4, 2, 5)
    assert idx.shape == (2, 4) and idx.min() >= 0 and idx.max() <= 3
    counts = resample_counts(np.array([[0, 0, 2], [1, 2, 2], [0, 0, 0]]), 3)
    assert counts.dtype == np.float64
    assert counts.tolist() == [[2, 0, 1], [0, 1, 2], [3, 0, 0]]  # the last row never draws sentence 2
    for n, samples in ((0, 5), (3, 0), (-1, -1)):
        with pytest.raises(MultimsdError) as exc:
            resample_indices(n, samples, 0)
        assert str(exc.value) == (
            f"bootstrap needs at least one sentence and one sample (n={n}, samples={samples})"
        )


def test_percentile_interval_by_hand():
    assert percentile_interval(np.array([100.0, 0.0, 50.0]), 0.5) == (25.0, 75.0)  # 25th / 75th, interpolated
    assert percentile_interval(np.arange(101.0), 0.9) == pytest.approx((5.0, 95.0))
    assert percentile_interval(np.arange(101.0), 0.95) == pytest.approx((2.5, 97.5))
    for confidence in (0.0, 1.0, 1.5, -0.5):
        with pytest.raises(MultimsdError) as exc:
            percentile_interval(np.arange(3.0), confidence)
        assert str(exc.value) == f"confidence={confidence}: must lie strictly between 0 and 1"


def test_bootstrap_ci_by_hand_and_its_defaults():
    stats = np.array([[1, 1], [0, 1]])  # one of two sentences flagged: 50 %
    counts = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 2.0]])  # resampled shares 100, 50 and 0
    assert bootstrap_ci(stats, share, confidence=0.5, counts=counts) == (25.0, 75.0)
    # drawn from the seed: the same interval as from those resamples' counts
    counts = resample_counts(resample_indices(2, 40, 3), 2)
    scores = share(counts @ stats)
    assert bootstrap_ci(stats, share, samples=40, confidence=0.8, seed=3) == tuple(
        np.percentile(scores, [10.0, 90.0])
    )
    big = sari_statistics(EN_SRC, EN_SYS, [EN_REF])
    assert bootstrap_ci(big, sari_from_totals) == bootstrap_ci(
        big, sari_from_totals, samples=1000, confidence=0.95, seed=0
    )
    assert bootstrap_ci(big, sari_from_totals) != bootstrap_ci(big, sari_from_totals, seed=1)


def test_paired_bootstrap_by_hand_and_its_defaults():
    a = np.array([[1, 1], [0, 1]])  # 50 % flagged
    b = np.array([[0, 1], [0, 1]])  # 0 %
    counts = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 2.0], [1.0, 1.0]])
    # resampled a: 100 50 0 50, b: 0 everywhere; differences sorted 0 50 50 100: 1 is <= 0, 4 are >= 0,
    # p = 2 * 1 / 4 = 0.5; alpha = 0.5: j = 1, the interval [d_(1), d_(4)] = [0, 100]
    r = paired_bootstrap(a, b, share, alpha=0.5, counts=counts)
    assert (r.a_score, r.b_score, r.diff) == (50.0, 0.0, 50.0)
    assert r.ci == (0.0, 100.0) and r.p_value == 0.5 and r.alpha == 0.5 and r.n_sentences == 2
    assert not r.separable  # 0.5 is not < 0.5
    big_a, big_b = sari_statistics(EN_SRC, EN_SYS, [EN_REF]), sari_statistics(EN_SRC, EN_SRC, [EN_REF])
    default = paired_bootstrap(big_a, big_b, sari_from_totals)
    assert default == paired_bootstrap(big_a, big_b, sari_from_totals, samples=1000, alpha=0.05, seed=0)
    assert default.ci != paired_bootstrap(big_a, big_b, sari_from_totals, seed=1).ci
    with pytest.raises(MultimsdError) as exc:
        paired_bootstrap(np.ones((3, 3)), np.ones((4, 3)), fkgl_from_totals)
    assert str(exc.value) == "paired bootstrap: statistics of different shapes (3, 3) / (4, 3)"


@pytest.mark.parametrize("b", [1, 2, 3, 10, 19, 20, 40, 100, 400, 1000])
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.1, 0.3, 0.3333, 0.5, 0.7, 0.99])
def test_the_interval_ranks_are_the_smallest_j_with_2j_over_b_at_least_alpha(alpha, b):
    j = next(k for k in range(1, b + 1) if 2 * k / b >= alpha)  # the definition
    diffs = np.arange(1.0, b + 1)  # d*_(k) = k: the interval's ends are its ranks
    r = paired_from_resamples(0.0, 0.0, diffs[::-1].copy(), np.zeros(b), alpha=alpha, n_sentences=1)
    assert r.ci == (float(j), float(b + 1 - j))
    assert r.p_value == 0.0  # no difference is <= 0


def test_paired_from_resamples_errors_word_for_word():
    for alpha in (0.0, 1.0, 1.5):
        with pytest.raises(MultimsdError) as exc:
            paired_from_resamples(1.0, 0.0, np.ones(3), np.zeros(3), alpha=alpha, n_sentences=3)
        assert str(exc.value) == f"alpha={alpha}: must lie strictly between 0 and 1 (e.g. 0.05)"
    with pytest.raises(MultimsdError) as exc:
        paired_from_resamples(1.0, 0.0, np.ones(0), np.zeros(0), n_sentences=3)
    assert str(exc.value) == "paired bootstrap: no resamples"
    # the default alpha is 0.05: 1 difference of 40 <= 0 gives p = 0.05, not separable
    r = paired_from_resamples(1.0, 0.0, np.r_[-1.0, np.ones(39)], np.zeros(40), n_sentences=3)
    assert r.alpha == 0.05 and r.p_value == 0.05 and not r.separable


def test_format_p_at_its_thresholds():
    assert format_p(0.001, 1000) == "0.001" and format_p(0.000999, 5000) == "< 0.001"
    assert format_p(1.0) == "1.000" and format_p(0.0, 2) == "< 1"


# Example 1 of test_sari.py: orig "a b c", sys "a b d", refs "a b d" / "a c"; its statistics as counted there.
EX1_ROW = [1, 1, 1, 4, 4, 3, 2, 2, 1, 1, 2, 1, 2, 1, 1, 2, 3, 2, 1, 1, 1, 0, 0, 0, 2, 2, 2] + [0] * 9


def test_sari_statistics_and_totals_by_hand():
    stats = sari_statistics(["a b c", "a b c"], ["a b d", "a b d"], [["a b d", "a b d"], ["a c", "a c"]])
    assert stats.dtype == np.int64 and stats.tolist() == [EX1_ROW, EX1_ROW]
    empty = sari_statistics([], [], [[]])
    assert empty.shape == (0, 36) and empty.dtype == np.int64
    add, keep, dele = sari_parts_from_totals(np.array(EX1_ROW))
    assert (add, keep, dele) == pytest.approx((100 * 2 / 3, 100 * 17 / 48, 100 * 23 / 40))
    for part, value in (("add", add), ("keep", keep), ("delete", dele)):
        assert sari_part_from_totals(np.array(EX1_ROW), part) == value
    assert sari_from_totals(np.array(EX1_ROW)) == pytest.approx(53.194444444, abs=1e-8)
    # a batch of totals, one score each; no statistics at all scores 0
    batch = sari_from_totals(np.array([EX1_ROW, [0] * 36]))
    assert batch.shape == (2,) and batch[0] == pytest.approx(53.194444444) and batch[1] == 0.0
    with pytest.raises(ValueError):
        sari_part_from_totals(np.array(EX1_ROW), "adds")


def test_sari_statistics_options():
    # lowercase (default True): "A" is "a", a copy kept at order 1 (keep sys/ref/ok = 1); else nothing matches
    assert sari_statistics(["A"], ["a"], [["a"]])[0, 3:6].tolist() == [1, 1, 1]
    assert sari_statistics(["A"], ["a"], [["a"]], lowercase=False)[0, 3:6].tolist() == [0, 0, 0]
    # tokenizer (default 13a): "a," is two tokens ("a" ","), with "none" one
    assert sari_statistics(["a,"], ["a,"], [["a,"]])[0, 3:6].tolist() == [2, 2, 2]
    assert sari_statistics(["a,"], ["a,"], [["a,"]], tokenizer="none")[0, 3:6].tolist() == [1, 1, 1]
    # lowercased with str.lower, as corpus_sari: "maße" and "masse" stay two words (KEEP sys 2, ref 1, ok 1)
    assert sari_statistics(["Die Maße"], ["Die Maße"], [["die Masse"]])[0, 3:6].tolist() == [2, 1, 1]


def test_bleu_statistics_by_hand():
    # [sys_len, ref_len, correct 1-4, total 1-4]; case-sensitive and 13a-tokenised by default, as corpus_bleu
    assert bleu_statistics(["The cat"], [["the cat"]]).tolist() == [[2, 2, 1, 0, 0, 0, 2, 1, 0, 0]]
    assert bleu_statistics(["The cat"], [["the cat"]], lowercase=True).tolist() == [
        [2, 2, 2, 1, 0, 0, 2, 1, 0, 0]
    ]
    assert bleu_statistics(["cat."], [["cat."]]).tolist() == [[2, 2, 2, 1, 0, 0, 2, 1, 0, 0]]
    assert bleu_statistics(["cat."], [["cat."]], tokenizer="none").tolist() == [
        [1, 1, 1, 0, 0, 0, 1, 0, 0, 0]
    ]


def bleu_cases():
    """Totals [sys_len, ref_len, correct 1-4, total 1-4] with every branch: zero counts, no n-grams of an order,
    no output, shorter and longer outputs."""
    rng = np.random.default_rng(0)
    rows = [
        [4, 4, 4, 3, 2, 1, 4, 3, 2, 1],  # a perfect match: 100
        [2, 4, 2, 1, 0, 0, 2, 1, 0, 0],  # too short for 3-grams
        [0, 3, 0, 0, 0, 0, 0, 0, 0, 0],  # no output
        [5, 3, 3, 0, 0, 0, 5, 4, 3, 2],  # longer than the reference, no 2-gram matches
        [6, 9, 4, 2, 0, 1, 6, 5, 4, 3],  # a zero in the middle
        [3, 3, 0, 0, 0, 0, 3, 2, 1, 0],  # nothing correct
        [4, 4, 0, 0, 0, 0, 4, 3, 2, 1],  # nothing correct, n-grams of every order: 0 (not a smoothed score)
    ]
    for _ in range(60):
        total = np.sort(rng.integers(0, 12, size=4))[::-1]
        correct = np.minimum(total, rng.integers(0, 8, size=4))
        rows.append([int(total[0]), int(rng.integers(0, 14)), *correct.tolist(), *total.tolist()])
    return np.array(rows, dtype=np.int64)


@pytest.mark.parametrize(
    ("smooth_method", "smooth_value"),
    [
        ("exp", None),
        ("floor", None),
        ("floor", 0.5),
        ("add-k", None),
        ("add-k", 2),
        ("add-k", 0.5),
        ("none", None),
    ],
)
def test_bleu_from_totals_is_sacrebleus_compute_bleu(smooth_method, smooth_value):
    from sacrebleu.metrics.bleu import BLEU

    totals = bleu_cases()
    got = bleu_from_totals(totals, smooth_method=smooth_method, smooth_value=smooth_value)
    assert got.shape == (len(totals),)
    for row, score in zip(totals.tolist(), got):
        expected = BLEU.compute_bleu(
            row[2:6], row[6:10], row[0], row[1], smooth_method=smooth_method, smooth_value=smooth_value
        ).score
        assert score == pytest.approx(expected, abs=1e-9), row
    assert got[0] == pytest.approx(100.0)


def test_bleu_from_totals_default_smoothing_and_errors():
    totals = bleu_cases()
    assert np.array_equal(bleu_from_totals(totals), bleu_from_totals(totals, smooth_method="exp"))
    with pytest.raises(MultimsdError) as exc:
        bleu_from_totals(totals, smooth_method="Exp")
    assert str(exc.value) == "unknown BLEU smooth_method 'Exp'"


def test_fkgl_from_totals_by_hand():
    # FKGL = 0.39 words/sentences + 11.8 syllables/words - 15.59, floored at 0; 0 without words or sentences
    got = fkgl_from_totals(np.array([[10, 2, 15], [20, 1, 40], [3, 1, 3], [0, 0, 0], [5, 0, 5], [0, 1, 0]]))
    assert got.tolist() == pytest.approx([4.06, 15.81, 0.0, 0.0, 0.0, 0.0])
    assert fkgl_from_totals(np.array([1, 1, 2])) == pytest.approx(0.39 + 23.6 - 15.59)


def test_no_floating_point_warning_on_zero_counts():
    """Zero counts (no output, no n-grams of an order, no words) give 0 through guarded denominators, not through
    a division by zero whose warning would be printed for each of a thousand resamples."""
    import warnings

    zero_sari = np.zeros((3, 36))
    zero_sari[1, :9] = [0, 2, 0, 4, 0, 0, 0, 0, 0]  # references add and keep, the system nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sari_from_totals(zero_sari).tolist() == [0.0, 0.0, 0.0]
        for smooth in ("exp", "floor", "add-k", "none"):
            bleu_from_totals(bleu_cases(), smooth_method=smooth)
        assert fkgl_from_totals(np.array([[0, 0, 0], [5, 0, 5], [0, 2, 0]])).tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("order", [1, 2])
def test_bleu_from_totals_of_fewer_orders_is_sacrebleus(order):
    """The number of orders comes from the width of the totals: [sys_len, ref_len, correct 1-k, total 1-k]."""
    from sacrebleu.metrics.bleu import BLEU

    rows = [[1, 2, 1, 1], [3, 3, 2, 3], [0, 2, 0, 0], [4, 2, 0, 4]] if order == 1 else [[1, 3, 1, 0, 1, 0]]
    rows += [[5, 7, 4, 2, 5, 4]] if order == 2 else []
    totals = np.array(rows)
    got = bleu_from_totals(totals)
    for row, score in zip(rows, got):
        k = 2 + order
        expected = BLEU.compute_bleu(row[2:k], row[k:], row[0], row[1], "exp", max_ngram_order=order).score
        assert score == pytest.approx(expected, abs=1e-9), row
    if order == 1:  # a one-token output of a two-token reference: BP = exp(1 - 2/1), precision 100
        assert got[0] == pytest.approx(100 * math.exp(-1))


def test_the_statistics_of_an_empty_corpus_are_integers_too():
    for stats, width in (
        (sari_statistics([], [], [[]]), 36),
        (bleu_statistics([], [[]]), 10),
        (fkgl_statistics([], "en"), 3),
    ):
        assert stats.shape == (0, width) and stats.dtype == np.int64

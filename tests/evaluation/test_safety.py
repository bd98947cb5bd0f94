"""Safety checks of a simplification against its source (issue #39 item 3), on hand-made sentence pairs in
several languages: a changed dose, a dropped or added negation and a dropped term are flagged; a faithful
paraphrase is not."""

from __future__ import annotations

import numpy as np
import pytest

from multimsd.metrics import get_metric
from multimsd.metrics.safety import check_sentence, flagged, negations, quantities
from multimsd.metrics.terms import TermDictionary


def checks(source: str, output: str, lang: str, **kw) -> list[tuple[str, str]]:
    return [(f.check, f.reason) for f in check_sentence(source, output, lang, **kw)]


def test_quantities_by_value_and_unit_meaning():
    assert quantities("Take 5 mg twice daily for 3–4 days.", "en") == {
        ("5", "mg"): 1,
        ("2", ""): 1,
        ("3-4", "day"): 1,
    }
    assert quantities("Take 5 milligrams two times a day for 3 - 4 days.", "en") == {
        ("5", "mg"): 1,
        ("2", ""): 1,
        ("3-4", "day"): 1,
    }
    assert quantities("1,000 mg or 1.5 ml", "en") == {("1000", "mg"): 1, ("1.5", "ml"): 1}
    assert quantities("1,5 mg zweimal am Tag, 2 Tage lang", "de") == {
        ("1.5", "mg"): 1,
        ("2", ""): 1,
        ("2", "day"): 1,
    }
    assert quantities("1日3回、5日間", "ja") == {("1", "day"): 1, ("3", "times"): 1, ("5", "day"): 1}
    assert quantities("每天2次，每次500毫克", "zh") == {("2", "times"): 1, ("500", "mg"): 1}
    assert quantities("5 dayz", "en") == {("5", ""): 1}  # a unit ends where its word ends


@pytest.mark.parametrize(
    "lang, source, output",
    [
        ("en", "Take 5 mg twice daily.", "Take 10 mg twice a day."),
        ("es", "Tome 500 mg cada 8 horas.", "Tome 500 mg cada 6 horas."),
        ("de", "Nehmen Sie 2 Tabletten pro Tag.", "Nehmen Sie 3 Tabletten pro Tag."),
        ("ja", "1日3回飲んでください。", "1日2回飲んでください。"),
        ("en", "The usual dose is 5 mg.", "The usual dose is 5."),  # the unit went missing
    ],
)
def test_a_changed_dose_is_flagged(lang, source, output):
    got = checks(source, output, lang)
    assert got and {c for c, _ in got} == {"numbers"}, got


def test_the_reasons_name_the_quantities():
    assert checks("Take 5 mg twice daily.", "Take 10 mg twice a day.", "en") == [
        ("numbers", "5 mg of the source is not in the output"),
        ("numbers", "10 mg is in the output but not in the source"),
    ]


@pytest.mark.parametrize(
    "lang, source, output",
    [
        ("en", "Do not take aspirin with this medicine.", "Take aspirin with this medicine."),
        ("en", "You shouldn't drive after the injection.", "You should drive after the injection."),
        (
            "de",
            "Nehmen Sie das Medikament nicht mit Alkohol ein.",
            "Nehmen Sie das Medikament mit Alkohol ein.",
        ),
        ("es", "No tome este medicamento con alcohol.", "Tome este medicamento con alcohol."),
        ("fr", "Ne prenez pas ce médicament le soir.", "Prenez ce médicament le soir."),
        ("it", "Non assuma il farmaco a stomaco vuoto.", "Assuma il farmaco a stomaco vuoto."),
        ("pt", "Não tome o remédio com álcool.", "Tome o remédio com álcool."),
        ("ru", "Не принимайте лекарство с алкоголем.", "Принимайте лекарство с алкоголем."),
        ("zh", "不要空腹服用这种药。", "空腹服用这种药。"),
        ("ja", "この薬はお酒と一緒に飲まないでください。", "この薬はお酒と一緒に飲んでください。"),
    ],
)
def test_a_dropped_negation_is_flagged(lang, source, output):
    assert checks(source, output, lang) == [
        ("negation", "negation dropped (1 in the source, 0 in the output)")
    ]


def test_an_added_negation_is_flagged():
    assert checks("Take it with food.", "Do not take it with food.", "en") == [
        ("negation", "negation added (0 in the source, 1 in the output)")
    ]


@pytest.mark.parametrize(
    "lang, source, output",
    [
        (
            "en",
            "Take 5 milligrams twice daily for 3–4 days and do not drink alcohol.",
            "Take 5 mg two times a day for 3-4 days. Don't drink alcohol.",
        ),
        ("de", "Nehmen Sie zweimal täglich 1,5 mg ein.", "Nehmen Sie 2-mal am Tag 1.5 Milligramm."),
        ("es", "No supere la dosis de 1.000 mg al día.", "No tome más de 1000 miligramos cada día."),
        ("fr", "Ne prenez jamais plus de 2 comprimés.", "Ne prenez pas plus de deux comprimés."),
        ("ja", "1日3回、食後に服用してください。", "ごはんの後に、1日3回飲んでください。"),
    ],
)
def test_a_faithful_paraphrase_is_not_flagged(lang, source, output):
    assert checks(source, output, lang) == []


def test_terms_of_the_source_kept_or_explained():
    terms = TermDictionary(["deep vein thrombosis", "pulmonary embolism"], "en")
    source = "Deep vein thrombosis can cause pulmonary embolism."
    kept = "Deep vein thrombosis (a blood clot in a leg vein) can cause pulmonary embolism."
    assert checks(source, kept, "en", terms=terms) == []
    assert checks(source, "A clot in the leg can reach the lungs.", "en", terms=terms) == [
        ("terms", "medical term 'deep vein thrombosis' of the source is not in the output"),
        ("terms", "medical term 'pulmonary embolism' of the source is not in the output"),
    ]
    assert checks(source, "A clot in the leg can reach the lungs.", "en") == []  # no dictionary, no check


def test_negation_cues_are_counted_per_language():
    assert negations("It is not rare and never serious.", "en") == 2
    assert negations("Il ne faut pas le prendre sans eau.", "fr") == 2  # pas, sans ("ne" is not counted)
    assert negations("少ない量で十分です。", "ja") == 0  # 少ない (few) is one word, not a negation


def test_the_safety_metric_is_the_share_of_flagged_sentences_with_an_interval():
    sources = ["Take 5 mg.", "Do not drive.", "Rest for 2 days.", "Drink water."]
    outputs = ["Take 10 mg.", "Do not drive.", "Rest for two days.", "Drink no water."]
    assert flagged(sources, outputs, "en") == [True, False, False, True]
    metric = get_metric("safety")
    assert metric.higher_is_better is False and not metric.rankable
    kw = {"lang": "en", "tokenizer": "13a", "settings": None}
    assert metric.score(sources, outputs, [outputs], **kw) == 50.0
    stats = metric.statistics(sources, outputs, [outputs], **kw)
    assert stats.tolist() == [[1, 1], [0, 1], [0, 1], [1, 1]]
    assert float(metric.from_totals["safety"](stats.sum(0), **kw)) == 50.0
    # a bootstrap resample's totals give its share
    assert metric.from_totals["safety"](np.array([[2, 2], [0, 3]]), **kw).tolist() == [100.0, 0.0]

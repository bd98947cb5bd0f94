"""run(cfg) on raw text, saved datasets and the clean-up option, with a tiny random encoder (fast)."""

import json

import datasets
import pytest

from multimsd.alignment.stage import run


def base_cfg(tmp_path, tiny_encoder, **sections):
    cfg = {
        "embedder": {
            "name": "tiny",
            "model": str(tiny_encoder),
            "backend": "transformers",
            "pooling": "mean",
        },
        "aligner": {"method": "asymmetric", "threshold": -1.0},  # keep every argmax pair: test plumbing
        "output": {"dir": str(tmp_path / "out")},
        "cache_dir": str(tmp_path / "cache"),
    }
    for k, v in sections.items():
        cfg.setdefault(k, {}).update(v)
    return cfg


RAW = [
    {
        "article_id": "t1",
        "lang": "en",
        "complex": "Deep vein thrombosis (DVT) is clotting of blood in a deep vein, e.g. of the calf. "
        "Risk factors include immobility. Treatment is anticoagulation with 1.5 mg/kg enoxaparin.",
        "simple": "DVT is a blood clot in a deep vein. It often happens in the leg.\n\nDoctors give blood thinners.",
    },
    {
        "article_id": "t1",
        "lang": "ja",
        "complex": "深部静脈血栓症は、四肢の深部静脈で血液が凝固する病態で\nある。治療は抗凝固療法である。",
        "simple": "深部静脈血栓症は、脚の静脈に血のかたまりができる病気です。血液をサラサラにする薬を使います。",
    },
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def all_rows(out):
    dsd = datasets.load_from_disk(str(out))
    return [r for split in dsd.values() for r in split]


@pytest.mark.integration
def test_raw_text_is_segmented(tmp_path, tiny_encoder):
    path = write_jsonl(tmp_path / "raw.jsonl", RAW)
    stats = run(base_cfg(tmp_path, tiny_encoder, data={"path": str(path), "languages": ["en", "ja"]}))
    en, ja = stats["per_language"]["en"], stats["per_language"]["ja"]
    # "e.g." and "1.5" do not split; the blank line does. The wrapped Japanese line is re-joined.
    assert (en["complex_sentences_in"], en["simple_sentences_in"]) == (3, 3)
    assert (ja["complex_sentences_in"], ja["simple_sentences_in"]) == (2, 2)
    rows = all_rows(tmp_path / "out")
    assert "四肢の深部静脈で血液が凝固する病態である。" in {
        r["complex"][-21:] for r in rows if r["lang"] == "ja"
    }
    assert all(r["score"] >= -1.0 for r in rows)
    # asymmetric matching without a threshold links every sentence of both sides at least once
    en_rows = [r for r in rows if r["lang"] == "en"]
    assert {r["complex_idx"] for r in en_rows} == {0, 1, 2} and {r["simple_idx"] for r in en_rows} == {
        0,
        1,
        2,
    }


@pytest.mark.integration
def test_saved_dataset_input(tmp_path, tiny_encoder):
    records = [dict(r, complex=[r["complex"]], simple=[r["simple"]]) for r in RAW]
    ds = datasets.Dataset.from_list(records)
    datasets.DatasetDict({"train": ds}).save_to_disk(str(tmp_path / "pairs"))
    stats = run(
        base_cfg(tmp_path, tiny_encoder, data={"path": str(tmp_path / "pairs"), "languages": ["en", "ja"]})
    )
    # lists are used as given: one sentence a side, however many periods it holds
    assert stats["per_language"]["en"]["complex_sentences_in"] == 1
    assert stats["total_sentence_pairs"] == 2


@pytest.mark.integration
def test_cleanup_drops_boilerplate(tmp_path, tiny_encoder):
    boiler = "See also: related topics in this manual."
    records = [
        {
            "article_id": f"a{k}",
            "lang": "en",
            "complex": [f"Professional sentence number {k} about disease {k}.", boiler, "----"],
            "simple": [f"Simple sentence number {k} about illness {k}.", "Ask your doctor about it."],
        }
        for k in range(4)
    ]
    path = write_jsonl(tmp_path / "b.jsonl", records)
    kept = run(base_cfg(tmp_path, tiny_encoder, data={"path": str(path), "languages": ["en"]}))
    cleaned = run(
        base_cfg(
            tmp_path, tiny_encoder, data={"path": str(path), "languages": ["en"]}, segment={"cleanup": True}
        )
    )
    assert kept["per_language"]["en"]["complex_sentences_in"] == 12
    # boilerplate in 4/4 professional articles and the letterless line go; the consumer side's repeated
    # sentence goes too (it is boilerplate of that sub-corpus)
    assert cleaned["per_language"]["en"]["complex_sentences_in"] == 4
    assert cleaned["per_language"]["en"]["simple_sentences_in"] == 4
    rows = all_rows(tmp_path / "out")
    assert boiler not in {r["complex"] for r in rows}


@pytest.mark.integration
def test_split_is_shared_across_languages(tmp_path, tiny_encoder):
    records = [
        {
            "article_id": f"a{k}",
            "lang": lang,
            "complex": [f"Complex {lang} {k} sentence."],
            "simple": [f"Simple {lang} {k} one."],
        }
        for k in range(10)
        for lang in ("de", "en", "fr")
    ]
    path = write_jsonl(tmp_path / "m.jsonl", records)
    run(
        base_cfg(
            tmp_path,
            tiny_encoder,
            data={"path": str(path), "languages": ["de", "en", "fr"]},
            split={"max_fraction": 0.2},
        )
    )
    dsd = datasets.load_from_disk(str(tmp_path / "out"))
    ids = {split: {(r["article_id"], r["lang"]) for r in ds} for split, ds in dsd.items()}
    assert [len(ids[s]) for s in ("train", "validation", "test")] == [18, 6, 6]
    for split, pairs in ids.items():
        article_ids = {a for a, _ in pairs}
        assert pairs == {(a, lang) for a in article_ids for lang in ("de", "en", "fr")}, split


@pytest.mark.integration
@pytest.mark.parametrize("max_articles", [1, 2])
def test_max_articles(tmp_path, tiny_encoder, max_articles, caplog):
    records = [
        {
            "article_id": f"a{k}",
            "lang": "en",
            "complex": ["Complex sentence here."],
            "simple": ["Simple one here."],
        }
        for k in range(3)
    ]
    path = write_jsonl(tmp_path / "x.jsonl", records)
    with caplog.at_level("INFO", logger="multimsd"):
        stats = run(
            base_cfg(
                tmp_path,
                tiny_encoder,
                data={"path": str(path), "languages": ["en"], "max_articles": max_articles},
            )
        )
    assert stats["per_language"]["en"]["article_pairs"] == max_articles
    assert (  # the log says what the limit left out (issue #49 item 7a)
        f"{max_articles} of 3 article pairs in 1 language(s): data.max_articles={max_articles} keeps the first "
        f"{max_articles} of 3 articles (a debug limit: debug=tiny sets it)"
    ) in caplog.messages


def test_the_input_line_counts_articles_and_their_pairs_and_says_what_a_limit_left_out():
    from multimsd.alignment.stage import first_articles, input_line
    from multimsd.io import ArticlePair

    read = [ArticlePair(a, lang, "c", "s") for a in ("d", "b", "c", "a") for lang in ("en", "ja")]
    kept = first_articles(read, 3)
    assert (
        sorted({p.article_id for p in kept}) == ["a", "b", "c"] and len(kept) == 6
    )  # every language of each
    assert input_line(read, kept, 3) == (
        "6 of 8 article pairs in 2 language(s): data.max_articles=3 keeps the first 3 of 4 articles "
        "(a debug limit: debug=tiny sets it)"
    )
    assert first_articles(read, None) == read == first_articles(read, 4)
    assert input_line(read, read, 4) == "8 article pairs in 2 language(s)"  # a limit that left nothing out

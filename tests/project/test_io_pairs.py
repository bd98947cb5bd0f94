"""The one reader of sentence-pair data (multimsd.io.load_pair_records): JSONL, TSV, saved datasets, Hub ids."""

import json

import datasets
import pytest

from multimsd.errors import MultimsdError
from multimsd.io import load_pair_records, looks_like_hub_id, read_tsv

ROWS = [
    {"complex": 'He said "stop".', "simple": "Stop.", "lang": "en", "article_id": "a"},
    {"complex": "Zweiter Satz.", "simple": "Satz.", "lang": "de", "article_id": "b"},
]


def test_jsonl_and_tsv_give_the_same_rows(tmp_path):
    j = tmp_path / "pairs.jsonl"
    j.write_text("\n".join(json.dumps(r) for r in ROWS) + "\n\n", encoding="utf-8")
    t = tmp_path / "pairs.tsv"
    cols = list(ROWS[0])
    t.write_text(
        "\t".join(cols) + "\r\n" + "".join("\t".join(r[c] for c in cols) + "\r\n" for r in ROWS),
        encoding="utf-8",
    )
    assert load_pair_records(j) == {None: ROWS}
    # Quotes are ordinary characters, \r\n endings are accepted.
    assert load_pair_records(t) == {None: ROWS}


def test_saved_dataset_dict_keeps_splits_and_plain_dataset_has_none(tmp_path):
    dsd = datasets.DatasetDict(
        {"train": datasets.Dataset.from_list(ROWS[:1]), "test": datasets.Dataset.from_list(ROWS[1:])}
    )
    dsd.save_to_disk(str(tmp_path / "dsd"))
    assert load_pair_records(tmp_path / "dsd") == {"train": ROWS[:1], "test": ROWS[1:]}
    datasets.Dataset.from_list(ROWS).save_to_disk(str(tmp_path / "ds"))
    assert load_pair_records(tmp_path / "ds") == {None: ROWS}


def test_tsv_row_with_a_stray_tab_names_its_line(tmp_path):
    t = tmp_path / "bad.tsv"
    t.write_text("complex\tsimple\tlang\na\tb\ten\nc\twith\ttab\ten\n", encoding="utf-8")
    with pytest.raises(MultimsdError, match=r"bad.tsv:3: 4 tab-separated fields, the header has 3"):
        read_tsv(t)


def test_bad_inputs_are_one_line_errors(tmp_path):
    with pytest.raises(MultimsdError, match="sentence pairs not found"):
        load_pair_records(tmp_path / "missing.jsonl")
    (tmp_path / "latin1.tsv").write_bytes("complex\tsimple\ncaf\xe9\tx\n".encode("latin-1"))
    with pytest.raises(MultimsdError, match="not valid UTF-8"):
        load_pair_records(tmp_path / "latin1.tsv")
    (tmp_path / "empty.tsv").write_text("\n", encoding="utf-8")
    with pytest.raises(MultimsdError, match="empty file"):
        load_pair_records(tmp_path / "empty.tsv")
    (tmp_path / "notds").mkdir()
    with pytest.raises(MultimsdError, match="not a dataset saved with save_to_disk"):
        load_pair_records(tmp_path / "notds")


def test_hub_ids_offline_fail_in_one_line(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert looks_like_hub_id("owner/name") and not looks_like_hub_id("./owner/name")
    assert not looks_like_hub_id("data/pairs.jsonl")

    def offline(*a, **k):
        raise ConnectionError("offline")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(MultimsdError, match="Hub is unreachable .ConnectionError."):
        load_pair_records("owner/name", what="training data")

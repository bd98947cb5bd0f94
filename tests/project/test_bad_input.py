"""Bad input: one clear MultimsdError, nothing written, earlier output intact."""

import json

import pytest

from multimsd.alignment.stage import run
from multimsd.errors import MultimsdError

GOOD = {
    "article_id": "a1",
    "lang": "en",
    "complex": ["A complex sentence here."],
    "simple": ["A simple one here."],
}


def cfg(tmp_path, **over):
    c = {
        "data": {"path": str(tmp_path / "in.jsonl")},
        "output": {"dir": str(tmp_path / "out")},
        "cache_dir": str(tmp_path / "cache"),
    }
    for k, v in over.items():
        sect, key = k.split("__")
        c.setdefault(sect, {})[key] = v
    return c


def write(tmp_path, text: bytes | str):
    p = tmp_path / "in.jsonl"
    p.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return p


def line(**over):
    return json.dumps({**GOOD, **over}, ensure_ascii=False)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (line() + "\n{not json\n", r"in\.jsonl:2: malformed JSON"),
        (line() + "\n" + line(lang="xx"), r":2: unknown language code 'xx'"),
        (line(simple=[]), r":1 \(article 'a1', en\): empty simple side"),
        (line(complex="   "), r"empty complex side"),
        (line(simple=None), r"missing field\(s\) simple"),
        (json.dumps({"article_id": "a1", "lang": "en"}), r"missing field\(s\) complex, simple"),
        (line(complex=[1, 2]), r"complex must be a string or a list of strings"),
        ("[1, 2]", r"expected a JSON object"),
        ("\n\n", r"no records"),
        (line() + "\n" + line(), r"article 'a1' \(en\) appears twice"),
        (
            line().encode() + b"\n" + line(article_id="b\xff").encode("utf-8").replace(b"b", b"b\xff", 1),
            r":2: not valid UTF-8",
        ),
    ],
)
def test_bad_jsonl(tmp_path, content, message):
    write(tmp_path, content)
    with pytest.raises(MultimsdError, match=message):
        run(cfg(tmp_path))
    assert not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out")] == []


def test_missing_file(tmp_path):
    with pytest.raises(MultimsdError, match="input file not found"):
        run(cfg(tmp_path))


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"aligner__threshold": 1.5}, r"outside \[-1, 1\]"),
        ({"aligner__threshold": -1.01}, r"outside \[-1, 1\]"),
        ({"aligner__method": "greedy"}, "unknown aligner method"),
        ({"data__languages": ["en", "klingon"]}, "unknown language code"),
        ({"data__languages": ["de"]}, "no article pairs in languages de"),
        ({"mode": "train"}, "mode="),
        ({"output__push_to_hub": True}, "needs output.hub_repo_id"),
        ({"aligner__method": "margin", "aligner__margin_k": 0}, "margin_k=0: must be >= 1"),
        # an option of another aligner: not in the options of symmetric (aligner=margin has it)
        ({"aligner__margin_k": 4}, "margin_k"),
    ],
)
def test_bad_options(tmp_path, over, message):
    write(tmp_path, line())
    c = cfg(tmp_path)
    for k, v in over.items():
        if "__" in k:
            sect, key = k.split("__")
            c.setdefault(sect, {})[key] = v
        else:
            c[k] = v
    with pytest.raises(MultimsdError, match=message):
        run(c)
    assert not (tmp_path / "out").exists()


def test_unknown_embedder_keeps_earlier_output(tmp_path):
    write(tmp_path, line())
    out = tmp_path / "out"
    out.mkdir()
    (out / "dataset_dict.json").write_text('{"splits": []}')  # an earlier good output
    c = cfg(tmp_path, embedder__model=str(tmp_path / "no-such-model"), embedder__name="nope")
    with pytest.raises(MultimsdError, match="cannot load embedder model"):
        run(c)
    assert (out / "dataset_dict.json").read_text() == '{"splits": []}'
    # Checked at start-up: not even the embedding cache was created.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "out"]


def test_refuses_to_overwrite_foreign_directory(tmp_path):
    write(tmp_path, line())
    out = tmp_path / "out"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    with pytest.raises(MultimsdError, match="refusing to overwrite"):
        run(cfg(tmp_path))
    assert (out / "thesis.tex").read_text() == "precious"


def test_saved_dataset_without_the_split_names_the_option(tmp_path):
    import datasets

    from multimsd.io import load_saved_split

    datasets.DatasetDict({"train": datasets.Dataset.from_dict({"x": [1, 2]})}).save_to_disk(
        str(tmp_path / "d")
    )
    assert load_saved_split(tmp_path / "d", "train")["x"] == [1, 2]
    with pytest.raises(MultimsdError, match=r"no split 'test' \(has train\); set refs.split$"):
        load_saved_split(tmp_path / "d", "test", "; set refs.split")
    with pytest.raises(MultimsdError, match="not a dataset saved with save_to_disk"):
        load_saved_split(tmp_path, "test")

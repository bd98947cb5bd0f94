"""``align.py aligner=nm`` through the real stage: n:m rows in the dataset, block embeddings cached and reused."""

from __future__ import annotations

import json

import datasets
import pytest

from multimsd.alignment.aligners.nm import spans
from multimsd.alignment.stage import run, to_config

# Each complex sentence is, word for word, two simple sentences joined by a space, so the 1:2 block's text is
# the complex sentence's own text (cosine 1 with any encoder) and the programme must take it.
SIMPLE = [
    ["The heart pumps blood.", "It has four chambers."],
    ["Aspirin thins the blood.", "Take it with food."],
    ["Sleep helps the brain.", "Adults need eight hours."],
]


def _corpus(path):
    with open(path, "w", encoding="utf-8") as f:
        for k, simple in enumerate(SIMPLE):
            rec = {"article_id": f"a{k}", "lang": "en", "complex": [" ".join(simple)], "simple": simple}
            f.write(json.dumps(rec) + "\n")


def _cfg(tmp_path, tiny_encoder, theta: float) -> dict:
    return {
        "data": {"path": str(tmp_path / "corpus.jsonl"), "languages": ["en"]},
        "embedder": {"name": "tiny", "model": str(tiny_encoder), "backend": "transformers", "batch_size": 4},
        # penalty 0: the 1:2 block (cosine 1) then beats either simple sentence alone under either score.
        "aligner": {
            "method": "nm",
            "threshold": theta,
            "nm": {"max_complex": 2, "max_simple": 4, "penalty": 0.0},
        },
        "filters": {"drop_identical": False},  # the sides are identical texts by construction
        "cache_dir": str(tmp_path / "cache"),
        "output": {"dir": str(tmp_path / f"out-{theta}")},
    }


@pytest.mark.integration
def test_nm_stage_writes_member_lists_and_reuses_block_embeddings(tmp_path, tiny_encoder):
    _corpus(tmp_path / "corpus.jsonl")
    stats = run(to_config(_cfg(tmp_path, tiny_encoder, -2.0)))  # θ at the bottom of the margin range
    # Every block text was encoded once: per article 1 complex block, and the simple blocks s0, s1, "s0 s1" —
    # but "s0 s1" is the complex sentence's text with the same (empty) prefix, so it is encoded only once.
    blocks = sum(len(spans(1, 2)) + len(spans(2, 4)) for _ in SIMPLE)
    assert stats["sentences_encoded"] == blocks - len(SIMPLE)
    dsd = datasets.load_from_disk(str(tmp_path / "out--2.0"))
    rows = [r for ds in dsd.values() for r in ds.to_list()]
    assert len(rows) == len(SIMPLE)
    for r in rows:
        assert r["complex_members"] == [0] and r["simple_members"] == [0, 1]
        assert (r["complex_idx"], r["simple_idx"]) == (0, 0)  # the first members, as 1:1 readers expect
        simple = SIMPLE[int(r["article_id"][1])]
        assert r["simple"] == " ".join(simple) == r["complex"]
        assert r["cosine"] == pytest.approx(1.0, abs=1e-5)
        assert r["score"] < r["cosine"]  # θ applies to the margin: the cosine minus the article's background
    # Another θ: nothing is encoded again, and θ only filters the same candidates by their margin.
    theta = sorted(r["score"] for r in rows)[1] - 1e-6  # the dataset stores float32 scores
    again = run(to_config(_cfg(tmp_path, tiny_encoder, theta)))
    assert again["sentences_encoded"] == 0
    assert again["total_sentence_pairs"] == sum(r["score"] >= theta for r in rows) == 2


@pytest.mark.parametrize("mode", ["align", "gold"])
def test_bad_nm_option_is_refused_before_any_work(tmp_path, monkeypatch, mode):
    # Checked at start-up (the aligner's check_options), so nothing is segmented, encoded or written.
    import multimsd.alignment.stage as stage
    from multimsd.errors import MultimsdError

    def no_work(*args, **kwargs):
        raise AssertionError("the stage started working before checking aligner.nm")

    import multimsd.alignment.goldmode as goldmode

    monkeypatch.setattr(stage, "segment_pairs", no_work)  # align mode's first work
    monkeypatch.setattr(goldmode, "load_gold_docs", no_work)  # gold mode's first work
    cfg = {
        "mode": mode,
        "aligner": {"method": "nm", "threshold": 0.0, "nm": {"score": "ratio"}},
        "gold": {"methods": ["symmetric", "nm"], "report_dir": str(tmp_path / "gold")},
        "output": {"dir": str(tmp_path / "out")},
    }
    with pytest.raises(MultimsdError, match=r"aligner.nm.score='ratio': choose margin, cosine"):
        run(to_config(cfg))
    assert not (tmp_path / "out").exists() and not (tmp_path / "gold").exists()

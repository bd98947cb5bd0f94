"""Parity of multimsd's SARI and BLEU with EASSE v0.2.4 on the shared easse-parity pack.

Every row of ``expected_sari.tsv`` (SARI and its add/keep/delete parts) and of ``expected_bleu.tsv``,
computed by EASSE itself, must be reproduced within 1e-4 (the files carry 6 decimals).
"""

from __future__ import annotations

import csv
from functools import cache
from pathlib import Path

import pytest

from multimsd.metrics import corpus_bleu, corpus_sari, corpus_sari_operation_scores

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "easse-parity"

if not (DATA / "expected_sari.tsv").is_file() or not (DATA / "expected_bleu.tsv").is_file():
    pytest.skip(f"EASSE parity pack not found at {DATA}", allow_module_level=True)

TOL = 1e-4

# test_set -> (source file, reference files, legacy); see the pack's README.
TEST_SETS = {
    "turkcorpus_test": (
        "test_sets/turkcorpus/test.truecase.detok.orig",
        [f"test_sets/turkcorpus/test.truecase.detok.simp.{i}" for i in range(8)],
        False,
    ),
    "asset_test": (
        "test_sets/asset/asset.test.orig",
        [f"test_sets/asset/asset.test.simp.{i}" for i in range(10)],
        False,
    ),
    "turkcorpus_test_legacy": (
        "test_sets/turkcorpus/legacy/test.8turkers.tok.norm",
        [f"test_sets/turkcorpus/legacy/test.8turkers.tok.turk.{i}" for i in range(8)],
        True,
    ),
}

SARI_SETTINGS = {
    "default(lowercase=True,tokenizer=13a,legacy=False)": False,
    "legacy=True(tokenizer=13a)": True,
}


def _read_tsv(name: str) -> list[dict[str, str]]:
    with open(DATA / name, encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


@cache
def read_lines(rel_path: str) -> tuple[str, ...]:
    """One sentence a line, ``line.strip()`` (as EASSE reads files)."""
    with open(DATA / rel_path, encoding="utf-8") as f:
        return tuple(line.strip() for line in f)


SARI_ROWS = _read_tsv("expected_sari.tsv")
BLEU_ROWS = _read_tsv("expected_bleu.tsv")
FIRST_SARI_ROW = {}
for _row in SARI_ROWS:
    FIRST_SARI_ROW.setdefault(_row["test_set"], _row)


def test_pack_is_complete():
    assert len(SARI_ROWS) == 156
    assert len(BLEU_ROWS) == 32
    assert {r["test_set"] for r in SARI_ROWS} == set(TEST_SETS)


@pytest.mark.parametrize(
    "row", SARI_ROWS, ids=[f"{r['test_set']}:{r['system_output'].split('/', 2)[-1]}" for r in SARI_ROWS]
)
def test_sari_matches_easse(row):
    orig_path, ref_paths, legacy = TEST_SETS[row["test_set"]]
    assert SARI_SETTINGS[row["settings"]] == legacy
    orig = list(read_lines(orig_path))
    sys_out = list(read_lines(row["system_output"]))
    refs = [list(read_lines(p)) for p in ref_paths]

    add, keep, dele = corpus_sari_operation_scores(orig, sys_out, refs, legacy=legacy)
    assert (add + keep + dele) / 3 == pytest.approx(float(row["SARI"]), abs=TOL)
    assert add == pytest.approx(float(row["add"]), abs=TOL)
    assert keep == pytest.approx(float(row["keep"]), abs=TOL)
    assert dele == pytest.approx(float(row["del"]), abs=TOL)
    if (
        row is FIRST_SARI_ROW[row["test_set"]]
    ):  # corpus_sari itself, once per test set (it costs as much again)
        sari = corpus_sari(orig, sys_out, refs, legacy=legacy)
        assert sari == pytest.approx(float(row["SARI"]), abs=TOL)
        assert sari == pytest.approx((add + keep + dele) / 3, abs=1e-9)


def _bleu_settings(settings: str) -> dict[str, str]:
    return dict(item.split("=", 1) for item in settings.split(","))


@pytest.mark.parametrize(
    "row",
    BLEU_ROWS,
    ids=[
        f"{r['test_set']}:{r['system_output'].split('/', 2)[-1]}:{r['settings'].split(',')[0]}"
        for r in BLEU_ROWS
    ],
)
def test_bleu_matches_easse(row):
    settings = _bleu_settings(row["settings"])
    assert settings["tokenizer"] == "13a" and settings["smooth"] == "exp" and settings["force"] == "True"
    _, ref_paths, _ = TEST_SETS[row["test_set"]]
    sys_out = list(read_lines(row["system_output"]))
    refs = [list(read_lines(p)) for p in ref_paths]

    score = corpus_bleu(
        sys_out,
        refs,
        lowercase=settings["lowercase"] == "True",
        tokenizer=settings["tokenizer"],
        smooth_method=settings["smooth"],
    )
    assert score.score == pytest.approx(float(row["BLEU"]), abs=TOL)

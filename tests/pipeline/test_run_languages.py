"""`multimsd run` trains and evaluates on the languages it aligned unless told otherwise (issue #40): the
README's own-data recipe in Spanish goes through; a language the user set that the run does not align is one
line naming both keys, before anything is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from multimsd.errors import MultimsdError
from multimsd.paths import conf_dir, sample_data_dir
from multimsd.pipeline.run import compose, plan

pytestmark = pytest.mark.integration  # every test composes the run's and its stages' configs (Hydra)


def trained_languages(tmp_path: Path, *overrides: str, align=(), train=()) -> dict[str, list[str]]:
    cfg = compose("run", ["debug=tiny", *overrides], config_dir=conf_dir() / "pipeline")
    cfg.align, cfg.train = [*cfg.align, *align], [*cfg.train, *train]
    stages = plan(cfg, tmp_path / "run")
    return {s.name.split("/")[1]: list(s.config.data.languages) for s in stages if s.kind == "train"}


def test_the_default_run_still_trains_english_out_of_the_aligned_languages(tmp_path):
    # debug=tiny aligns en + ja; train.py's default [en] is among them, so nothing changes
    assert set(map(tuple, trained_languages(tmp_path).values())) == {("en",)}


def test_every_system_follows_a_spanish_alignment(tmp_path):
    got = trained_languages(tmp_path, align=["data.languages=[es]"])
    assert got == {"zero_shot": ["es"], "finetuned_theta1": ["es"], "finetuned_theta4": ["es"]}


def test_a_multilingual_training_follows_every_aligned_language(tmp_path):
    got = trained_languages(tmp_path, align=["data.languages=[es,fr]"], train=["data.mode=multi"])
    assert set(map(tuple, got.values())) == {("es", "fr")}


def test_a_language_the_user_set_that_is_not_aligned_is_one_line_naming_both_keys(tmp_path):
    with pytest.raises(MultimsdError) as e:
        trained_languages(tmp_path, align=["data.languages=[es]"], train=["data.languages=[en]"])
    assert str(e.value) == (
        "system 'zero_shot' trains on train.data.languages=[en], but the run's corpus is "
        "align.data.languages=[es] (no en): set one to match the other"
    )
    assert not (tmp_path / "run").exists()


def test_one_language_training_with_several_aligned_asks_which(tmp_path):
    with pytest.raises(MultimsdError, match=r"train.data.mode=mono.*train.data.languages=\[es\]"):
        trained_languages(tmp_path, align=["data.languages=[es,fr]"])


def test_an_aligned_corpus_follows_pairs_lang(tmp_path):
    corpus = tmp_path / "pairs.tsv"
    rows = [
        f"d{i}\tLa hipertensión arterial es frecuente {i}.\tLa tensión alta es común {i}." for i in range(6)
    ]
    corpus.write_text("article_id\tcomplex\tsimple\n" + "\n".join(rows) + "\n", encoding="utf-8")
    got = trained_languages(tmp_path, f"pairs.path={corpus}", "pairs.lang=es")
    assert set(map(tuple, got.values())) == {("es",)}


@pytest.mark.e2e
def test_the_readme_recipe_in_spanish_goes_through(tmp_path):
    """docs/own-data.md's recipe, as a newcomer writes it, with Spanish article pairs: rc 0, every system trained
    and evaluated on Spanish (it stopped with "no training pairs for language(s) en" before issue #40)."""
    sample = sample_data_dir() / "articles.jsonl"
    spanish = [ln for ln in sample.read_text(encoding="utf-8").splitlines() if '"lang": "es"' in ln][:4]
    (tmp_path / "es_pairs.jsonl").write_text("\n".join(spanish) + "\n", encoding="utf-8")
    run = tmp_path / "es_tiny"
    args = ["debug=tiny", f"output.dir={run}", "align.data.path=es_pairs.jsonl", "align.data.languages=[es]"]
    proc = subprocess.run(
        [sys.executable, "-m", "multimsd", "run", *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for system in ("zero_shot", "finetuned_theta1", "finetuned_theta4"):
        if system != "zero_shot":  # prompting writes no train_config.json
            config = json.loads((run / "systems" / system / "train_config.json").read_text())
            assert config["data"]["languages"] == ["es"], system
        results = json.loads((run / "systems" / system / "all_results.json").read_text())
        assert list(results["test"]["per_language"]) == ["es"], system
    evaluation = json.loads((run / "evaluation" / "results.json").read_text())
    assert evaluation["languages"] == ["es"] and list(evaluation["per_language"]) == ["es"]

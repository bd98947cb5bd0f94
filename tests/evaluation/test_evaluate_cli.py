"""evaluate.py: the real CLI (few subprocesses: each pays ~8 s of imports here), the 🤗 `evaluate` name clash,
and the evaluation stage's input handling in-process (multimsd.evaluation.stage.run)."""

import json
import os
import subprocess
import sys

import pytest

from multimsd.errors import MultimsdError
from multimsd.evaluation.stage import parse_select_by, run
from multimsd.metrics import corpus_bleu, corpus_sari

ROWS = [
    ("en", "Patients with hypertension should reduce their sodium intake considerably.",
     "People with high blood pressure should eat less salt."),
    ("en", "Deep vein thrombosis is a blood clot in a deep vein, usually in the leg.",
     "A blood clot in a leg vein is called DVT."),
    ("en", "Asthma is a chronic inflammatory disease of the airways.",
     "Asthma is a long-term illness of the airways."),
    ("ja", "高血圧の患者はナトリウムの摂取量を大幅に減らすべきです。", "血圧が高い人は塩を減らしましょう。"),
    ("ja", "深部静脈血栓症は、通常は脚の深部静脈にできる血栓です。", "足の静脈に血のかたまりができる病気です。"),
    ("ja", "喘息は気道の慢性炎症性疾患です。", "ぜんそくは気道の長く続く病気です。"),
]  # fmt: skip
DE_ROWS = [
    ("de", "Patienten mit Hypertonie sollten ihre Natriumzufuhr deutlich reduzieren.",
     "Menschen mit hohem Blutdruck sollten weniger Salz essen."),
    ("de", "Asthma ist eine chronisch entzündliche Erkrankung der Atemwege.",
     "Asthma ist eine lange Krankheit der Atemwege."),
]  # fmt: skip


def write_refs(path, rows, multi=False):
    with open(path, "w", encoding="utf-8") as f:
        for lang, c, s in rows:
            simple = [s, s.replace(".", "!")] if multi else s
            f.write(json.dumps({"complex": c, "simple": simple, "lang": lang}, ensure_ascii=False) + "\n")
    return path


def write_lines(path, lines):
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("eval")
    return {
        "dir": d,
        "refs": write_refs(d / "refs.jsonl", ROWS),
        "ref_sys": write_lines(d / "ref_sys.txt", [s for _, _, s in ROWS]),  # the references themselves
        "short": write_lines(d / "short.txt", [s for _, _, s in ROWS][:5]),
    }


def cli(repo_root, *args, env=None, cwd=None):
    return subprocess.run(
        [sys.executable, str(repo_root / "evaluate.py"), *args],
        cwd=cwd or repo_root,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **(env or {})},
    )


# ------------------------------------------------------------------------------------------- the CLI, end to end
@pytest.fixture(scope="module")
def cli_run(files, repo_root):
    out = files["dir"] / "out"
    proc = cli(
        repo_root, f"refs.path={files['refs']}", f"systems.ref={files['ref_sys']}", f"output.dir={out}"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


@pytest.mark.e2e
def test_cli_writes_results_table_and_plot(cli_run, files):
    out, proc = cli_run
    assert "## SARI" in proc.stdout and "## BLEU" in proc.stdout
    assert "| system | en | ja | avg |" in proc.stdout
    assert proc.stdout.count("| identity |") >= 3 and "| ref |" in proc.stdout
    assert f"results written to {out.resolve()}" in proc.stdout
    assert sorted(p.name for p in out.iterdir()) == [
        "evaluate_config.yaml",
        "results.json",
        "scores.png",
        "table.md",
    ]
    assert (out / "table.md").read_text(encoding="utf-8") in proc.stdout
    assert (out / "scores.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert not [p for p in files["dir"].iterdir() if p.name.startswith(".out")]  # no temp dirs left

    r = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for key in (
        "settings",
        "references",
        "languages",
        "tokenizers",
        "per_language",
        "systems",
        "pooled",
        "ranking",
    ):
        assert key in r, key
    assert r["languages"] == ["en", "ja"]
    assert r["tokenizers"] == {"en": "13a", "ja": "ja-mecab"}
    assert r["settings"]["select_by"] == "mean(sari,bleu)"
    ja = r["per_language"]["ja"]
    assert (
        ja["signatures"]["bleu"].startswith("nrefs:1|case:lc|") and "tok:ja-mecab" in ja["signatures"]["bleu"]
    )
    assert "tok:ja-mecab" in ja["signatures"]["ter"] and ja["signatures"]["chrf"].startswith("nrefs:1")
    assert ja["meteor_mode"] == "exact" and ja["fkgl_source"] is None
    assert ja["terms_dictionary"]["path"].endswith("ja.txt")
    for name in ("identity", "ref"):
        for lang, tok in (("en", "13a"), ("ja", "ja-mecab")):
            res = r["systems"][name][lang]
            assert res["tokenizer"] == tok  # written into every result
            keys = {
                "sari",
                "sari_add",
                "sari_keep",
                "sari_delete",
                "bleu",
                "ter",
                "chrf",
                "meteor",
                "meteor_mode",
            }
            assert keys <= set(res) and {"fkgl", "quality", "term_types"} <= set(res)
    # en and ja use different tokenizers: SARI/BLEU are not pooled, chrF is.
    assert "sari" not in r["systems"]["ref"]["all"] and "chrf" in r["systems"]["ref"]["all"]
    assert "different tokenizers" in r["pooled"]["skipped"]["sari"]
    # identity = sources: numbers are the library's
    src = [c for lang, c, _ in ROWS if lang == "en"]
    ref = [s for lang, _, s in ROWS if lang == "en"]
    assert r["systems"]["identity"]["en"]["sari"] == pytest.approx(corpus_sari(src, src, [ref]))
    assert r["systems"]["identity"]["en"]["bleu"] == pytest.approx(
        corpus_bleu(src, [ref], lowercase=True).score
    )
    assert r["systems"]["identity"]["en"]["quality"]["exact_copies"] == 1.0


@pytest.mark.integration
def test_cli_select_by_ranks_references_first(cli_run):
    out, proc = cli_run
    rk = json.loads((out / "results.json").read_text(encoding="utf-8"))["ranking"]
    assert rk["metrics"] == ["sari", "bleu"]
    assert rk["best"] == {"en": "ref", "ja": "ref", "overall": "ref"}
    assert [e["system"] for e in rk["overall"]] == ["ref", "identity"]
    assert rk["per_language"]["en"][0]["score"] == pytest.approx(100.0)
    assert "overall (mean over languages): ref > identity" in proc.stdout


def test_cli_confidence_intervals(cli_run):
    out, proc = cli_run
    r = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert r["bootstrap"]["samples"] == 1000 and r["bootstrap"]["method"] == "percentile, sentences resampled"
    for name in ("identity", "ref"):
        for lang in ("en", "ja"):
            res = r["systems"][name][lang]
            for m in ("sari", "bleu"):
                lo, hi = res["ci"][m]
                assert lo - 1e-9 <= res[m] <= hi + 1e-9
        assert r["systems"][name]["ja"]["ci"]["fkgl"] is None  # no FKGL for Japanese
    keys = {
        "a",
        "b",
        "lang",
        "metric",
        "a_score",
        "b_score",
        "diff",
        "ci",
        "p_value",
        "alpha",
        "n_sentences",
        "resamples",
        "separable",
    }
    assert r["comparisons"] and all(set(c) == keys for c in r["comparisons"])
    assert {(c["a"], c["b"], c["lang"]) for c in r["comparisons"]} == {
        ("identity", "ref", g) for g in ("en", "ja")
    }
    assert "## Paired bootstrap comparisons" in proc.stdout


@pytest.mark.integration
def test_cli_bad_bootstrap_option_is_one_line_and_writes_nothing(files, repo_root):
    out = files["dir"] / "out_bs"
    proc = cli(
        repo_root, f"refs.path={files['refs']}", "bootstrap.compare=[identity:nope]", f"output.dir={out}"
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "bootstrap.compare: 'identity:nope' names unknown system(s) nope" in errors[0]
    assert not out.exists()


@pytest.mark.integration
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("degenerate.max_shar=0.2", "degenerate.max_shar"),
        ("+degenerate.max_shar=0.2", "degenerate.max_shar"),
        ("degenerate.max_share=2", "degenerate.max_share=2.0: must lie between 0 and 1"),
        ("bootstrap.alpha=1", "bootstrap.alpha=1.0: must lie strictly between 0 and 1"),
    ],
)
def test_cli_bad_degenerate_or_alpha_option_is_one_line(files, repo_root, override, message):
    out = files["dir"] / "out_deg"
    proc = cli(repo_root, f"refs.path={files['refs']}", override, f"output.dir={out}")
    assert proc.returncode == 2, proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and message in errors[0], errors
    assert not out.exists()


@pytest.mark.integration
def test_cli_row_count_mismatch_is_one_line_and_writes_nothing(files, repo_root):
    out = files["dir"] / "out_bad"
    proc = cli(
        repo_root, f"refs.path={files['refs']}", f"systems.short={files['short']}", f"output.dir={out}"
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("error: "), proc.stderr
    assert (
        str(files["short"]) in errors[0] and "5 predictions" in errors[0] and "6 reference rows" in errors[0]
    )
    assert not out.exists()
    assert not [p for p in files["dir"].iterdir() if p.name.startswith(".out_bad")]


@pytest.mark.integration
def test_cli_typo_fails_at_start_up(files, repo_root):
    out = files["dir"] / "out_typo"
    proc = cli(repo_root, f"refs.path={files['refs']}", "refs.pth=x", f"output.dir={out}")
    assert proc.returncode != 0
    assert "refs.pth" in proc.stderr and "reference rows" not in proc.stdout
    assert not out.exists()


# ------------------------------------------------------------------------------------------- the name clash
@pytest.mark.e2e
def test_help_from_repo_root(repo_root):
    proc = cli(repo_root, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "multimsd evaluate — score text simplification systems" in proc.stdout
    assert "multimsd evaluate systems.mbart=" in proc.stdout and "select_by" in proc.stdout


CLASH = r"""
import importlib.util, json, os, runpy, sys
root = os.getcwd()
saved = list(sys.path)
# 1. run as a script (--help exits early): the repo root must leave the front of sys.path
sys.argv = ["evaluate.py", "--help"]
try:
    runpy.run_path(os.path.join(root, "evaluate.py"), run_name="__main__")
except SystemExit:
    pass
script_mode = {"front": sys.path[0], "spec": importlib.util.find_spec("evaluate").origin}
# 2. `import evaluate` with the repo root first on sys.path: the script module hands over to 🤗 evaluate
sys.path[:] = saved
assert sys.path[0] in ("", root), sys.path[:2]
import evaluate
from multimsd.hf_metrics import metric_path
from multimsd.metrics import corpus_sari
sari = evaluate.load(metric_path("sari"))
src = ["About 95 species are currently accepted .", "The cat sat on the mat ."]
pred = ["About 95 you now get in .", "The cat sat ."]
refs = [["About 95 species are currently known .", "About 95 species are now accepted ."],
        ["The cat sat on a mat .", "A cat sat ."]]
print(json.dumps({
    "script_mode": script_mode,
    "file": evaluate.__file__,
    "load": repr(evaluate.load),
    "same": sys.modules["evaluate"] is evaluate,
    "metric": sari.compute(sources=src, predictions=pred, references=refs)["sari"],
    "library": corpus_sari(src, pred, [list(s) for s in zip(*refs)]),
}))
"""


@pytest.mark.e2e
def test_import_evaluate_from_repo_root_gets_hf_package(repo_root, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-c", CLASH],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_EVALUATE_OFFLINE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    mine = str(repo_root / "evaluate.py")
    assert os.path.realpath(r["script_mode"]["spec"]) != os.path.realpath(mine)
    assert os.path.realpath(r["script_mode"]["front"] or ".") != os.path.realpath(repo_root)
    assert os.path.realpath(r["file"]) != os.path.realpath(mine)
    assert r["file"].endswith(os.path.join("evaluate", "__init__.py"))
    assert r["load"].startswith("<function load") and r["same"]
    assert r["metric"] == pytest.approx(r["library"])
    assert (tmp_path / "hf" / "modules").is_dir()  # the metric script was cached under HF_HOME


# ------------------------------------------------------------------------------------------- the stage, in-process
def cfg(tmp_path, refs, **systems):
    return {
        "refs": {"path": str(refs)},
        "systems": {k: str(v) for k, v in systems.items()},
        "output": {"dir": str(tmp_path / "out"), "print_table": False, "plot": False},
    }


def test_formats_multi_refs_and_pooling_with_one_tokenizer(tmp_path):
    rows = [r for r in ROWS if r[0] == "en"] + DE_ROWS
    refs = write_refs(tmp_path / "refs.jsonl", rows, multi=True)
    per_lang = tmp_path / "per_lang"
    per_lang.mkdir()
    for lang in ("de", "en"):
        write_lines(per_lang / f"{lang}.txt", [s for g, _, s in rows if g == lang])
    jsonl = tmp_path / "preds.jsonl"
    jsonl.write_text(
        "".join(json.dumps({"prediction": c.lower(), "lang": g}) + "\n" for g, c, _ in rows), encoding="utf-8"
    )
    c = cfg(tmp_path, refs, dir=per_lang, jsonl=jsonl, identity="@identity")
    c.update(select_by="sari", terms={"enabled": False}, metrics={"include": ["sari", "bleu", "chrf"]})
    r = run(c)
    assert r["languages"] == ["de", "en"] and r["per_language"]["en"]["n_references"] == 2
    # identity and a lowercased copy score the same (lowercase=true); both lose to the references
    assert r["systems"]["jsonl"]["en"]["sari"] == pytest.approx(r["systems"]["identity"]["en"]["sari"])
    assert r["ranking"]["best"]["overall"] == "dir"
    # de and en share 13a: SARI is pooled over the concatenation
    src = [c for _, c, _ in rows]
    streams = [[s for _, _, s in rows], [s.replace(".", "!") for _, _, s in rows]]
    assert r["systems"]["identity"]["all"]["sari"] == pytest.approx(corpus_sari(src, src, streams))
    assert r["pooled"]["computed"] == ["sari", "bleu", "chrf"] and r["pooled"]["skipped"] == {}
    assert (tmp_path / "out" / "results.json").is_file() and not (tmp_path / "out" / "scores.png").exists()


@pytest.mark.parametrize(
    ("what", "message"),
    [
        ("non_utf8", r"bad\.txt:2: not valid UTF-8"),
        ("empty", r"bad\.txt: empty file"),
        ("missing", r"predictions not found: .*nope\.txt"),
        ("missing_lang_file", r"ja\.txt not found"),
        ("jsonl_lang", r"preds\.jsonl:4: lang 'en' but reference row 3 is 'ja'"),
        ("refs_lang", r"refs\.jsonl:2: unknown language 'xx'"),
        ("tokenizer", r"unknown tokenizer 'mecab'"),
        ("tokenizer_lang", r"tokenizer\.xx: unknown language"),
        ("baseline", r"unknown baseline"),
        ("select_by", r"select_by='mean\(sari,foo\)'"),
        ("default_refs", r"run `multimsd align` first"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(tmp_path, monkeypatch, what, message):
    refs = write_refs(tmp_path / "refs.jsonl", ROWS)
    bad = tmp_path / "bad.txt"
    c = cfg(tmp_path, refs, x=bad)
    if what == "non_utf8":
        bad.write_bytes(b"ok\nbad \xff byte\n" + b"x\n" * 4)
    elif what == "empty":
        bad.write_bytes(b"")
    elif what == "missing":
        c["systems"]["x"] = str(tmp_path / "nope.txt")
    elif what == "missing_lang_file":
        (tmp_path / "d").mkdir()
        write_lines(tmp_path / "d" / "en.txt", ["a", "b", "c"])
        c["systems"]["x"] = str(tmp_path / "d")
    elif what == "jsonl_lang":
        p = tmp_path / "preds.jsonl"
        p.write_text("".join(json.dumps({"prediction": "x", "lang": "en"}) + "\n" for _ in ROWS))
        c["systems"]["x"] = str(p)
    elif what == "refs_lang":
        write_refs(refs, [ROWS[0], ("xx", "a", "b")])
    elif what == "tokenizer":
        c["systems"] = {"x": "@identity"}
        c["tokenizer"] = {"ja": "mecab"}
    elif what == "tokenizer_lang":
        c["systems"] = {"x": "@identity"}
        c["tokenizer"] = {"xx": "13a"}
    elif what == "baseline":
        c["systems"] = {"x": "@oracle"}
    elif what == "select_by":
        c["select_by"] = "mean(sari,foo)"
    elif what == "default_refs":
        # align.yaml names aligner=symmetric: its schema is registered by importing the aligners, which the
        # commands do (their entry points sit above both stages); a stage never imports another stage.
        import multimsd.alignment.aligners  # noqa: F401

        monkeypatch.chdir(tmp_path)
        c["refs"]["path"] = None
        c["systems"] = {"x": "@identity"}
    with pytest.raises(MultimsdError, match=message) as exc:
        run(c)
    assert "\n" not in str(exc.value)
    assert not (tmp_path / "out").exists()


def test_parse_select_by():
    assert parse_select_by("mean(sari, bleu)") == ["sari", "bleu"]
    assert parse_select_by("BLEU") == ["bleu"]
    with pytest.raises(MultimsdError):
        parse_select_by("ter")

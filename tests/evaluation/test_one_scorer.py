"""One scorer: validation during training (``score_predictions``) reports the SARI / BLEU that evaluate.py
reports for the same outputs, and a metric registered by a plugin reaches evaluate.py's results and table."""

import json
import os

import pytest
from conftest import run_cli

from multimsd.evaluation.stage import run
from multimsd.metrics import corpus_bleu, default_tokenizer
from multimsd.training.predict import score_predictions

ROWS = [
    ("en", "Patients with hypertension should reduce their sodium intake considerably.",
     "People with high blood pressure should eat less salt."),
    ("en", "Deep vein thrombosis is a blood clot in a deep vein, usually in the leg.",
     "A blood clot in a leg vein is called DVT."),
    ("en", "Asthma is a chronic inflammatory disease of the airways.",
     "Asthma is a long-term illness of the airways."),
    ("de", "Patienten mit Hypertonie sollten ihre Natriumzufuhr deutlich reduzieren.",
     "Menschen mit hohem Blutdruck sollten weniger Salz essen."),
    ("de", "Asthma ist eine chronisch entzündliche Erkrankung der Atemwege.",
     "Asthma ist eine lange Krankheit der Atemwege."),
    ("ja", "高血圧の患者はナトリウムの摂取量を大幅に減らすべきです。", "血圧が高い人は塩を減らしましょう。"),
    ("ja", "深部静脈血栓症は、通常は脚の深部静脈にできる血栓です。", "足の静脈に血のかたまりができる病気です。"),
]  # fmt: skip

# Outputs whose case differs from the references: lowercased BLEU (evaluate.py's default) counts these words
# as matches, case-sensitive BLEU (the old validation scorer) does not.
PREDS = [
    "PEOPLE with HIGH blood pressure should eat less salt.",
    "A BLOOD clot in a leg vein is DVT.",
    "Asthma Is A Long-Term Illness of the airways.",
    "Menschen mit HOHEM Blutdruck sollten weniger Salz Essen.",
    "ASTHMA ist eine lange Krankheit.",
    "血圧が高い人は塩を減らしましょう。",
    "足の静脈に血のかたまりができます。",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("one_scorer")
    refs = d / "refs.jsonl"
    refs.write_text(
        "".join(
            json.dumps({"complex": c, "simple": s, "lang": g}, ensure_ascii=False) + "\n" for g, c, s in ROWS
        ),
        encoding="utf-8",
    )
    preds = d / "preds.txt"
    preds.write_text("".join(p + "\n" for p in PREDS), encoding="utf-8")
    return {"dir": d, "refs": refs, "preds": preds}


@pytest.mark.integration
def test_validation_scores_equal_evaluate_scores(files):
    rows = [{"lang": g, "complex": c, "simple": s} for g, c, s in ROWS]
    val = score_predictions(rows, PREDS)
    res = run(
        {
            "refs": {"path": str(files["refs"])},
            "systems": {"model": str(files["preds"])},  # evaluate.py's defaults otherwise
            "output": {"dir": str(files["dir"] / "eval"), "plot": False, "print_table": False},
        }
    )
    ev = res["systems"]["model"]
    langs = res["languages"]
    assert sorted(val["per_language"]) == sorted(langs) == ["de", "en", "ja"]
    for g in langs:
        assert val["per_language"][g]["sari"] == ev[g]["sari"], g
        assert val["per_language"][g]["bleu"] == ev[g]["bleu"], g
        ranked = {e["system"]: e["score"] for e in res["ranking"]["per_language"][g]}
        assert val["per_language"][g]["mean_sari_bleu"] == ranked["model"], g  # select_by mean(sari,bleu)
    # Over languages: the mean of the per-language scores (the `avg` column of table.md).
    sari = sum(ev[g]["sari"] for g in langs) / len(langs)
    bleu = sum(ev[g]["bleu"] for g in langs) / len(langs)
    assert (val["sari"], val["bleu"], val["mean_sari_bleu"]) == (sari, bleu, (sari + bleu) / 2)
    assert res["settings"]["metrics"]["lowercase"] is True

    # The old validation scorer (case-sensitive BLEU) would have disagreed with evaluate.py on these outputs.
    for g in ("en", "de"):
        idx = [k for k, r in enumerate(rows) if r["lang"] == g]
        cased = corpus_bleu(
            [PREDS[k] for k in idx], [[rows[k]["simple"] for k in idx]], tokenizer=default_tokenizer(g)
        ).score
        assert cased < ev[g]["bleu"], g


TOY_PLUGIN = '''\
"""A toy metric: mean length of the outputs in characters."""

from multimsd.metrics import register_metric


def mean_length(sources, outputs, references, *, lang, tokenizer, settings):
    return sum(len(o) for o in outputs) / len(outputs)


register_metric("toy", mean_length, rankable=True, pooling="weighted-mean")
'''


@pytest.mark.integration
def test_plugin_metric_reaches_results_and_table(files, python, repo_root, tmp_path):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "toy_metric.py").write_text(TOY_PLUGIN, encoding="utf-8")
    out = tmp_path / "eval"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(repo_root)])}
    proc = run_cli(
        python,
        repo_root,
        f"refs.path={files['refs']}",
        f"systems.model={files['preds']}",
        "plugins=[toy_metric]",
        "metrics.include=[sari,toy]",
        "select_by='mean(sari,toy)'",
        "terms.enabled=false",
        "output.plot=false",
        f"output.dir={out}",
        script="evaluate.py",
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    by_lang = {g: [p for (lang, _, _), p in zip(ROWS, PREDS) if lang == g] for g in ("de", "en", "ja")}
    for g, outs in by_lang.items():
        assert res["systems"]["model"][g]["toy"] == pytest.approx(sum(map(len, outs)) / len(outs))
    # Pooled as a sentence-weighted mean only where the tokenizers agree (not so for de/en + ja).
    assert res["pooled"]["skipped"]["toy"].startswith("languages use different tokenizers")
    table = (out / "table.md").read_text(encoding="utf-8")
    assert "| system | SARI | add | keep | del | toy |" in table
    assert f"{res['systems']['model']['en']['toy']:.2f}" in table
    assert res["ranking"]["metrics"] == ["sari", "toy"]


@pytest.mark.e2e
def test_train_cli_validation_scores_equal_evaluate(tmp_path, python, repo_root):
    # What train.py writes (all_results.json) for its validation outputs is what evaluate.py reports for
    # the predictions and references it writes next to them (a tiny LSTM, a few seconds on a CPU).
    out = tmp_path / "run"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(repo_root)}
    proc = run_cli(
        python,
        repo_root,
        "model=tiny_lstm",
        "debug=train_tiny",
        f"output_dir={out}",
        script="train.py",
        env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    trained = json.loads((out / "all_results.json").read_text(encoding="utf-8"))["validation"]
    pred_dir = out / "predictions" / "validation"
    res = run(
        {
            "refs": {"path": str(pred_dir / "references.jsonl")},
            "systems": {"model": str(pred_dir)},
            "output": {"dir": str(tmp_path / "eval"), "plot": False, "print_table": False},
        }
    )
    for g, scores in trained["per_language"].items():
        assert scores["sari"] == res["systems"]["model"][g]["sari"], g
        assert scores["bleu"] == res["systems"]["model"][g]["bleu"], g

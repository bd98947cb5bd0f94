"""One metric registration gives everything: a metric registered with its per-sentence statistics
(``register_metric(..., statistics=, from_totals=)``) gets results, tables, ``select_by``, bootstrap intervals,
paired comparisons and the run report's table with its interval; one registered without them is shown
without an interval. The toy plugin's interval is recomputed here by hand (its per-sentence statistic is the
output's length, so its corpus score is a mean), from the same seeded resampling.
"""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import run_cli

from multimsd.config import MetricsConfig
from multimsd.errors import MultimsdError
from multimsd.evaluation.stage import run
from multimsd.metrics import (
    METRICS,
    default_tokenizer,
    describe_metrics,
    interval_keys,
    reference_streams,
    register_metric,
    score_language,
)

TOY_PLUGIN = '''\
"""Two toy metrics: the mean output length in characters (with bootstrap statistics: per sentence its length
and 1) and the percentage of outputs that end with a full stop (without)."""

import numpy as np

from multimsd.metrics import register_metric


def mean_length(sources, outputs, references, *, lang, tokenizer, settings):
    return sum(len(o) for o in outputs) / len(outputs)


def length_statistics(sources, outputs, references, *, lang, tokenizer, settings):
    return np.array([[len(o), 1] for o in outputs], dtype=np.int64).reshape(len(outputs), 2)


def mean_from_totals(totals, *, lang, tokenizer, settings):
    t = np.asarray(totals, dtype=np.float64)
    return t[..., 0] / t[..., 1]


def full_stops(sources, outputs, references, *, lang, tokenizer, settings):
    return 100.0 * sum(o.rstrip().endswith(".") for o in outputs) / len(outputs)


register_metric(
    "toylen",
    mean_length,
    rankable=True,
    pooling="weighted-mean",
    statistics=length_statistics,
    from_totals=mean_from_totals,
)
register_metric("toydot", full_stops)
'''

ROWS = [
    ("en", "Patients with hypertension should reduce their sodium intake considerably.",
     "People with high blood pressure should eat less salt."),
    ("en", "Deep vein thrombosis is a blood clot in a deep vein, usually in the leg.",
     "A blood clot in a leg vein is called DVT."),
    ("en", "Asthma is a chronic inflammatory disease of the airways.",
     "Asthma is a long-term illness of the airways."),
    ("en", "Antibiotics are ineffective against viral infections such as the common cold.",
     "Antibiotics do not work against colds."),
    ("en", "Regular physical activity lowers the risk of cardiovascular disease.",
     "Exercise is good for your heart."),
    ("en", "Insulin regulates the concentration of glucose in the blood.",
     "Insulin controls blood sugar."),
    ("de", "Patienten mit Hypertonie sollten ihre Natriumzufuhr deutlich reduzieren.",
     "Menschen mit hohem Blutdruck sollten weniger Salz essen."),
    ("de", "Asthma ist eine chronisch entzündliche Erkrankung der Atemwege.",
     "Asthma ist eine lange Krankheit der Atemwege."),
    ("de", "Antibiotika wirken nicht gegen Viren.", "Antibiotika helfen nicht bei Erkältung."),
    ("de", "Regelmäßige Bewegung senkt das Risiko für Herzkrankheiten.", "Bewegung ist gut fürs Herz"),
]  # fmt: skip
PREDS = [
    "People with high blood pressure should eat less salt",
    "A blood clot in a leg vein.",
    "Asthma is a chronic disease of the airways.",
    "Antibiotics do not help against colds",
    "Exercise lowers the risk of heart disease.",
    "Insulin controls sugar in the blood.",
    "Menschen mit hohem Blutdruck sollten weniger Salz essen.",
    "Asthma ist eine Krankheit der Atemwege",
    "Antibiotika helfen nicht gegen Viren.",
    "Bewegung ist gut.",
]
SAMPLES, SEED = 300, 7
# What bootstrap.metrics accepted before the registry held the statistics (the removed BOOTSTRAP_METRICS)
BUILTIN_INTERVALS = ["sari", "sari_add", "sari_keep", "sari_delete", "bleu", "fkgl", "novelty"]


# ------------------------------------------------------------------------------------------- hand computation
def hand_percentile_mean(lengths: list[int], samples: int, seed: int, confidence: float = 0.95):
    """The percentile interval of the mean length, resampling the sentences as the stage does: one index
    matrix [samples, n] from numpy's PCG64(seed), sentences drawn with replacement."""
    idx = np.random.Generator(np.random.PCG64(seed)).integers(0, len(lengths), size=(samples, len(lengths)))
    means = np.asarray(lengths, dtype=np.float64)[idx].sum(axis=1) / len(lengths)
    alpha = (1 - confidence) / 2
    return means, [float(x) for x in np.percentile(means, [100 * alpha, 100 * (1 - alpha)])]


# ------------------------------------------------------------------------------------------- fixtures
@pytest.fixture
def restore_registry():
    """Metrics registered by a test are gone after it (the registry is process-wide)."""
    before = dict(METRICS)
    yield
    METRICS.clear()
    METRICS.update(before)
    sys.modules.pop("toy_metric", None)


@pytest.fixture
def toy_plugin(tmp_path, monkeypatch, restore_registry) -> Path:
    """The plugin file, imported in this process too (as ``plugins=[toy_metric]`` would)."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "toy_metric.py").write_text(TOY_PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(plugins))
    sys.modules.pop("toy_metric", None)
    importlib.import_module("toy_metric")
    return plugins


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    refs = tmp_path / "refs.jsonl"
    refs.write_text(
        "".join(
            json.dumps({"complex": c, "simple": s, "lang": g}, ensure_ascii=False) + "\n" for g, c, s in ROWS
        ),
        encoding="utf-8",
    )
    preds = tmp_path / "preds.txt"
    preds.write_text("".join(p + "\n" for p in PREDS), encoding="utf-8")
    return {"refs": refs, "preds": preds}


def lengths(lang: str, outputs: list[str]) -> list[int]:
    return [len(o) for (g, _, _), o in zip(ROWS, outputs) if g == lang]


SOURCES = [c for _, c, _ in ROWS]


# ------------------------------------------------------------------------------------------- the registry
@pytest.mark.integration
def test_identity_resample_gives_the_score_for_every_metric_with_statistics(toy_plugin):
    """For every registered metric with statistics (the built-ins and the toy): each of its interval keys'
    ``from_totals`` of the summed statistics (the identity resample) is the score it reports."""
    settings = MetricsConfig(include=[name for name, m in METRICS.items() if m.statistics is not None])
    checked = set()
    for lang in ("en", "de"):
        rows = [i for i, (g, _, _) in enumerate(ROWS) if g == lang]
        src = [ROWS[i][1] for i in rows]
        out = [PREDS[i] for i in rows]
        refs = reference_streams([[ROWS[i][2]] for i in rows], lang)
        tok = default_tokenizer(lang)
        scores = score_language(src, out, refs, lang=lang, tokenizer=tok, settings=settings)
        for name, metric in METRICS.items():
            if metric.statistics is None:
                assert metric.interval_keys == ()
                continue
            facts = {"lang": lang, "tokenizer": tok, "settings": settings}
            raw = metric.statistics(src, out, refs, **facts)
            if raw is None:  # undefined in this language: no score either
                assert all(scores[key] is None for key in metric.interval_keys), (name, lang)
                continue
            stats = np.asarray(raw)
            assert stats.shape[0] == len(rows)
            for key, from_totals in metric.from_totals.items():
                assert float(from_totals(stats.sum(0), **facts)) == pytest.approx(scores[key], abs=1e-9)
                # vectorised: a stack of totals gives a stack of scores
                assert np.shape(from_totals(np.stack([stats.sum(0)] * 3), **facts)) == (3,)
                checked.add(key)
    # safety: issue #39's flags; meaning: #47's similarity of output and source
    assert checked == {*BUILTIN_INTERVALS, "safety", "meaning", "toylen"}
    assert list(interval_keys()) == [*BUILTIN_INTERVALS, "safety", "meaning", "toylen"]  # registry order


def test_registry_describes_intervals_and_report(toy_plugin):
    d = describe_metrics(["sari", "ter", "novelty", "toylen", "toydot"])
    assert list(d) == ["sari", "ter", "novelty", "toylen", "toydot"]  # registry order
    assert d["sari"]["intervals"] == ["sari", "sari_add", "sari_keep", "sari_delete"]
    assert [c["title"] for c in d["sari"]["columns"]] == ["SARI", "SARI add", "SARI keep", "SARI delete"]
    assert d["ter"]["intervals"] == [] and d["ter"]["report"] is False
    assert d["novelty"]["higher_is_better"] is None and d["novelty"]["columns"][0]["scale"] == ["reference"]
    assert d["toylen"]["intervals"] == ["toylen"] and d["toylen"]["report"] is True
    assert d["toydot"]["intervals"] == [] and d["toydot"]["columns"][0]["title"] == "toydot"
    json.dumps(d)  # JSON as it is


def _score(sources, outputs, references, *, lang, tokenizer, settings):
    return 1.0


def _stats(sources, outputs, references, *, lang, tokenizer, settings):
    return np.ones((len(outputs), 1))


def _totals(totals, *, lang, tokenizer, settings):
    return np.asarray(totals)[..., 0]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"statistics": _stats}, "need both statistics= and from_totals="),
        ({"from_totals": _totals}, "need both statistics= and from_totals="),
        (
            {"statistics": _stats, "from_totals": {"sari": _totals}},
            "'sari' already has an interval for 'sari'",
        ),
        ({"statistics": _stats, "from_totals": {"Bad Key": _totals}}, "interval key 'Bad Key'"),
        ({"statistics": _stats, "from_totals": [_totals]}, "from_totals must be a function or a mapping"),
    ],
)
def test_bad_registration_is_one_line(restore_registry, options, message):
    with pytest.raises(MultimsdError, match=re.escape(message)) as e:
        register_metric("toybad", _score, **options)
    assert "\n" not in str(e.value) and "toybad" not in METRICS


# ------------------------------------------------------------------------------------------- the stage
def stage_cfg(files, out: Path, **over) -> dict:
    cfg = {
        "refs": {"path": str(files["refs"])},
        "systems": {"identity": "@identity", "model": str(files["preds"])},
        "metrics": {"include": ["sari", "toylen", "toydot"]},
        "select_by": "mean(sari,toylen)",
        "terms": {"enabled": False},
        "bootstrap": {"samples": SAMPLES, "seed": SEED, "metrics": ["sari", "toylen"]},
        "output": {"dir": str(out), "print_table": False, "plot": False},
    }
    cfg.update(over)
    return cfg


def test_plugin_metric_gets_intervals_and_comparisons_in_the_stage(toy_plugin, files, tmp_path):
    r = run(stage_cfg(files, tmp_path / "out"))
    saved = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert saved["bootstrap"]["metrics"] == ["sari", "toylen"]
    assert (
        saved["metrics"]["toylen"]["intervals"] == ["toylen"]
        and saved["metrics"]["toydot"]["intervals"] == []
    )
    resampled = {}
    for lang in ("de", "en"):
        for name, outputs in (("identity", SOURCES), ("model", PREDS)):
            res = saved["systems"][name][lang]
            lens = lengths(lang, outputs)
            assert res["toylen"] == pytest.approx(sum(lens) / len(lens))
            means, ci = hand_percentile_mean(lens, SAMPLES, SEED)
            resampled[name, lang] = means
            assert res["ci"]["toylen"] == pytest.approx(ci, abs=1e-9), (name, lang)
            assert "toydot" in res and "toydot" not in res["ci"]  # shown, without an interval
        # the paired comparison of the toy: the same resamples for both systems
        comp = next(c for c in saved["comparisons"] if c["lang"] == lang and c["metric"] == "toylen")
        assert (comp["a"], comp["b"]) == ("identity", "model")
        d = saved["systems"]["identity"][lang]["toylen"] - saved["systems"]["model"][lang]["toylen"]
        diffs = resampled["identity", lang] - resampled["model", lang]
        assert comp["diff"] == pytest.approx(d, abs=1e-9)
        # the one rule (multimsd.metrics.bootstrap.paired_from_resamples): the j-th smallest and largest d*,
        # j = ceil(0.05 * B / 2), and p = min(1, 2 min(#{d* <= 0}, #{d* >= 0}) / B)
        s, j = np.sort(diffs), int(np.ceil(0.05 * SAMPLES / 2))
        assert comp["ci"] == pytest.approx([s[j - 1], s[SAMPLES - j]], abs=1e-9)
        tail = min(np.sum(diffs <= 0), np.sum(diffs >= 0))
        assert comp["p_value"] == pytest.approx(min(1.0, 2 * tail / SAMPLES))
    assert {c["metric"] for c in saved["comparisons"]} == {"sari", "toylen"}
    # select_by and the table: the interval next to the toy's number, none next to the other's
    assert saved["ranking"]["metrics"] == ["sari", "toylen"] and r["ranking"] == saved["ranking"]
    table = (tmp_path / "out" / "table.md").read_text(encoding="utf-8")
    en = saved["systems"]["model"]["en"]
    lo, hi = en["ci"]["toylen"]
    assert f"| {en['toylen']:.2f} [{lo:.1f}, {hi:.1f}] | {en['toydot']:.2f} |" in table


def test_bootstrap_of_a_metric_without_statistics_is_refused(toy_plugin, files, tmp_path):
    cfg = stage_cfg(files, tmp_path / "out")
    cfg["bootstrap"]["metrics"] = ["sari", "toydot"]
    with pytest.raises(
        MultimsdError, match=r"bootstrap\.metrics: no bootstrap for toydot \(supported: .*toylen\)"
    ):
        run(cfg)
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------- the CLIs
@pytest.mark.e2e
def test_plugin_metric_with_interval_through_evaluate_cli(files, python, repo_root, tmp_path):
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
        "metrics.include=[sari,bleu,toylen,toydot]",
        "bootstrap.metrics=[sari,toylen]",
        f"bootstrap.samples={SAMPLES}",
        f"bootstrap.seed={SEED}",
        "terms.enabled=false",
        "output.plot=false",
        f"output.dir={out}",
        script="evaluate.py",
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads((out / "results.json").read_text(encoding="utf-8"))
    for lang in ("de", "en"):
        for name, outputs in (("identity", SOURCES), ("model", PREDS)):
            _, ci = hand_percentile_mean(lengths(lang, outputs), SAMPLES, SEED)
            assert res["systems"][name][lang]["ci"]["toylen"] == pytest.approx(ci, abs=1e-9)
            assert "toydot" not in res["systems"][name][lang]["ci"]
    assert "toylen" in {c["metric"] for c in res["comparisons"]}
    # a metric without statistics asked for an interval: one line, status 2
    bad = run_cli(
        python,
        repo_root,
        f"refs.path={files['refs']}",
        "plugins=[toy_metric]",
        "metrics.include=[sari,bleu,toydot]",
        "bootstrap.metrics=[toydot]",
        f"output.dir={tmp_path / 'bad'}",
        script="evaluate.py",
        env=env,
        cwd=tmp_path,
    )
    assert bad.returncode == 2 and "error: bootstrap.metrics: no bootstrap for toydot" in bad.stderr


def _html_table(html: str, caption: str) -> str:
    start = html.index(f"<caption>{caption}</caption>")
    return html[start : html.index("</table>", start)]


@pytest.mark.e2e
def test_plugin_metric_in_the_run_report(tmp_path, repo_root):
    """``multimsd run`` on tiny models with the plugin: the toy's interval (recomputed by hand for the copy
    baseline, whose outputs are the test sources) is in the run's results.json and in report.html; the
    metric without statistics has a table without intervals."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "toy_metric.py").write_text(TOY_PLUGIN, encoding="utf-8")
    run_dir = tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), str(repo_root)])}
    proc = subprocess.run(
        [
            sys.executable, "-m", "multimsd", "run", "debug=tiny", f"dir={run_dir}",
            "plugins=[toy_metric]",
            "evaluate.metrics.include=[sari,bleu,fkgl,toylen,toydot]",
            "evaluate.bootstrap.metrics=[sari,bleu,fkgl,toylen]",
        ],
        capture_output=True, text=True, timeout=900, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((run_dir / "results.json").read_text(encoding="utf-8"))
    evaluation = json.loads((run_dir / "evaluation" / "results.json").read_text(encoding="utf-8"))
    meta = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    refs = [json.loads(line) for line in (run_dir / meta["references"]).read_text().splitlines()]
    boot = evaluation["bootstrap"]
    assert boot["metrics"] == ["sari", "bleu", "fkgl", "toylen"]
    html = (run_dir / "report.html").read_text(encoding="utf-8")
    md = (run_dir / "report.md").read_text(encoding="utf-8")
    toy = _html_table(html, "toylen (higher is better; best per column in bold)")
    dot = _html_table(html, "toydot (higher is better; best per column in bold)")
    for lang in results["languages"]:
        copy = results["systems"]["copy"][lang]
        lens = [len(r["complex"]) for r in refs if r["lang"] == lang]
        _, ci = hand_percentile_mean(lens, boot["samples"], boot["seed"], boot["confidence"])
        assert copy["toylen"] == pytest.approx(sum(lens) / len(lens))
        assert copy["ci"]["toylen"] == pytest.approx(ci, abs=1e-9)
        assert copy["ci"]["toylen"] == evaluation["systems"]["copy"][lang]["ci"]["toylen"]
        cell = rf'{copy["toylen"]:.2f}(</b>)?<span class="ci">\[{ci[0]:.2f}, {ci[1]:.2f}\]</span>'
        assert re.search(cell, toy) and f"[{ci[0]:.2f}, {ci[1]:.2f}]" in md  # (bold if the longest)
        for system, per_lang in results["systems"].items():
            assert "toydot" in per_lang[lang] and "toydot" not in per_lang[lang]["ci"], system
    assert (
        'class="ci"' not in dot
        and f"{results['systems']['copy'][results['languages'][0]]['toydot']:.2f}" in dot
    )
    assert "toylen" in {c["metric"] for c in results["comparisons"]}
    assert "TOYLEN" in md  # the paired comparisons name it

"""``multimsd run seeds=[…]``: every trained system once per seed in its own directory, per-seed scores with
mean ± sd and an interval over seeds and sentences, θ selected on the seed mean, re-runs that train only new
seeds, one-line errors for bad values, and a run without seeds exactly as before."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from multimsd.errors import MultimsdError
from multimsd.paths import conf_dir
from multimsd.pipeline.run import _recorded, compose, expand_systems, plan
from multimsd.pipeline.seeds import (
    check_seeds,
    expand_compare,
    seed_summary,
    select_on_seed_mean,
)

SEEDED = ["train/zero_shot", *(f"train/finetuned_theta{t}_seed{s}" for t in (1, 4) for s in (1, 2))]


def multimsd(run_dir: Path, *extra: str) -> subprocess.CompletedProcess:
    args = [
        sys.executable,
        "-m",
        "multimsd",
        "run",
        "debug=tiny",
        f"output.dir={run_dir}",
        *extra,
    ]
    return subprocess.run(args, capture_output=True, text=True, timeout=600)


def ran(proc: subprocess.CompletedProcess) -> list[str]:
    return [ln.split("] ", 1)[1].split(":")[0] for ln in proc.stderr.splitlines() if ln.endswith(": running")]


def run_cfg(*overrides: str):
    return compose("run", ["debug=tiny", *overrides], config_dir=conf_dir() / "pipeline")


@pytest.fixture(scope="module")
def seeded_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("seeds") / "run"
    proc = multimsd(run_dir, "seeds=[1,2]")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert ran(proc) == ["align", *SEEDED, "evaluate"]
    return run_dir


# ------------------------------------------------------------------------------------------- no seeds
@pytest.mark.integration
def test_without_seeds_the_plan_is_as_before(tmp_path):
    """seeds=null (the default) plans the same stages, directories, fingerprints and configs as a run config
    without the key, and records nothing new."""
    default, explicit = run_cfg(), run_cfg("seeds=null")
    assert default.seeds is None
    a, b = plan(default, tmp_path / "r"), plan(explicit, tmp_path / "r")
    assert [(s.name, s.fp, s.out) for s in a] == [(s.name, s.fp, s.out) for s in b]
    assert [s.name for s in a] == [
        "align",
        "train/zero_shot",
        "train/finetuned_theta1",
        "train/finetuned_theta4",
        "evaluate",
    ]
    assert all(s.out == tmp_path / "r" / "systems" / s.system for s in a if s.kind == "train")
    systems = expand_systems(default)
    assert all("seed" not in sc and "seed_of" not in sc for sc in systems.values())
    # train.py keeps its own seed: no seed= override reaches a stage
    assert all(not any(o.startswith("seed=") for o in sc["train"]) for sc in systems.values())
    assert "seeds" not in _recorded(default)


# ------------------------------------------------------------------------------------------- bad values
def test_check_seeds():
    assert check_seeds(None) is None
    assert check_seeds([3, 1, 2]) == [3, 1, 2]
    for bad, message in (([], "seeds=[]"), ([1, 1], "more than once"), ([1, "a"], "not an integer"),
                         ([True], "not an integer"), ([1.5], "not an integer"), ([-1], "not an integer")):  # fmt: skip
        with pytest.raises(MultimsdError, match=message.replace("[", r"\[").replace("]", r"\]")):
            check_seeds(bad)


@pytest.mark.e2e
def test_bad_seeds_fail_in_one_line_before_any_work(tmp_path):
    for value, message in (
        ("[]", "seeds=[]"),
        ("[1,2,1]", "more than once"),
        ("[1,a]", "seeds[1]"),
        ("[1.5]", "seeds[0]"),
        ("[-3]", "not an integer"),
        ("3", "seeds"),
    ):
        d = tmp_path / "run"
        t0 = time.time()
        proc = multimsd(d, f"seeds={value}")
        lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
        assert proc.returncode == 2, (value, proc.stderr[-2000:])
        assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], (value, lines)
        assert not d.exists() and time.time() - t0 < 60, value


# ------------------------------------------------------------------------------------------- planning
@pytest.mark.integration
def test_weighted_loss_preset_with_seeds_plans_one_run_per_theta_and_seed(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    rows = [f"d{i}\tThe complex sentence number {i} is long.\tSentence {i} is short." for i in range(40)]
    tsv.write_text("article_id\tcomplex\tsimple\n" + "\n".join(rows) + "\n")
    cfg = compose(
        "run",
        ["experiment=weighted_loss", f"pairs.path={tsv}", "pairs.lang=en"]
        + ["pairs.split.validation=4", "pairs.split.test=4", "pairs.split.max_fraction=0.2", "seeds=[7,8,9]"],
        config_dir=conf_dir() / "pipeline",
    )
    cfg.train = [*cfg.train, "data.languages=[en]"]  # the command line's train.data.languages=[en]
    stages = plan(cfg, tmp_path / "r")
    names = [s.name for s in stages]
    trained = [f"train/finetuned_theta{t}_seed{s}" for t in (1, 2, 4, 8) for s in (7, 8, 9)]
    assert names == ["pairs", "train/zero_shot", *trained, "train/five_shot", "evaluate"]
    by_name = {s.name: s for s in stages}
    for t in (1, 2, 4, 8):
        for s in (7, 8, 9):
            st = by_name[f"train/finetuned_theta{t}_seed{s}"]
            assert st.config.seed == s and float(st.config.loss.theta) == t
            assert st.out == tmp_path / "r" / "systems" / f"finetuned_theta{t}_seed{s}"
    assert len({s.fp for s in stages}) == len(stages)  # every seed its own fingerprint
    # the untrained systems keep train.py's seed, once each
    assert by_name["train/zero_shot"].config.seed == 42 and by_name["train/five_shot"].config.seed == 42
    compare = list(by_name["evaluate"].config.bootstrap.compare)
    assert "finetuned_theta2_seed8:finetuned_theta1_seed8" in compare
    assert "finetuned_theta1_seed9:copy" in compare and "five_shot:zero_shot" in compare
    assert len(compare) == 3 * 4 + 1


def test_expand_compare():
    systems = {
        "copy": {"kind": "copy"},
        "a_seed1": {"seed_of": "a", "seed": 1},
        "a_seed2": {"seed_of": "a", "seed": 2},
        "b_seed1": {"seed_of": "b", "seed": 1},
        "b_seed2": {"seed_of": "b", "seed": 2},
    }
    assert expand_compare(["b:a", "copy:a", "x:y"], systems) == [
        "b_seed1:a_seed1",
        "b_seed2:a_seed2",
        "copy:a_seed1",
        "copy:a_seed2",
        "x:y",
    ]
    assert expand_compare(["b:a"], {"a": {}, "b": {}}) == ["b:a"]


# ------------------------------------------------------------------------------------------- selection
def test_theta_is_selected_on_the_mean_over_seeds():
    """The best single seed (θ = 1, seed 1: 30) and the best mean (θ = 2: 24.5 against 20) disagree."""

    def v(m: float) -> dict:
        return {"sari": m, "bleu": m, "mean_sari_bleu": m}

    sel = select_on_seed_mean({"theta1": {1: v(30.0), 2: v(10.0)}, "theta2": {1: v(25.0), 2: v(24.0)}})
    assert sel["selected"] == "theta2"
    assert sel["validation"]["theta1"]["mean_sari_bleu"] == 20.0
    assert sel["validation"]["theta2"]["mean_sari_bleu"] == 24.5
    assert sel["validation"]["theta1"]["mean_sari_bleu_sd"] == pytest.approx(statistics.stdev([30.0, 10.0]))
    # a θ missing a seed's validation scores is no candidate
    assert select_on_seed_mean({"t1": {1: v(30.0), 2: None}, "t2": {1: v(1.0)}})["selected"] == "t2"


# ------------------------------------------------------------------------------------------- intervals
@pytest.mark.integration
def test_seed_interval_includes_the_seed_variance(tmp_path):
    """Real SARI / BLEU on constructed predictions: seed 1 writes the references, seed 2 copies the input, seed 3
    predicts as seed 1. The interval over seeds 1 and 2 is at least as wide as either seed's own (sentence)
    interval and holds the mean; over seeds 1 and 3 (no seed variance) it is seed 1's interval exactly."""
    from multimsd.evaluation.stage import run as evaluate_run

    words = [
        "asthma",
        "airways",
        "cough",
        "wheeze",
        "chest",
        "night",
        "breath",
        "lungs",
        "doctor",
        "inhaler",
        "attack",
        "trigger",
    ]
    refs = []
    for i in range(24):
        w = words[i % len(words)], words[(i * 5 + 3) % len(words)], words[(i * 7 + 1) % len(words)]
        refs.append(
            {
                "complex": f"The {w[0]} presents with marked {w[1]} and recurrent {w[2]} in case {i}.",
                "simple": f"Case {i} has {w[0]} and {w[1]}.",
                "lang": "en",
            }
        )
    (tmp_path / "refs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in refs))
    texts = {
        "a_seed1": [r["simple"] for r in refs],
        "a_seed2": [r["complex"] for r in refs],
        "a_seed3": [r["simple"] for r in refs],
    }
    overrides = [f"refs.path={tmp_path / 'refs.jsonl'}", "~systems.identity", "metrics.include=[sari,bleu]"]
    for name, lines in texts.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "en.txt").write_text("\n".join(lines) + "\n")
        overrides.append(f"systems.{name}={tmp_path / name}")
    eval_cfg = compose("evaluate", [*overrides, f"output.dir={tmp_path / 'evaluation'}"])
    evaluation = json.loads(json.dumps(evaluate_run(eval_cfg), default=str))
    stage = SimpleNamespace(config=eval_cfg)
    groups = {"mixed": {1: "a_seed1", 2: "a_seed2"}, "alike": {1: "a_seed1", 3: "a_seed3"}}
    out = seed_summary(stage, groups, evaluation, {"mixed": "A"})
    assert out["seeds"] == [1, 2, 3] and out["systems"]["mixed"]["label"] == "A"
    own = {n: evaluation["systems"][n]["en"] for n in texts}
    for metric in ("sari", "bleu"):
        mixed = out["systems"]["mixed"]["en"][metric]
        values = [own["a_seed1"][metric], own["a_seed2"][metric]]
        # per seed, and mean ± sd by hand from the per-seed values
        assert mixed["per_seed"] == {"1": values[0], "2": values[1]}
        assert mixed["mean"] == pytest.approx(statistics.mean(values), abs=1e-12)
        assert mixed["sd"] == pytest.approx(statistics.stdev(values), abs=1e-12)
        assert values[0] != values[1]
        lo, hi = mixed["ci"]
        for name in ("a_seed1", "a_seed2"):
            s_lo, s_hi = own[name]["ci"][metric]
            assert hi - lo >= s_hi - s_lo, (metric, name, (lo, hi), (s_lo, s_hi))
        assert lo <= mixed["mean"] <= hi
        alike = out["systems"]["alike"]["en"][metric]
        assert alike["sd"] == 0.0 and alike["ci"] == pytest.approx(own["a_seed1"]["ci"][metric], abs=1e-12)


# ------------------------------------------------------------------------------------------- end to end
@pytest.mark.e2e
def test_seeded_run_trains_each_system_once_per_seed(seeded_run):
    d = seeded_run
    trained = [f"finetuned_theta{t}_seed{s}" for t in (1, 4) for s in (1, 2)]
    assert {p.name for p in (d / "systems").iterdir()} == {"zero_shot", *trained}
    for t in (1, 4):
        weights = [
            (d / "systems" / f"finetuned_theta{t}_seed{s}" / "best").glob("*.safetensors") for s in (1, 2)
        ]
        a, b = (sorted(w) for w in weights)
        assert a and [p.name for p in a] == [p.name for p in b]
        assert [p.read_bytes() for p in a] != [p.read_bytes() for p in b]  # the seed reached the training
    run = json.loads((d / "run.json").read_text())
    assert run["systems"]["finetuned_theta4_seed2"]["seed"] == 2
    assert run["systems"]["finetuned_theta4_seed2"]["theta"] == 4.0
    assert "seed" not in run["systems"]["zero_shot"] and run["config"]["seeds"] == [1, 2]
    assert "seed 2" in run["systems"]["finetuned_theta4_seed2"]["label"]


@pytest.mark.e2e
def test_seeded_results_give_per_seed_scores_mean_and_sd(seeded_run):
    d = seeded_run
    results = json.loads((d / "results.json").read_text())
    seeds = results["seeds"]
    assert seeds["seeds"] == [1, 2] and set(seeds["systems"]) == {"finetuned_theta1", "finetuned_theta4"}
    for base, entry in seeds["systems"].items():
        assert entry["systems"] == {"1": f"{base}_seed1", "2": f"{base}_seed2"}
        assert "seed" not in entry["label"] and entry["label"].endswith(("θ = 1", "θ = 4"))
        for metric in ("sari", "bleu", "fkgl"):
            per = [results["systems"][f"{base}_seed{s}"]["en"][metric] for s in (1, 2)]
            cell = entry["en"][metric]
            assert cell["per_seed"] == {"1": per[0], "2": per[1]}
            assert cell["mean"] == statistics.mean(per) and cell["sd"] == statistics.stdev(per)
            assert len(cell["ci"]) == 2 and cell["ci"][0] <= cell["ci"][1]
    # θ selected on the mean over seeds of each seed's validation mean(SARI, BLEU)
    sweep = results["sweep"]
    assert sweep["systems"] == ["finetuned_theta1", "finetuned_theta4"]
    means = {}
    for base in sweep["systems"]:
        val = [
            json.loads((d / "systems" / f"{base}_seed{s}" / "all_results.json").read_text())["validation"]
            for s in (1, 2)
        ]
        assert sweep["validation"][base]["per_seed"]["2"]["mean_sari_bleu"] == val[1]["mean_sari_bleu"]
        means[base] = statistics.mean(v["mean_sari_bleu"] for v in val)
        assert sweep["validation"][base]["mean_sari_bleu"] == means[base]
    assert sweep["selected"] == max(means, key=means.get)
    md = (d / "report.md").read_text()
    assert "## Across seeds" in md and "Selection of loss.theta on the mean over seeds" in md
    assert "SARI and BLEU vs loss.theta, mean over seeds" in md


@pytest.mark.e2e
def test_adding_a_seed_trains_only_the_new_seed(seeded_run):
    """(Last: it adds seed 3 to the shared run.) The same command skips everything; a new seed trains that
    seed's systems and re-evaluates."""
    again = multimsd(seeded_run, "seeds=[1,2]")
    assert again.returncode == 0 and ran(again) == [], again.stderr[-2000:]
    more = multimsd(seeded_run, "seeds=[1,2,3]")
    assert more.returncode == 0, more.stderr[-2000:]
    assert ran(more) == ["train/finetuned_theta1_seed3", "train/finetuned_theta4_seed3", "evaluate"]
    assert "across seeds 1, 2, 3:" in more.stdout  # the summary printed at the end: mean ± sd [interval]
    results = json.loads((seeded_run / "results.json").read_text())
    assert results["seeds"]["seeds"] == [1, 2, 3]
    assert list(results["seeds"]["systems"]["finetuned_theta1"]["en"]["sari"]["per_seed"]) == ["1", "2", "3"]

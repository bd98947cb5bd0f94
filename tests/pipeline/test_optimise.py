"""``systems.NAME.kind: optimise`` (issue #48 item 4): a system that starts from another system of the run
(train.py mode=dpo from that system's best model), planned after it, its config built on the start's, its
fingerprint following the start's; the preset ``experiment=safe`` end to end."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from multimsd.errors import MultimsdError
from multimsd.paths import conf_dir
from multimsd.pipeline.run import compose, plan


def run_cfg(*overrides: str):
    return compose("run", ["debug=tiny", *overrides], config_dir=conf_dir() / "pipeline")


def stages_of(tmp_path, *overrides: str) -> dict:
    return {s.name: s for s in plan(run_cfg(*overrides), tmp_path / "r")}


@pytest.mark.integration
def test_the_safe_preset_plans_dpo_after_its_start_with_the_starts_settings(tmp_path):
    stages = stages_of(tmp_path, "experiment=safe", "systems.finetuned.train=['loss.theta=4']")
    names = list(stages)
    assert names == ["align", "train/finetuned", "train/dpo", "train/grpo", "train/number_guard", "evaluate"]
    dpo, start = stages["train/dpo"].config, stages["train/finetuned"].config
    assert dpo.mode == "dpo" and start.mode == "train"
    assert dpo.start == str(tmp_path / "r" / "systems" / "finetuned")
    assert dpo.loss.theta == 4.0  # the start system's own overrides come first
    assert dpo.model == start.model and dpo.data.languages == start.data.languages
    info = stages["train/dpo"].info
    assert info["label"] == "tiny random Llama + LoRA + DPO"
    guard = stages["train/number_guard"]
    assert (guard.config.mode, guard.config.start) == ("predict", dpo.start)
    assert guard.config.eval.number_guard and not start.eval.number_guard and guard.config.loss.theta == 4.0
    assert guard.info["label"] == "tiny random Llama + LoRA (eval.number_guard=true)"
    # the evaluation compares it with its start and selects with the safety limit
    ev = stages["evaluate"].config
    assert "dpo:finetuned" in list(ev.bootstrap.compare) and ev.select.max_safety == "reference"


@pytest.mark.integration
def test_the_optimise_systems_fingerprint_follows_its_start_and_its_own_settings(tmp_path):
    base = stages_of(tmp_path, "experiment=safe")
    other_start = stages_of(tmp_path, "experiment=safe", "systems.finetuned.train=['optim.lr=0.5']")
    own = stages_of(tmp_path, "experiment=safe", "systems.dpo.train=['dpo.beta=0.5']")
    assert other_start["train/dpo"].fp != base["train/dpo"].fp  # a retrained start: DPO runs again
    assert own["train/dpo"].fp != base["train/dpo"].fp
    assert own["train/finetuned"].fp == base["train/finetuned"].fp  # the start does not care
    assert own["train/dpo"].config.dpo.beta == 0.5


@pytest.mark.integration
def test_with_seeds_each_seed_starts_from_the_same_seed(tmp_path):
    stages = stages_of(tmp_path, "experiment=safe", "seeds=[1,2]")
    for s in (1, 2):
        cfg = stages[f"train/dpo_seed{s}"].config
        assert cfg.seed == s
        assert cfg.start == str(tmp_path / "r" / "systems" / f"finetuned_seed{s}")
        assert stages[f"train/dpo_seed{s}"].info["label"] == f"tiny random Llama + LoRA + DPO, seed {s}"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("systems.dpo.start=null", "systems.dpo.start: name the system it starts from (finetuned)"),
        ("systems.dpo.start=copy", "systems.dpo.start='copy' is not a system of kind train (finetuned)"),
        ("systems.dpo.start=nothing", "systems.dpo.start='nothing' is not a system of kind train"),
        ("systems.dpo.objective=ppo", "systems.dpo.objective='ppo': choose dpo, grpo"),
    ],
)
def test_a_bad_optimise_system_is_one_error_before_any_work(tmp_path, override, message):
    with pytest.raises(MultimsdError) as e:
        stages_of(tmp_path, "experiment=safe", override)
    assert message in str(e.value)
    assert not (tmp_path / "r").exists()


@pytest.mark.integration
def test_a_grpo_system_runs_train_py_mode_grpo_from_its_start(tmp_path, monkeypatch):
    pytest.importorskip("trl", reason="the rl extra (pip install 'multimsd[rl]')")
    stages = stages_of(tmp_path, "experiment=safe")
    grpo, start = stages["train/grpo"].config, stages["train/finetuned"].config
    assert (grpo.mode, grpo.start) == ("grpo", str(tmp_path / "r" / "systems" / "finetuned"))
    assert grpo.model == start.model
    assert stages["train/grpo"].info["label"] == "tiny random Llama + LoRA + GRPO"
    # without the rl extra: one line naming it, when the run is planned (not after the start's training)
    monkeypatch.setitem(sys.modules, "trl", None)
    with pytest.raises(MultimsdError, match=r"systems.grpo.objective=grpo: .*pip install 'multimsd\[rl\]'"):
        stages_of(tmp_path, "experiment=safe")
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------------------------------- end to end
@pytest.fixture(scope="module")
def safe_run(tmp_path_factory) -> Path:
    run_dir = tmp_path_factory.mktemp("safe") / "run"
    cmd = [sys.executable, "-m", "multimsd", "run", "debug=tiny", "experiment=safe", f"output.dir={run_dir}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return run_dir


@pytest.mark.e2e
def test_the_safe_preset_runs_end_to_end_and_reports_safety_against_sari(safe_run):
    info = json.loads((safe_run / "run.json").read_text())
    dpo = info["systems"]["dpo"]
    assert (dpo["kind"], dpo["start"], dpo["objective"]) == ("optimise", "finetuned", "dpo")
    trained = json.loads((safe_run / "systems" / "dpo" / "all_results.json").read_text())
    pairs = trained["pairs"]["splits"]["train"]
    assert pairs["pairs"] >= 1 and pairs["samples"] == 4 * pairs["sources"]
    # the DPO loss starts at log 2: the policy is its reference
    assert trained["history"][0]["loss"] == pytest.approx(0.6931, abs=2e-3)
    assert {"reward_margin", "reward_accuracy"} <= set(trained["history"][0])
    assert (safe_run / "systems" / "dpo" / "pairs" / "dataset_dict.json").is_file()
    for name in ("dpo", "grpo", "number_guard"):
        assert (safe_run / "systems" / name / "predictions" / "test" / "en.txt").is_file()
    grpo = json.loads((safe_run / "systems" / "grpo" / "all_results.json").read_text())
    assert grpo["mode"] == "grpo" and grpo["kl_reference"] == "start"
    steps = [h for h in grpo["history"] if "loss" in h]
    assert steps and all("rewards/safety_gate/mean" in h for h in steps)  # each reward's curve
    guard = json.loads((safe_run / "systems" / "number_guard" / "all_results.json").read_text())
    assert guard["mode"] == "predict" and not (safe_run / "systems" / "number_guard" / "best").exists()
    report = (safe_run / "report.md").read_text()
    assert "## Safety against simplicity" in report
    assert "the references' own flag rate" in report
    assert "+ DPO vs tiny random Llama + LoRA | en |" in report  # the paired test against its start
    assert "(eval.number_guard=true) vs tiny random Llama + LoRA | en |" in report
    assert "+ GRPO vs tiny random Llama + LoRA | en |" in report
    html = (safe_run / "report.html").read_text()
    assert html.count('stroke-dasharray="6 4"') >= 1  # the references' line in the chart


@pytest.mark.integration
def test_a_new_started_system_from_the_command_line(tmp_path):
    """systems.NAME.start / .objective / .train=[…] add a system as systems.NAME.kind does (they were Hydra's
    'dict is not a subclass of SystemConfig' error): a second DPO seed from the same start."""
    from multimsd.pipeline.cli import run_config

    cfg = run_config(
        [
            "debug=tiny",
            "experiment=safe",
            f"output.dir={tmp_path / 'r'}",
            "systems.dpo_seed1.kind=optimise",
            "systems.dpo_seed1.start=finetuned",
            "systems.dpo_seed1.objective=dpo",
            "systems.dpo_seed1.label='tiny + DPO, seed 1'",
            "systems.dpo_seed1.train=['seed=1','dpo.beta=0.5']",
            "systems.dpo.train=['dpo.samples=3']",  # an existing system's list: replaced, as Hydra would
        ],
        None,
    )
    stages = {s.name: s for s in plan(cfg, tmp_path / "r")}
    seeded = stages["train/dpo_seed1"]
    assert (seeded.config.mode, seeded.config.seed, seeded.config.dpo.beta) == ("dpo", 1, 0.5)
    assert seeded.config.start == str(tmp_path / "r" / "systems" / "finetuned")
    assert seeded.info["label"] == "tiny + DPO, seed 1"
    assert stages["train/dpo"].config.dpo.samples == 3 and list(cfg.systems.dpo.train) == ["dpo.samples=3"]
    with pytest.raises(MultimsdError, match="not a list of overrides"):
        run_config(["debug=tiny", "systems.x.kind=copy", "systems.x.train=[a=1]"], None)

"""train.py ``mode=grpo`` (issue #48 item 2) on the tiny random Llama + LoRA: two GRPO steps through TRL move the
adapter and nothing else, with the KL measured against the start system's adapter (not the bare base) and
each reward logged per step; a run killed after a checkpoint resumes on the same command, what the kill left
half-written removed; without TRL, or with settings GRPO cannot use, the stage is one error line before any
work."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest
import torch

from multimsd.errors import MultimsdError

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")
needs_trl = pytest.mark.skipif(
    importlib.util.find_spec("trl") is None, reason="the rl extra (pip install 'multimsd[rl]')"
)

LLAMA = {"name": "tiny_llama", "kind": "causal", "pretrained": "tiny:llama", "lora": {"enabled": True}}
MBART = {"name": "tiny_mbart", "kind": "seq2seq", "pretrained": "tiny:mbart"}


def config(tmp_path, name: str, **over) -> dict:
    return {
        "model": LLAMA,
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 8,
            "max_eval_examples": 2,
            "max_length": 512,
            "shuffle": False,
        },
        "optim": {"batch_size": 2, "epochs": 1, "lr": 1e-2, "max_steps": 2},
        "eval": {"generate": False, "before_training": False, "batch_size": 4, "max_new_tokens": 8},
        "grpo": {"num_generations": 2},
        "output": {"dir": str(tmp_path / name)},
        **over,
    }


def make_start(tmp_path):
    """A "trained" start system whose adapter is not the base model's (a fresh LoRA's B is zero: its KL to
    the base and to itself would be the same 0): the LoRA weights drawn at random, saved as best/."""
    from multimsd.training.checkpoint import write_manifest
    from multimsd.training.kinds import get_kind
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer
    from multimsd.training.results import save_config

    out = tmp_path / "start"
    if out.exists():
        return out
    cfg = to_train_config(config(tmp_path, "start"))
    torch.manual_seed(0)
    model, tok = load_model_and_tokenizer(cfg.model)
    with torch.no_grad():
        for n, p in model.named_parameters():
            if "lora_B" in n:
                p.normal_(0.0, 0.5)
    get_kind(cfg.model.kind).save_pretrained(model, tok, out / "best", torch.save)
    write_manifest(out / "best")
    save_config(cfg, out)
    return out


def grpo_config(tmp_path, name: str = "grpo", **over) -> dict:
    return config(tmp_path, name, mode="grpo", start=str(make_start(tmp_path)), **over)


def start_adapter(tmp_path) -> dict:
    from peft.utils import load_peft_weights

    return load_peft_weights(str(tmp_path / "start" / "best"))


@pytest.mark.integration
@needs_trl
def test_two_grpo_steps_change_only_the_adapter_against_the_start(tmp_path, monkeypatch, caplog, capsys):
    import logging

    from peft.utils import load_peft_weights

    from multimsd.training import grpo
    from multimsd.training.loop import build, to_train_config

    cfg = to_train_config(grpo_config(tmp_path))
    # two terms, no gate (set on the built config: a dict override merges into the default's gates): the tiny
    # model's gibberish fails the guardrails, so a gated reward is 0 for every sample and teaches nothing
    cfg.grpo.reward = {"sari": 1.0, "simplicity": 1.0}
    s = build(cfg, grpo.GrpoProgress(cfg))
    model = s.model
    base = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" not in n}
    adapter = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_" in n}
    seen = {}
    build_trainer = grpo.build_trainer

    def keep(*a, **k):  # the trainer as TRL built it: its frozen reference adapter
        trainer = build_trainer(*a, **k)
        unwrapped = trainer.accelerator.unwrap_model(trainer.model)
        seen["ref"] = {n: p.detach().clone() for n, p in unwrapped.named_parameters() if ".ref." in n}
        return trainer

    finish = grpo.finish

    def trained(s, trainer):  # the weights as training left them (the final predictions merge the adapter)
        seen["after"] = {n: p.detach().clone() for n, p in model.named_parameters()}
        return finish(s, trainer)

    monkeypatch.setattr(grpo, "build_trainer", keep)
    monkeypatch.setattr(grpo, "finish", trained)
    with caplog.at_level(logging.INFO, logger="multimsd"):
        res = grpo.run_grpo(s)
    # off a terminal (stderr captured): our line for the steps, not TRL's bar or a dict of logs a step
    assert any(
        re.fullmatch(r"grpo: 2 steps in [\d.]+ s, reward [\d.-]+, kl [\d.-]+", r.getMessage())
        for r in caplog.records
    )
    printed = capsys.readouterr()
    assert "{'loss'" not in printed.out + printed.err

    # the KL's reference is a frozen copy of the start adapter, exactly
    start = start_adapter(tmp_path)
    assert len(seen["ref"]) == len(start) > 0
    for n, p in seen["ref"].items():
        assert torch.equal(p.cpu(), start[n.replace(".ref.", ".")]), n
    # the first step's policy is the start: its KL to the reference is 0 (to the bare base it is not, with
    # this start's random adapter)
    steps = [h for h in res["history"] if "loss" in h]
    assert [h["step"] for h in steps] == [1, 2]
    assert steps[0]["kl"] == pytest.approx(0.0, abs=1e-6)
    assert steps[0]["grad_norm"] > 0
    for h in steps:  # each reward's mean, every step
        assert {"rewards/sari/mean", "rewards/simplicity/mean", "reward", "kl"} <= set(h)

    after = seen["after"]
    assert all(torch.equal(after[n], v) for n, v in base.items())  # the base never moves
    assert any(not torch.equal(after[n], v) for n, v in adapter.items())
    assert all(torch.equal(after[n], v) for n, v in seen["ref"].items())  # nor does the reference
    assert not any(".ref." in n for n, _ in model.named_parameters())  # not part of the system saved
    saved = load_peft_weights(str(tmp_path / "grpo" / "best"))
    assert saved.keys() == start.keys()
    assert any(not torch.equal(saved[k], start[k]) for k in start)
    written = json.loads((tmp_path / "grpo" / "all_results.json").read_text())
    assert written["mode"] == "grpo" and written["kl_reference"] == "start"
    assert [h["rewards/sari/mean"] for h in written["history"]] == [h["rewards/sari/mean"] for h in steps]
    assert (tmp_path / "grpo" / "predictions" / "test" / "en.txt").is_file()


class Killed(KeyboardInterrupt):
    pass


def run_fresh(cfg: dict) -> dict:
    from accelerate.state import AcceleratorState, GradientState

    from multimsd.training import loop

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    return loop.run(cfg)


@pytest.mark.integration
@needs_trl
def test_a_killed_grpo_run_resumes_on_the_same_command(tmp_path, monkeypatch):
    from trl import GRPOTrainer

    over = {"checkpoint_every": 1}  # 2 steps
    whole = run_fresh(grpo_config(tmp_path, "whole", **over))
    save = GRPOTrainer._save_checkpoint

    def save_then_die(self, model, trial):
        save(self, model, trial)
        if self.state.global_step == 1:
            raise Killed

    monkeypatch.setattr(GRPOTrainer, "_save_checkpoint", save_then_die)
    with pytest.raises(Killed):
        run_fresh(grpo_config(tmp_path, "killed", **over))
    monkeypatch.setattr(GRPOTrainer, "_save_checkpoint", save)
    out = tmp_path / "killed"
    assert not (out / "best").exists() and not (out / "all_results.json").exists()
    # what a kill while saving step 2 leaves: a checkpoint without its trainer_state.json
    partial = out / "grpo_checkpoints" / "checkpoint-2"
    partial.mkdir()
    (partial / "adapter_model.safetensors").write_bytes(b"half")
    (partial / "half-written").touch()

    resumed = run_fresh(grpo_config(tmp_path, "killed", **over))
    assert resumed["resumed_from"].endswith("checkpoint-1")
    steps = [h for h in resumed["history"] if "loss" in h]
    assert [h["step"] for h in steps] == [1, 2]
    for h in steps:  # every reward of the default spec, every step (the gates too)
        assert {"rewards/sari/mean", "rewards/safety_gate/mean", "rewards/guardrails/mean"} <= set(h)
    # the same steps as the uninterrupted run: the Trainer's RNG state and data order are restored
    want = [h for h in whole["history"] if "loss" in h]
    for key in ("rewards/sari/mean", "completions/mean_length", "kl"):
        assert [h[key] for h in steps] == pytest.approx([h[key] for h in want]), key
    assert not (partial / "half-written").exists()  # removed, then written again whole
    assert json.loads((partial / "trainer_state.json").read_text())["global_step"] == 2
    assert (out / "best" / "adapter_model.safetensors").is_file()
    assert (out / "predictions" / "test" / "en.txt").is_file()
    assert json.loads((out / "all_results.json").read_text())["mode"] == "grpo"


@pytest.mark.integration
def test_bad_grpo_settings_are_one_line_before_any_work(tmp_path, monkeypatch):
    from multimsd.training import loop

    def nothing_loads(*a, **k):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(loop, "load_model_and_tokenizer", nothing_loads)
    start = str(tmp_path / "start")
    lstm = {"name": "tiny_lstm", "kind": "lstm", "pretrained": "scratch"}
    cases = [
        ({"grpo": {"beta": 0.0}}, "grpo.beta=0.0: must be > 0"),
        ({"grpo": {"beta": -0.1}}, "grpo.beta=-0.1: must be > 0"),
        ({"grpo": {"num_generations": 1}}, "grpo.num_generations=1"),
        ({"grpo": {"reward": {"bleu": 1.0}}}, "reward: unknown bleu"),
        ({"model": MBART}, "GRPO through TRL serves decoder-only .* use mode=dpo"),
        ({"model": lstm}, "GRPO through TRL serves decoder-only"),
        ({"model": {**LLAMA, "lora": {"enabled": False}}}, "model.lora.enabled=true"),
        ({"start": None}, "mode=grpo needs start="),
        ({"optim": {"scheduler": "exponential"}}, "linear, constant or cosine"),
    ]
    for over, message in cases:
        cfg = config(tmp_path, "bad", mode="grpo", start=start)
        cfg.update(over)
        with pytest.raises(MultimsdError, match=message) as e:
            loop.run(cfg)
        assert "\n" not in str(e.value)
        assert not (tmp_path / "bad").exists()


@pytest.mark.integration
def test_without_trl_grpo_is_one_line_naming_the_extra(tmp_path, monkeypatch):
    from multimsd.training import loop

    monkeypatch.setitem(sys.modules, "trl", None)  # `import trl` fails, as where the extra is missing
    monkeypatch.setattr(loop, "load_model_and_tokenizer", lambda *a, **k: pytest.fail("a model was loaded"))
    with pytest.raises(MultimsdError, match=r"pip install 'multimsd\[rl\]'") as e:
        loop.run(config(tmp_path, "no_trl", mode="grpo", start=str(tmp_path / "start")))
    assert "\n" not in str(e.value)
    assert not (tmp_path / "no_trl").exists()
    # importing the training stage (and this stage's module) never imports TRL
    probe = "import sys, multimsd.training.loop, multimsd.training.grpo; print('trl' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

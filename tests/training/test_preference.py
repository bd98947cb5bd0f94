"""train.py ``mode=dpo`` (issue #48 item 3) on tiny models: the reference log-probabilities the pair miner
stores are the start model's, a DPO step's loss is the hand computation from the model's own log-softmax
(tiny mBART and tiny Llama + LoRA), only the adapter moves, mining is deterministic, a killed run resumes
with its pairs read back (not mined again) and the uninterrupted run's losses, and bad settings are one
error line before any work."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from multimsd.errors import MultimsdError

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")

MODELS = {
    "llama": {"name": "tiny_llama", "kind": "causal", "pretrained": "tiny:llama", "lora": {"dropout": 0.0}},
    "mbart": {"name": "tiny_mbart", "kind": "seq2seq", "pretrained": "tiny:mbart", "dropout": 0.0},
}


def config(tmp_path, model: str, name: str, **over) -> dict:
    return {
        "model": MODELS[model],
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 16,
            "max_eval_examples": 2,
            "max_length": 512 if model == "llama" else 64,
            "shuffle": False,
        },
        "optim": {"batch_size": 2, "epochs": 1, "lr": 1e-2},
        "eval": {"generate": False, "before_training": False, "batch_size": 4, "max_new_tokens": 8},
        "dpo": {"samples": 2, "beta": 0.5},
        "output": {"dir": str(tmp_path / name)},
        **over,
    }


def make_start(tmp_path, model: str):
    """A "trained" start system: the freshly built model saved as best/ with its manifest and config.yaml."""
    from multimsd.training.checkpoint import write_manifest
    from multimsd.training.kinds import get_kind
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer
    from multimsd.training.results import save_config

    cfg = to_train_config(config(tmp_path, model, "start"))
    torch.manual_seed(0)
    m, tok = load_model_and_tokenizer(cfg.model)
    out = tmp_path / "start"
    get_kind(cfg.model.kind).save_pretrained(m, tok, out / "best", torch.save)
    write_manifest(out / "best")
    save_config(cfg, out)
    return out


def dpo_config(tmp_path, model: str, name: str = "dpo", **over) -> dict:
    start = make_start(tmp_path, model) if not (tmp_path / "start").exists() else tmp_path / "start"
    return config(tmp_path, model, name, mode="dpo", start=str(start), **over)


def session(cfg: dict):
    from multimsd.training.loop import build, prepare_training, to_train_config
    from multimsd.training.progress import Progress

    c = to_train_config(cfg)
    s = build(c, Progress(c))
    prepare_training(s)
    return s


def hand_logp(model, shift: bool, row: dict) -> float:
    """log p(output | source): one row, no padding, the model's logits through a plain log-softmax."""
    ids = torch.tensor([row["input_ids"]])
    labels = torch.tensor([row["labels"]])
    with torch.no_grad():
        if shift:
            logits, labels = model(input_ids=ids).logits[:, :-1], labels[:, 1:]
        else:
            logits = model(input_ids=ids, labels=labels).logits
    mask = labels != -100
    logp = torch.log_softmax(logits.double(), -1).gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    return float((logp * mask).sum())


def hand_loss(s, pairs: list[dict], beta: float) -> float:
    model, shift = s.accelerator.unwrap_model(s.model), s.kind.shift_labels
    total = 0.0
    for p in pairs:
        pc, pr = hand_logp(model, shift, p["chosen"]), hand_logp(model, shift, p["rejected"])
        z = beta * ((pc - p["ref_chosen"]) - (pr - p["ref_rejected"]))
        total += -F.logsigmoid(torch.tensor(z, dtype=torch.float64)).item()
    return total / len(pairs)


@pytest.mark.integration
@pytest.mark.parametrize("model", ["llama", "mbart"])
def test_a_dpo_step_is_the_hand_computed_loss(tmp_path, model):
    from multimsd.training.loop import train_step

    s = session(dpo_config(tmp_path, model))
    pairs = list(s.train_dl.dataset)
    assert len(pairs) >= 4, "tiny models: the references are the chosen outputs of a few sources"
    unwrapped = s.accelerator.unwrap_model(s.model)
    # the stored reference is the start model's log-probability of each output
    for p in pairs:
        assert p["ref_chosen"] == pytest.approx(
            hand_logp(unwrapped, s.kind.shift_labels, p["chosen"]), abs=1e-3
        )
        assert p["ref_rejected"] == pytest.approx(
            hand_logp(unwrapped, s.kind.shift_labels, p["rejected"]), abs=1e-3
        )
    frozen = {n: q.detach().clone() for n, q in unwrapped.named_parameters() if not q.requires_grad}
    trained = {n: q.detach().clone() for n, q in unwrapped.named_parameters() if q.requires_grad}
    batches = iter(s.train_dl)
    first = train_step(s, [next(batches)])
    assert first["loss"] == pytest.approx(math.log(2), abs=1e-4)  # the policy is its reference
    assert first["reward_margin"] == pytest.approx(0.0, abs=1e-3)
    # the second step: the policy has moved; its loss is -log σ(β z) from the hand log-probabilities
    expected = hand_loss(s, pairs[2:4], beta=0.5)
    second = train_step(s, [next(batches)])
    assert second["loss"] == pytest.approx(expected, rel=1e-4, abs=1e-5)
    assert second["loss"] != pytest.approx(math.log(2), abs=1e-6)
    after = dict(unwrapped.named_parameters())
    assert any(not torch.equal(after[n], v) for n, v in trained.items())
    assert all(torch.equal(after[n], v) for n, v in frozen.items())  # LoRA: the base never moves


@pytest.mark.integration
def test_mining_is_deterministic_for_a_seed_and_written_as_a_dataset(tmp_path):
    import datasets

    a = session(dpo_config(tmp_path, "llama", "a"))
    b = session(dpo_config(tmp_path, "llama", "b"))
    pa = datasets.load_from_disk(str(tmp_path / "a" / "pairs"))
    pb = datasets.load_from_disk(str(tmp_path / "b" / "pairs"))
    assert pa["train"].to_list() == pb["train"].to_list()
    assert set(pa["train"].column_names) >= {
        "source",
        "chosen",
        "rejected",
        "ref_chosen_logp",
        "rejected_why",
    }
    assert a.results["pairs"]["splits"]["train"]["pairs"] == len(pa["train"])
    other = session(dpo_config(tmp_path, "llama", "c", seed=7))
    assert other.results["pairs"] != a.results["pairs"] or list(other.train_dl.dataset) != list(
        b.train_dl.dataset
    )


class Killed(KeyboardInterrupt):
    pass


@pytest.mark.integration
def test_a_killed_dpo_run_resumes_with_its_pairs_and_the_same_losses(tmp_path, monkeypatch):
    from accelerate.state import AcceleratorState, GradientState

    from multimsd.training import loop, mining

    def run(cfg):
        AcceleratorState._reset_state(True)
        GradientState._reset_state()
        return loop.run(cfg)

    over = {"checkpoint_every": 1}
    whole = run(dpo_config(tmp_path, "llama", "whole", **over))
    steps = [h["loss"] for h in whole["history"] if "step" in h]
    assert len(steps) >= 2
    save = loop.save_checkpoint

    def save_then_die(accelerator, out, state, keep=2):
        path = save(accelerator, out, state, keep)
        if state.step == 1:
            raise Killed
        return path

    monkeypatch.setattr(loop, "save_checkpoint", save_then_die)
    with pytest.raises(Killed):
        run(dpo_config(tmp_path, "llama", "killed", **over))
    monkeypatch.setattr(loop, "save_checkpoint", save)

    def no_sampling(*a, **k):
        raise AssertionError("the pairs were mined again")

    monkeypatch.setattr(mining, "sample_outputs", no_sampling)
    resumed = run(dpo_config(tmp_path, "llama", "killed", **over))
    assert resumed["resumed_from"].endswith("step_00000001")
    assert [h["loss"] for h in resumed["history"] if "step" in h] == steps
    assert (tmp_path / "killed" / "predictions" / "test" / "en.txt").is_file()


@pytest.mark.integration
def test_bad_dpo_settings_are_one_line_before_any_work(tmp_path):
    from multimsd.training.loop import run

    start = str(tmp_path / "start")
    cases = [
        ({}, "mode=dpo needs start="),
        ({"start": str(tmp_path / "nowhere")}, "no trained weights there (best/)"),
        ({"start": start, "dpo": {"samples": 1}}, "dpo.samples=1: sample at least 2"),
        ({"start": start, "dpo": {"beta": 0}}, "dpo beta=0"),
        ({"start": start, "dpo": {"reward": {"bleu": 1.0}}}, "reward: unknown bleu"),
        ({"start": start, "dpo": {"fallback": "never"}}, "dpo.fallback='never'"),
        ({"start": start, "model": MODELS["mbart"]}, "other model settings"),
        ({"start": start, "mode": "predict", "model": MODELS["mbart"]}, "mode=predict runs with the start"),
    ]
    make_start(tmp_path, "llama")
    for over, message in cases:
        cfg = config(tmp_path, "llama", "bad", mode="dpo")
        cfg.update({k: v for k, v in over.items() if k != "dpo"})
        cfg["dpo"] = {**cfg["dpo"], **over.get("dpo", {})}
        with pytest.raises(MultimsdError, match=message.replace("(", r"\(").replace(")", r"\)")):
            run(cfg)
        assert not (tmp_path / "bad").exists()
    lstm = config(tmp_path, "llama", "bad", mode="dpo")
    lstm["model"] = {"name": "tiny_lstm", "kind": "lstm", "pretrained": "scratch"}
    lstm["start"] = start
    with pytest.raises(MultimsdError, match="does not sample outputs"):
        run(lstm)

"""LoRA checkpoints hold what trains (the adapter), and resuming from one is exact."""

import pytest
import torch
from safetensors import safe_open

from multimsd.errors import MultimsdError

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def lora_cfg(tmp_path, name, **over):
    cfg = {
        "model": {
            "name": "tiny_llama",
            "kind": "causal",
            "pretrained": "tiny:llama",
            "lora": {"enabled": True, "dropout": 0.0},  # no dropout: losses depend on weights and order only
        },
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 8,
            "max_eval_examples": 2,
            "max_length": 512,
        },
        "optim": {"batch_size": 2, "epochs": 2, "lr": 1e-2},
        "eval": {"generate": False, "before_training": False, "max_new_tokens": 4},
        "checkpoint_every": 1,
        "output_dir": str(tmp_path / name),
    }
    cfg.update(over)
    return cfg


def step_losses(res):
    return [h["loss"] for h in res["history"] if "step" in h]


def saved_keys(ckpt):
    with safe_open(str(ckpt / "model.safetensors"), framework="pt") as f:
        return {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118 (safe_open is not iterable)


@pytest.mark.integration
def test_lora_checkpoint_holds_the_adapter_and_resume_is_exact(tmp_path, monkeypatch):
    from multimsd.training import loop
    from multimsd.training.kinds.transformer import TransformerModelSettings as ModelSettings
    from multimsd.training.modeling import load_model_and_tokenizer

    ref = loop.run(lora_cfg(tmp_path, "ref"))
    expected = step_losses(ref)
    assert len(expected) == 8  # 8 examples / batch 2 x 2 epochs

    # The checkpoint's weights are exactly the trainable (LoRA) parameters, nothing of the frozen base.
    ms = ModelSettings(name="tiny_llama", kind="causal", pretrained="tiny:llama")
    ms.lora.enabled = True
    model, _ = load_model_and_tokenizer(ms)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    ckpt = tmp_path / "ref" / "checkpoints" / "step_00000008"
    weights = saved_keys(ckpt)
    assert set(weights) == trainable and all("lora_" in k for k in weights)
    assert any(v.abs().sum() > 0 for k, v in weights.items() if "lora_B" in k)  # the trained values
    base_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    adapter_bytes = sum(v.numel() * v.element_size() for v in weights.values())
    assert adapter_bytes < 0.2 * base_bytes  # tiny:llama's adapter is ~6 % of its (tiny) base

    real_save = loop.save_checkpoint

    def crash_after_step_3(accelerator, out, state, keep=2):
        real_save(accelerator, out, state, keep)
        if state.step == 3:  # mid-epoch: the resume also has to skip the batches already seen
            raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(loop, "save_checkpoint", crash_after_step_3)
    with pytest.raises(KeyboardInterrupt):
        loop.run(lora_cfg(tmp_path, "killed"))
    monkeypatch.setattr(loop, "save_checkpoint", real_save)
    resumed = loop.run(lora_cfg(tmp_path, "killed"))
    assert resumed["resumed_from"].endswith("step_00000003")
    assert step_losses(resumed) == expected  # exactly (tests/training/test_resume.py: with dropout too)
    # and the adapter it ends with is the reference run's
    final = saved_keys(tmp_path / "killed" / "checkpoints" / "step_00000008")
    for k, v in weights.items():
        assert torch.equal(final[k], v), k


@pytest.mark.integration
def test_checkpoint_of_another_adapter_is_refused(tmp_path):
    from multimsd.training import loop

    loop.run(lora_cfg(tmp_path, "run", optim={"batch_size": 2, "epochs": 1, "lr": 1e-2, "max_steps": 1}))
    ckpt = loop.last_checkpoint(tmp_path / "run")
    # Rewrite the checkpoint's weights without one trainable tensor: resuming must not go on half-loaded.
    from safetensors.torch import save_file

    weights = saved_keys(ckpt)
    dropped = sorted(weights)[0]
    save_file({k: v for k, v in weights.items() if k != dropped}, str(ckpt / "model.safetensors"))
    from multimsd.training.checkpoint import write_manifest

    write_manifest(ckpt)  # a whole checkpoint (of another adapter), not a damaged one: it passes verification
    from accelerate.state import AcceleratorState, GradientState

    AcceleratorState._reset_state(True)
    GradientState._reset_state()
    with pytest.raises(MultimsdError, match="lacks 1 trainable weight"):
        loop.run(lora_cfg(tmp_path, "run", optim={"batch_size": 2, "epochs": 1, "lr": 1e-2, "max_steps": 1}))


@pytest.mark.e2e
def test_full_fine_tuning_checkpoint_is_whole(tmp_path):
    """mBART without LoRA trains every weight: its checkpoint is the whole model, loaded strictly."""
    from multimsd.training import loop

    cfg = lora_cfg(tmp_path, "mbart", optim={"batch_size": 4, "epochs": 1, "lr": 1e-2, "max_steps": 1})
    cfg["model"] = {"name": "tiny_mbart", "kind": "seq2seq", "pretrained": "tiny:mbart"}
    cfg["data"]["max_length"] = 64
    loop.run(cfg)
    weights = saved_keys(loop.last_checkpoint(tmp_path / "mbart"))
    assert "model.shared.weight" in weights or any(k.endswith("embed_tokens.weight") for k in weights)
    assert len(weights) > 50

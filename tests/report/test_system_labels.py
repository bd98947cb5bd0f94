"""The report names each system by what ran (model, prompted k-shot or fine-tuned with LoRA / fully, θ), not by
fixed text; a label the user sets wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from multimsd.paths import conf_dir
from multimsd.pipeline.labels import system_label
from multimsd.pipeline.run import compose, plan


def labels(tmp_path: Path, *overrides: str, train: list[str] = ()) -> dict[str, str]:
    cfg = compose("run", list(overrides), config_dir=conf_dir() / "pipeline")
    cfg.train = [*cfg.train, *train]
    info = next(s for s in plan(cfg, tmp_path / "run") if s.kind == "evaluate").info
    return {name: sc["label"] for name, sc in info.items()}


@pytest.mark.integration
def test_the_default_run_names_smollm2(tmp_path):
    assert labels(tmp_path) == {
        "copy": "copy baseline",
        "zero_shot": "SmolLM2-135M-Instruct 0-shot",
        "finetuned_theta1": "SmolLM2-135M-Instruct + LoRA, θ = 1",
        "finetuned_theta4": "SmolLM2-135M-Instruct + LoRA, θ = 4",
    }


@pytest.mark.integration
def test_a_tiny_run_is_not_called_smollm2(tmp_path):
    got = labels(tmp_path, "debug=tiny")
    assert got["zero_shot"] == "tiny random Llama 0-shot"
    assert got["finetuned_theta4"] == "tiny random Llama + LoRA, θ = 4"
    assert not any("SmolLM2" in v for v in got.values())


@pytest.mark.integration
def test_another_model_and_a_users_label(tmp_path):
    got = labels(
        tmp_path,
        "systems.zero_shot.enabled=false",
        "systems.finetuned.label=My LSTM",
        train=["model=tiny_lstm"],
    )
    assert got == {
        "copy": "copy baseline",
        "finetuned_theta1": "My LSTM, θ = 1",
        "finetuned_theta4": "My LSTM, θ = 4",
    }
    got = labels(tmp_path, "systems.zero_shot.enabled=false", train=["model=tiny_mbart"])
    assert got["finetuned_theta1"] == "tiny random mBART fine-tuned, θ = 1"


@pytest.mark.parametrize(
    ("pretrained", "expected"),
    [
        ("meta-llama/Llama-3.1-8B-Instruct", "Llama-3.1-8B-Instruct + LoRA"),
        ("/models/my-llama/", "my-llama + LoRA"),
    ],
)
def test_hub_ids_and_local_directories(tmp_path, pretrained, expected):
    cfg = compose("train", ["model=tiny_llama", f"model.pretrained={pretrained}"])
    assert system_label("train", cfg) == expected
    assert system_label("icl", cfg) == expected.replace(" + LoRA", " 0-shot")

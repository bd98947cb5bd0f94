"""How the report names a system: by what ran (the model, prompted k-shot or fine-tuned with LoRA or fully),
read from the system's composed train.py config; ``systems.NAME.label`` wins over it."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

# Offline builders and what they build, for the labels of the report.
MODEL_NAMES = {
    "offline:smollm2": "SmolLM2-135M-Instruct",
    "tiny:llama": "tiny random Llama",
    "tiny:mbart": "tiny random mBART",
}


def system_label(kind: str, train_cfg: DictConfig | None) -> str:
    """What a system is, from the config that runs it: the model, prompted k-shot or fine-tuned (with LoRA or
    fully). ``systems.NAME.label`` wins over it; a swept system gets its value appended."""
    if kind == "copy" or train_cfg is None:
        return "copy baseline"
    m = train_cfg.model
    pretrained = str(m.pretrained)
    if pretrained == "scratch":
        model = f"LSTM seq2seq ({m.name})"
    else:
        model = MODEL_NAMES.get(pretrained) or Path(pretrained.rstrip("/")).name or pretrained
    if kind == "icl":
        return f"{model} {train_cfg.icl.shots}-shot"
    lora = m.get("lora")
    return f"{model} + LoRA" if lora is not None and lora.enabled else f"{model} fine-tuned"

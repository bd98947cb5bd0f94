"""Pushing a trained model (or its LoRA adapter, optionally merged) with a model card to the Hub.

The token comes from ``HF_TOKEN`` or ``huggingface-cli login`` through huggingface_hub itself; it is never
read, logged or printed here, and a failed push reports only the error type and the repository.
"""

from __future__ import annotations

import json
import logging
import tempfile
from pathlib import Path

from multimsd.errors import MultimsdError

log = logging.getLogger(__name__)


def _lora(cfg):
    """The LoRA settings of the run's model when it trains an adapter (a kind's own option), else None."""
    from multimsd.training.kinds import get_kind

    lora = getattr(get_kind(cfg.model.kind).settings(cfg.model), "lora", None)
    return lora if lora is not None and lora.enabled else None


QUANTIZED = {"4bit": "4-bit NF4 (double quantization)", "8bit": "8-bit LLM.int8()"}


def _quantization(cfg) -> str:
    """The base's storage in the run (``model.quantization`` of a transformers kind), else ``none``."""
    from multimsd.training.kinds import get_kind

    return getattr(get_kind(cfg.model.kind).settings(cfg.model), "quantization", "none")


def model_card(cfg, results: dict) -> str:
    from omegaconf import OmegaConf

    after = results.get("after") or {}
    test = results.get("test") or {}
    rows = [f"| validation | {after.get('sari', float('nan')):.2f} | {after.get('bleu', float('nan')):.2f} |"]
    if test:
        rows.append(f"| test | {test.get('sari', float('nan')):.2f} | {test.get('bleu', float('nan')):.2f} |")
    langs = "\n".join(f"- {lang}" for lang in cfg.data.languages)
    config_yaml = OmegaConf.to_yaml(OmegaConf.structured(cfg))
    lora = _lora(cfg)
    how = f"with LoRA (r={lora.r}, alpha={lora.alpha})" if lora else "fully fine-tuned"
    quantization = _quantization(cfg)
    if quantization != "none":
        how += f" on a {QUANTIZED[quantization]} base (QLoRA)"
        if cfg.hub.merge_lora:
            how += (
                f"; the adapter is merged into that base dequantized to {cfg.model.dtype} (the weights it was "
                "trained against, not the original full-precision ones)"
            )
    return f"""---
language:
{langs}
tags:
- medical
- text-simplification
- multimsd
base_model: {cfg.model.pretrained}
---
# {cfg.model.name} for medical text simplification

Fine-tuned with multimsd (MultiMSD recipe): {cfg.model.kind} model `{cfg.model.pretrained}`
{how},
{cfg.data.mode}lingual data ({", ".join(cfg.data.languages)}), novel-token weighted loss θ = {cfg.loss.theta}.

| split | SARI | BLEU |
|---|---:|---:|
{chr(10).join(rows)}

## Training configuration

```yaml
{config_yaml}```
"""


def prepare_upload(cfg, best_dir: Path, results: dict, target: Path) -> Path:
    """Write what gets uploaded into ``target``: the model (merged if asked) or adapter, tokenizer, card."""
    import shutil

    if _lora(cfg) and cfg.hub.merge_lora:
        from multimsd.training.kinds import get_kind

        kind = get_kind(cfg.model.kind)
        if _quantization(cfg) != "none":  # QLoRA: into the base it was trained against, dequantized
            from multimsd.training.quantization import merged_model

            base = json.loads((best_dir / "adapter_config.json").read_text())["base_model_name_or_path"]
            merged = merged_model(kind, kind.settings(cfg.model), best_dir, base)
        else:
            auto = kind.peft_auto_class()  # peft's AutoPeftModelFor… of the kind
            merged = auto.from_pretrained(str(best_dir)).merge_and_unload()
        merged.save_pretrained(str(target))
        for f in best_dir.iterdir():
            if f.name.startswith(("tokenizer", "special_tokens", "vocab", "merges", "chat_template")):
                shutil.copy2(f, target / f.name)
    else:
        shutil.copytree(best_dir, target, dirs_exist_ok=True)
    (target / "README.md").write_text(model_card(cfg, results), encoding="utf-8")
    (target / "multimsd_results.json").write_text(
        json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8"
    )
    return target


def push_model(cfg, best_dir: Path, results: dict) -> None:
    from huggingface_hub import HfApi

    if not best_dir.exists():
        raise MultimsdError(f"nothing to push: {best_dir} does not exist")
    with tempfile.TemporaryDirectory() as tmp:
        folder = prepare_upload(cfg, best_dir, results, Path(tmp))
        try:
            api = HfApi()
            api.create_repo(cfg.hub.repo_id, private=cfg.hub.private, exist_ok=True)
            api.upload_folder(
                folder_path=str(folder), repo_id=cfg.hub.repo_id, commit_message="multimsd: trained model"
            )
        except Exception as e:  # never echo the token: type and repository only
            raise MultimsdError(
                f"push to {cfg.hub.repo_id!r} failed ({type(e).__name__}); the model is in {best_dir}"
            ) from None
    log.info("pushed to https://huggingface.co/%s", cfg.hub.repo_id)

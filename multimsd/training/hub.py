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


def _evaluation_rows(evaluation: dict | None) -> list[str]:
    """The card's rows of a run's evaluation on test: per language SARI, BLEU and the safety flags, each with
    its 95 % bootstrap interval when the run computed one."""
    rows = []
    for lang, scores in (evaluation or {}).items():
        ci = scores.get("ci") or {}

        def cell(key: str, scores=scores, ci=ci) -> str:
            if scores.get(key) is None:
                return ""
            lo_hi = ci.get(key)
            return f"{scores[key]:.2f}" + (f" [{lo_hi[0]:.2f}, {lo_hi[1]:.2f}]" if lo_hi else "")

        rows.append(f"| {lang} | {cell('sari')} | {cell('bleu')} | {cell('safety')} |")
    return rows


def _repo_id(name: str) -> bool:
    """Whether ``name`` is spelt as a Hub repository id (huggingface_hub's own rule: ``owner/name`` or a legacy
    ``name``; no ``:``, no second ``/``)."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(name)
    except HFValidationError:
        return False
    return True


def _hub_id(name: str) -> bool:
    """Whether ``name`` names a Hub repository: spelt as one and no path here (a name that is also a local path
    was read from the disk, and a path means nothing on the Hub)."""
    from multimsd.io import looks_like_path

    return _repo_id(name) and not looks_like_path(name) and not Path(name).expanduser().exists()


def card_base_model(pretrained: str) -> tuple[str | None, str]:
    """The card's ``base_model`` (the Hub id of the model fine-tuned; None where there is none) and the card's
    words for that model. An ``offline:`` build names the Hub model it is a copy of
    (:data:`~multimsd.training.models.offline.OFFLINE_ORIGINS`); a ``tiny:`` or ``random:`` model (random
    weights), a local directory and the LSTM's ``scratch`` have no Hub id, so the card says so instead."""
    from multimsd.training.models.offline import hub_origin

    if origin := hub_origin(pretrained):
        hub_id, how = origin
        return hub_id, f"[{hub_id}](https://huggingface.co/{hub_id}) as multimsd's `{pretrained}` ({how})"
    if pretrained != "scratch" and _hub_id(pretrained):
        return pretrained, f"[{pretrained}](https://huggingface.co/{pretrained})"
    if pretrained == "scratch":
        what = "none: trained from scratch"
    elif ":" in pretrained:  # tiny:<name>, random:<architecture>
        what = f"`{pretrained}`, multimsd's randomly initialised model for tests and benchmarks, on no Hub"
    else:  # a name is all the card gives of a path: the rest is this machine's
        what = f"a local directory (`{Path(pretrained.rstrip('/')).name}`), not a Hub model"
    return None, f"{what} (so the metadata names no `base_model`)"


def card_dataset(path: str | None) -> str | None:
    """The Hub id of the training data, or None (a local path is never one): ``data.path`` is an ``align.py``
    output that was pushed to the Hub (its ``align_config.yaml`` has ``output.push_to_hub`` and
    ``output.hub_repo_id``), or a Hub dataset the Hugging Face cache holds. The cache is asked because a
    relative directory that is not here (``outputs/aligned``, seen from another directory) is spelt like one."""
    from omegaconf import OmegaConf

    from multimsd.config import ALIGN_CONFIG_FILE
    from multimsd.io import in_hub_cache

    if path is None:  # the bundled sample
        return None
    local = Path(path).expanduser()
    if (local / ALIGN_CONFIG_FILE).is_file():
        try:
            output = OmegaConf.load(local / ALIGN_CONFIG_FILE).get("output") or {}
        except Exception:  # a damaged record claims nothing
            return None
        repo = str(output.get("hub_repo_id") or "")
        return repo if output.get("push_to_hub") and _repo_id(repo) else None
    return path if _hub_id(path) and in_hub_cache(path, "dataset") else None


def _data_words(path: str | None, dataset: str | None) -> str:
    if dataset:
        return f"[{dataset}](https://huggingface.co/datasets/{dataset})"
    if path is None:
        return (
            "the sample corpus bundled with multimsd, not a Hub dataset (so the metadata names no `datasets`)"
        )
    return (
        "a local corpus, not pushed to the Hub (so the metadata names no `datasets`; `align.py "
        "output.push_to_hub=true output.hub_repo_id=…` publishes an aligned corpus, and the card then names it)"
    )


LICENSE_NOTE = (
    "# license: not set here: the licenses of the base model and of the training data apply; add yours"
)


def card_metadata(cfg) -> tuple[str, str, str]:
    """The card's YAML metadata, built and written by huggingface_hub's own ``ModelCardData`` (what the Hub
    reads; ``base_model`` and ``datasets`` only as Hub ids, left out where there are none), and the words of the
    body for the base model and the data."""
    from huggingface_hub import ModelCardData

    base_model, base_words = card_base_model(str(cfg.model.pretrained))
    dataset = card_dataset(cfg.data.path)
    data = ModelCardData(
        language=list(cfg.data.languages),
        base_model=base_model,
        datasets=[dataset] if dataset else None,
        metrics=["sari", "bleu"],
        tags=["medical", "text-simplification", "multimsd"],
    )
    order = ["language", "base_model", "datasets", "metrics", "tags"]
    metadata = data.to_yaml(original_order=order) + "\n" + LICENSE_NOTE
    return metadata, base_words, _data_words(cfg.data.path, dataset)


# The settings that name places on the training machine: what they pointed at means nothing to a reader of a
# published card, and a home directory is the author's own business.
PATH_SETTINGS = ("start", "model.pretrained", "data.path", "output.dir", "output_dir")


def card_config(cfg) -> dict:
    """The training settings as the card prints them: every local path (a path setting that does not name a
    Hub id, or any other value spelt as a path) cut to ``<local>/NAME``, its last component; Hub ids and
    multimsd's own model names are kept."""
    from omegaconf import OmegaConf

    from multimsd.io import looks_like_path

    settings = OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True)
    hub_ids = {card_base_model(str(cfg.model.pretrained))[0], card_dataset(cfg.data.path)} - {None}

    def local(value: str) -> str:
        return f"<local>/{Path(value.rstrip('/')).name}"

    def walk(node, where: str):
        if isinstance(node, dict):
            return {key: walk(value, f"{where}{key}.") for key, value in node.items()}
        if isinstance(node, list):
            return [walk(value, where) for value in node]
        if not isinstance(node, str) or node in hub_ids:
            return node
        if where.rstrip(".") in PATH_SETTINGS:  # offline:…, random:…, scratch are names, not places
            return node if ":" in node or node == "scratch" else local(node)
        return local(node) if looks_like_path(node) and not any(c.isspace() for c in node) else node

    return walk(settings, "")


def _how_trained(cfg) -> str:
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
    return how


def model_card(cfg, results: dict, evaluation: dict | None = None) -> str:
    """README.md of the model directory: YAML metadata (languages, base model and data as Hub ids, metrics; the
    license is the user's to fill in) and the training's numbers; ``evaluation``: a run's test scores per
    language."""
    from omegaconf import OmegaConf

    after = results.get("after") or {}
    test = results.get("test") or {}
    rows = []
    if "sari" in after:  # the best epoch's validation scores (none when validation did not generate)
        rows.append(f"| validation | {after['sari']:.2f} | {after.get('bleu', float('nan')):.2f} |")
    if test:
        rows.append(f"| test | {test.get('sari', float('nan')):.2f} | {test.get('bleu', float('nan')):.2f} |")
    metadata, base_words, data_words = card_metadata(cfg)
    config_yaml = OmegaConf.to_yaml(card_config(cfg))
    evaluated = _evaluation_rows(evaluation)
    run_table = ""
    if evaluated:
        run_table = (
            "\n## Evaluation on the run's test split\n\n"
            "SARI and BLEU (higher is better) and safety flags (% of output sentences whose numbers, units or "
            "negations differ from the source; lower is better), with 95 % bootstrap intervals.\n\n"
            "| language | SARI | BLEU | safety flags % |\n|---|---:|---:|---:|\n"
            + "\n".join(evaluated)
            + "\n"
        )
    return f"""---
{metadata}
---
# {cfg.model.name} for medical text simplification

Fine-tuned with multimsd (MultiMSD recipe): a {cfg.model.kind} model {_how_trained(cfg)},
{cfg.data.mode}lingual data ({", ".join(cfg.data.languages)}), novel-token weighted loss θ = {cfg.loss.theta}.

- Base model: {base_words}
- Training data: {data_words}

| split | SARI | BLEU |
|---|---:|---:|
{chr(10).join(rows)}
{run_table}
## Decoding

`generation_config.json` holds the settings the evaluation decoded with.{_decoding_note(cfg)}

## Training configuration

```yaml
{config_yaml}```
"""


def _decoding_note(cfg) -> str:
    if cfg.model.kind == "seq2seq":
        return (
            " mBART-50 is given the language's code as the tokenizer's `src_lang` and as "
            "`forced_bos_token_id` (e.g. `en_XX`), as the evaluation does."
        )
    if cfg.model.kind == "causal":
        return (
            f" Each sentence is one user turn of the tokenizer's chat template: the instruction of its language "
            f"(`{PROMPT_FILE}`), a blank line, the sentence; the answer is the simplified sentence."
        )
    return ""


def write_generation_config(cfg, target: Path) -> dict:
    """``generation_config.json`` in ``target`` with the settings the evaluation decoded with (the kind's
    :meth:`~multimsd.training.kinds.base.ModelKind.generation_settings`) over those the model saved."""
    from transformers import GenerationConfig

    from multimsd.training.kinds import get_kind

    settings = get_kind(cfg.model.kind).generation_settings(cfg)
    try:
        config = GenerationConfig.from_pretrained(str(target))
    except OSError:  # an adapter alone saves none
        config = GenerationConfig()
    config.update(**settings)
    config.save_pretrained(str(target))
    return settings


PROMPT_FILE = "multimsd_prompt.json"


def write_prompt(cfg, target: Path) -> bool:
    """For a chat model: the instruction it was trained and evaluated with, per language, and how the user turn
    is put together (``multimsd_prompt.json``); a seq2seq model takes the sentence as it is (False)."""
    if cfg.model.kind != "causal":
        return False
    from multimsd.training.prompts import INSTRUCTIONS

    prompt = {
        "user_turn": "{instruction}\n\n{sentence}",
        "instructions": {lang: INSTRUCTIONS[lang] for lang in cfg.data.languages if lang in INSTRUCTIONS},
        "chat_template": "the tokenizer's (apply_chat_template with add_generation_prompt=True)",
    }
    (target / PROMPT_FILE).write_text(
        json.dumps(prompt, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    return True


def prepare_upload(cfg, best_dir: Path, results: dict, target: Path, evaluation: dict | None = None) -> Path:
    """Write what gets uploaded into ``target``: the model (merged if asked) or adapter, tokenizer, the
    evaluation's decoding settings (``generation_config.json``), the prompt of a chat model, the card.
    ``evaluation``: the system's scores with their intervals from a run's ``results.json``, for the card."""
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
    write_generation_config(cfg, target)
    write_prompt(cfg, target)
    (target / "README.md").write_text(model_card(cfg, results, evaluation), encoding="utf-8")
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

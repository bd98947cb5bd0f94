"""QLoRA: the frozen base of a LoRA model quantized by bitsandbytes, the adapter trained in full precision.

``model.quantization=4bit`` loads the base as QLoRA does (Dettmers et al. 2023): NF4 weights with double
quantization (the block scales quantized too: ~0.4 bit a parameter less), dequantized block by block to the
run's ``model.dtype`` for each matmul (bfloat16 on a GPU); ``8bit`` is LLM.int8(). Llama-3.1-8B then needs
~5.5 GiB for its weights instead of 16, so the paper's 8B recipe fits the 24 GB cards most labs have.

Why these steps:

* **LoRA only.** A 4-bit weight has no gradient; only an adapter beside it can learn. Full fine-tuning with
  ``quantization`` set is refused at start-up, as is a missing bitsandbytes (an optional extra,
  ``pip install 'multimsd[qlora]'``: 43 MB, not needed by anyone who does not quantize).
* **peft's ``prepare_model_for_kbit_training``**: it freezes the base and casts its remaining half-precision
  parameters (norms, embeddings, the output head) to float32, which keeps the 4-bit training stable.
* **Gradient checkpointing on by default** (``model.gradient_checkpointing=null``): QLoRA is chosen to save
  memory, and the activations are then the largest part left. Non-reentrant checkpointing, which needs no
  input-gradient hack and works with the adapter's frozen inputs.
* **Checkpoints hold the adapter alone** (multimsd.training.checkpoint keeps what trains); a resume loads the
  quantized base afresh: NF4 quantization is deterministic, so it is the same base.
* **Merging for the Hub** dequantizes the base (the exact NF4 values, in ``model.dtype``) and merges the adapter
  into that: the weights the adapter was trained against, not the original full-precision ones
  (:func:`merged_model`). The model card says so.
* A ``random:<architecture>`` model (benchmarks) has no weights on disk for transformers to quantize while
  loading: it is built and then quantized layer by layer (:func:`quantize_in_place`), the same layers.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from multimsd.errors import MultimsdError

QUANTIZATIONS = ("none", "4bit", "8bit")
EXTRA = "pip install 'multimsd[qlora]'"


def torch_dtype(name: str):
    """``model.dtype`` (checked by the model kind before anything is loaded) as a torch dtype."""
    import torch

    return getattr(torch, name)


def require_bitsandbytes(what: str) -> None:
    """One line naming the extra when bitsandbytes is not installed."""
    if importlib.util.find_spec("bitsandbytes") is None:
        raise MultimsdError(f"{what} needs bitsandbytes, which is not installed: {EXTRA}")


def check_quantization(ms) -> None:
    """``ms`` (a transformers kind's model settings): a known value, LoRA on, bitsandbytes installed."""
    q = ms.quantization
    if q not in QUANTIZATIONS:
        raise MultimsdError(f"model.quantization={q!r}: choose {', '.join(QUANTIZATIONS)}")
    if q == "none":
        return
    if not ms.lora.enabled:
        raise MultimsdError(
            f"model.quantization={q} freezes the base in {q}: only a LoRA adapter can train beside it; "
            "set model.lora.enabled=true (or model.quantization=none for full fine-tuning)"
        )
    require_bitsandbytes(f"model.quantization={q}")


def uses_gradient_checkpointing(ms) -> bool:
    """``model.gradient_checkpointing``; null means on with a quantized base (QLoRA's recipe), else off."""
    if ms.gradient_checkpointing is None:
        return getattr(ms, "quantization", "none") != "none"
    return bool(ms.gradient_checkpointing)


def bnb_config(ms):
    """transformers' BitsAndBytesConfig of ``ms.quantization`` (4bit: NF4, double quantization, computing in
    ``ms.dtype``)."""
    from transformers import BitsAndBytesConfig

    if ms.quantization == "4bit":
        return BitsAndBytesConfig(
            load_in_4bit=True,
            bnb_4bit_quant_type="nf4",
            bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch_dtype(ms.dtype),
        )
    return BitsAndBytesConfig(load_in_8bit=True)


def load_kwargs(ms) -> dict:
    """What ``from_pretrained`` takes to load the base quantized on this process's device (one device a
    process: under ``accelerate launch`` each process holds its own copy, as DDP wants)."""
    if ms.quantization == "none":
        return {}
    from accelerate import PartialState

    return {"quantization_config": bnb_config(ms), "device_map": {"": PartialState().device}}


def quantize_in_place(model, ms):
    """Replace the linear layers of ``model`` (all but its output head) with bitsandbytes' quantized ones holding
    the same weights, on the model's device; for a model built from its configuration (``random:``)."""
    import bitsandbytes as bnb
    import torch

    head = model.get_output_embeddings()
    device = next(model.parameters()).device
    for parent in list(model.modules()):
        for name, child in list(parent.named_children()):
            if type(child) is not torch.nn.Linear or child is head:
                continue
            weight = child.weight.data
            if ms.quantization == "4bit":
                layer = bnb.nn.Linear4bit(
                    child.in_features,
                    child.out_features,
                    bias=child.bias is not None,
                    compute_dtype=torch_dtype(ms.dtype),
                    compress_statistics=True,  # double quantization
                    quant_type="nf4",
                    device="meta",
                )
                layer.weight = bnb.nn.Params4bit(
                    weight, requires_grad=False, compress_statistics=True, quant_type="nf4"
                )
            else:
                layer = bnb.nn.Linear8bitLt(
                    child.in_features,
                    child.out_features,
                    bias=child.bias is not None,
                    has_fp16_weights=False,
                    device="meta",
                )
                layer.weight = bnb.nn.Int8Params(weight, requires_grad=False, has_fp16_weights=False)
            if child.bias is not None:
                layer.bias = child.bias
            setattr(parent, name, layer.to(device))  # .to() quantizes; the full-precision weight is freed
    setattr(model, f"is_loaded_in_{ms.quantization}", True)  # what peft and accelerate look for
    if device.type == "cuda":
        torch.cuda.empty_cache()
    return model


def no_cpu_repacking(model) -> int:
    """Keep bitsandbytes' 4-bit layers in the format they were quantized in on a CPU. On CPUs with AVX512-BF16,
    an eval-mode forward without gradients (validation, decoding) repacks a layer's weights into a CPU inference
    layout in place; the repacking fails for layers narrower than a quantization block (64 inputs: the tiny
    models of the tests, ``RuntimeError: shape '[32, 0]' is invalid``), and it made the numbers of a CPU run
    depend on the CPU's instruction set. GPUs never take that path. Returns the layers changed."""
    n = 0
    for layer in model.modules():
        if getattr(layer, "support_avx512bf16_for_cpu", False):
            layer.support_avx512bf16_for_cpu = False
            n += 1
    return n


def prepare_for_training(model, ms):
    """peft's preparation of a quantized base (frozen, the rest in float32, checkpointing as configured)."""
    from peft import prepare_model_for_kbit_training

    no_cpu_repacking(model)
    return prepare_model_for_kbit_training(
        model,
        use_gradient_checkpointing=uses_gradient_checkpointing(ms),
        gradient_checkpointing_kwargs={"use_reentrant": False},
    )


def is_quantized_layer(layer) -> bool:
    """Whether a linear layer's weight is stored quantized (a LoRA merge into it would not be exact)."""
    weight = getattr(layer, "weight", None)
    return weight is not None and not weight.dtype.is_floating_point


def merged_model(kind, ms, adapter_dir: Path, base_path: str):
    """The adapter at ``adapter_dir`` merged into the base of ``base_path`` loaded as the run loaded it and
    then dequantized to ``ms.dtype``: the base the adapter was trained against."""
    from peft import PeftModel

    base = kind.auto_class().from_pretrained(base_path, dtype=torch_dtype(ms.dtype), **load_kwargs(ms))
    base = base.dequantize()
    base.to(torch_dtype(ms.dtype))
    return PeftModel.from_pretrained(base, str(adapter_dir)).merge_and_unload()

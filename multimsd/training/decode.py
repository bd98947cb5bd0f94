"""What every model kind's decoding shares: length-sorted batches under a token budget, and LoRA merged for it.

**Batches** (:func:`length_batches`). Decoding rows in input order in fixed chunks pads every short row to
the longest of its chunk and makes a chunk of short rows as small as one of long rows. Instead the rows are
sorted by encoded input length, longest first (an out-of-memory shows in the first batch, not the last), and
a batch takes rows while ``rows * (longest input + max_new_tokens) <= eval.max_batch_tokens``: the size of
the batch's KV cache at the end of decoding, the quantity that bounds memory. ``eval.max_batch_tokens=0``
keeps the old way (input order, ``eval.batch_size`` rows a batch). Either way the outputs come back in input
order (:func:`decode_batches`). The causal kind also computes the prompt head a language's rows share only
once (:func:`shared_prefix_lengths`, ``multimsd.training.kinds.causal.PromptHeads``).

**The budget** (:func:`batch_token_budget`). ``eval.max_batch_tokens=auto`` (the default) sizes it from the
device: on a CPU it is 8192 (the best of 4096 … 32768 on the 2-core CPU, see ``EvalSettings``); on CUDA it is
what the free memory holds (:func:`auto_batch_tokens`): 90 % of the free memory less 1 GiB, divided by a
token's KV cache (:func:`kv_cache_bytes_per_token`, times ``num_beams``: every beam has its own cache) plus
a token's prefill activations (:func:`activation_bytes_per_token`). On a GPU decoding is memory-bound and its
throughput grows about linearly with the rows of a batch, so the biggest batch that fits is the fastest; the
old fixed 8192 cut 128 prompts of Llama-8B with 256 new tokens into 7 batches of 14–21 rows (issue #30).

**Backends** (``eval.backend``, :data:`BACKENDS`). ``generate``: ``model.generate`` on each batch (every
kind). The causal kind also has ``static``: transformers' static KV cache (``cache_implementation="static"``),
which on CUDA makes ``generate`` compile the decoding step (``torch.compile``, CUDA graphs); the batch sizes
are rounded down to powers of two (:func:`bucketed`) and the cache keeps the length of the first (longest)
batch, so a decode compiles a handful of graphs, not one per batch. And ``continuous``: transformers' continuous batching
(``model.generate_batch``, a paged KV cache; the rows are scheduled by transformers, not in batches here).
All give plain ``generate``'s greedy tokens in float32 (``tests/training/test_decode_backends.py``).

**Cut outputs** (:class:`Generated`, :func:`cut_at_cap`). Every built-in kind returns its outputs as
:class:`Generated` records, the text and whether generation stopped because it reached the token cap
(``eval.max_new_tokens``) rather than at an end-of-sequence token; the training stage writes that next to the
predictions (:func:`multimsd.training.predict.write_generation_info`) and the evaluation reports the share of
cut outputs. A plugin kind that returns plain strings leaves it unknown.

**Outputs that cannot run away** (:func:`row_caps`, :func:`keep_to_caps`). A simplification is not much longer
than its source, but a model that loops writes until the cap: 256 tokens for a 10-token sentence, the cost of
the whole batch. So each row's cap is also ``ceil(eval.length_ratio × its source's tokens) +
eval.length_margin`` (2 × + 32 by default: on CLARA-MeD, where references explain abbreviations at length,
that bound cuts 1.8 % of the references that 64 tokens would not). A batch generates up to its rows' largest
cap (length-sorted batches hold rows of similar length) and each row is then kept to its own cap; a row that
reached its cap without an end token is cut. ``eval.length_ratio=null``: ``max_new_tokens`` alone.

**LoRA** (:func:`merged_lora`). peft runs every adapted linear layer as the base matmul plus two small
adapter matmuls; merged (``W + s·BA``) it is one matmul again, merged once per decoding call, in place on the
device. The model keeps training after the per-epoch validation generation and a resumed run must be
bit-exact, so the base weights are copied aside before the merge and copied back after: ``unmerge_adapter()``
alone (``W + s·BA - s·BA``) does not give ``W`` back in floating point. The copy stays on the device when it
takes at most half of the device's free memory (a device-to-device copy; the other half is left to the
decoding batch), else it goes to host memory. The final predictions, after which the model trains no more,
merge with no copy at all (``restore=False``): the model stays merged.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

log = logging.getLogger(__name__)

# The progress of the decoding under way (a bar, or its lines off a terminal: multimsd.console.progress_bar),
# advanced by decode_batches after each batch. A context variable, not a parameter: every kind's generate()
# (a plugin's too) reaches decode_batches with the same arguments as before.
_PROGRESS: ContextVar[Any] = ContextVar("multimsd_decoding_progress", default=None)


@contextmanager
def decoding_progress(bar: Any) -> Iterator[None]:
    """Within the block, :func:`decode_batches` advances ``bar`` (``update(rows)``) after each batch."""
    token = _PROGRESS.set(bar)
    try:
        yield
    finally:
        _PROGRESS.reset(token)


T = TypeVar("T")

BACKENDS = ("generate", "static", "continuous")
"""The values of ``eval.backend``; the causal kind has all of them, every other kind ``generate`` only."""

CPU_BATCH_TOKENS = 8192
"""``eval.max_batch_tokens=auto`` on a CPU (and wherever the device's free memory is unknown)."""

GIB = 1 << 30


def check_max_batch_tokens(value: Any) -> int | str:
    """``eval.max_batch_tokens`` as given, if it is ``auto`` or an int >= 0; else one clear error."""
    from multimsd.errors import MultimsdError

    if value == "auto" or (isinstance(value, int) and not isinstance(value, bool) and value >= 0):
        return value
    raise MultimsdError(
        f"eval.max_batch_tokens={value!r}: choose auto (sized from the device's free memory) or a number of "
        "tokens >= 0 (0 = input order, eval.batch_size rows a batch)"
    )


def check_backend(value: Any, allowed: Sequence[str] = BACKENDS, kind: str | None = None) -> str:
    """``eval.backend`` as given if it is one of ``allowed`` (the backends of model kind ``kind``); else one
    clear error naming what works."""
    from multimsd.errors import MultimsdError

    if value in allowed:
        return value
    where = f" for model.kind={kind}" if kind else ""
    raise MultimsdError(f"eval.backend={value!r}{where}: choose {' or '.join(allowed)}")


def kv_cache_bytes_per_token(config, dtype_bytes: int, num_beams: int = 1) -> int:
    """Bytes of KV cache one token of a decoding batch takes, from a transformers model ``config``.

    A decoder-only model: keys and values of every layer, ``2 * layers * kv heads * head dim * dtype_bytes``
    (Llama-3.1-8B in bf16: 2 * 32 * 8 * 128 * 2 = 131,072). An encoder-decoder (``is_encoder_decoder``):
    the budget counts a row's source tokens and its new tokens alike, and each takes a decoder layer's keys and
    values (cross-attention for a source token, self-attention for a new one; mBART's layers have the same
    shape for both) plus, for a source token, the encoder's output kept for the cross-attention: ``(2 *
    decoder layers * heads * head dim + d_model) * dtype_bytes``. Beam search keeps a cache per beam:
    times ``num_beams``.
    """
    enc_dec = bool(getattr(config, "is_encoder_decoder", False))
    if enc_dec:
        layers = getattr(config, "decoder_layers", None) or config.num_hidden_layers
        heads = getattr(config, "decoder_attention_heads", None) or config.num_attention_heads
        hidden = getattr(config, "d_model", None) or config.hidden_size
        kv_heads = heads
    else:
        layers = config.num_hidden_layers
        heads = config.num_attention_heads
        hidden = config.hidden_size
        kv_heads = getattr(config, "num_key_value_heads", None) or heads
    head_dim = getattr(config, "head_dim", None) or hidden // heads
    per_token = 2 * layers * kv_heads * head_dim + (hidden if enc_dec else 0)
    return per_token * dtype_bytes * max(num_beams, 1)


def activation_bytes_per_token(config, dtype_bytes: int) -> int:
    """An upper bound of the activations one prompt token holds at the peak of the prefill: the residual stream
    and an MLP's two intermediate projections (gate and up; mBART's fc1 and its activation) of the layer being
    computed, ``(hidden + 2 * intermediate) * dtype_bytes`` (Llama-3.1-8B in bf16: (4096 + 2 * 14336) * 2 =
    65,536). The budget charges it on every token, new ones too: safe, and cheap next to the KV cache."""
    hidden = getattr(config, "d_model", None) or config.hidden_size
    inter = (
        getattr(config, "intermediate_size", None)
        or getattr(config, "decoder_ffn_dim", None)
        or getattr(config, "ffn_dim", None)
        or 4 * hidden
    )
    return (hidden + 2 * inter) * dtype_bytes


def auto_batch_tokens(free_bytes: int, kv_per_token: int, act_per_token: int = 0) -> int:
    """The token budget of a decoding batch that ``free_bytes`` of device memory hold: 90 % of them less 1 GiB
    (the logits of a step, allocator fragmentation, whatever else the device holds meanwhile), divided by
    what a token takes (its KV cache and prefill activations). At least 1 (a row over the budget is still
    decoded, alone)."""
    usable = int(free_bytes * 0.9) - GIB
    return max(usable // max(kv_per_token + act_per_token, 1), 1)


def free_device_bytes(device) -> int | None:
    """Free memory of a CUDA ``device`` in bytes (the driver's free memory plus what PyTorch's allocator
    holds unused), or None for any other device."""
    import torch

    device = torch.device(device)
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    free, _ = torch.cuda.mem_get_info(device)
    return int(free + torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device))


def _text_config(model):
    config = getattr(model, "config", None)
    if config is not None and hasattr(config, "get_text_config"):
        try:
            return config.get_text_config(decoder=True)
        except TypeError:  # an older transformers
            return config.get_text_config()
    return config


def batch_token_budget(settings, model=None) -> int:
    """``eval.max_batch_tokens`` as a number: itself, or for ``auto`` the budget of the model's device
    (:func:`auto_batch_tokens`; :data:`CPU_BATCH_TOKENS` on a CPU, or without a transformers model)."""
    value = check_max_batch_tokens(settings.max_batch_tokens)
    if value != "auto":
        return value
    if model is None:
        return CPU_BATCH_TOKENS
    import torch

    param = next(iter(model.parameters()), None)
    config = _text_config(model)
    free = free_device_bytes(param.device) if param is not None else None
    if free is None or config is None or not hasattr(config, "num_attention_heads"):
        return CPU_BATCH_TOKENS
    dtype_bytes = torch.finfo(param.dtype).bits // 8 if param.dtype.is_floating_point else 4
    beams = getattr(settings, "num_beams", 1)
    kv = kv_cache_bytes_per_token(config, dtype_bytes, beams)
    act = activation_bytes_per_token(config, dtype_bytes)
    tokens = auto_batch_tokens(free, kv, act)
    log.info(
        "eval.max_batch_tokens=auto: %d tokens (%.1f GiB free, %d bytes of KV cache and %d of activations a token)",
        tokens,
        free / GIB,
        kv,
        act,
    )
    return tokens


@dataclass(frozen=True)
class Generated:
    """One decoded output: its ``text``, and whether generation stopped at the token cap instead of at an
    end-of-sequence token (``cut``: True / False, or None where unknown, e.g. a plugin kind that returns plain
    strings: :func:`as_generated`). Two fields, said: not a string that carries a flag on the side."""

    text: str
    cut: bool | None = None


def as_generated(output: Generated | str) -> Generated:
    """A kind's output as :class:`Generated`: a plain string (a plugin kind's) is its text, cut unknown."""
    return output if isinstance(output, Generated) else Generated(str(output))


def eos_token_ids(model, tokenizer) -> list[int]:
    """The token ids that end a generation: the model's generation config's, else the tokenizer's."""
    ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if ids is None:
        ids = getattr(tokenizer, "eos_token_id", None)
    if ids is None:
        return []
    return [int(i) for i in (ids if isinstance(ids, list | tuple) else [ids])]


def row_caps(source_lengths: Sequence[int], settings, cap: int | None = None) -> list[int]:
    """Each row's cap on new tokens (``settings``: the ``eval`` section): ``cap`` (``max_new_tokens`` without
    it), and with ``length_ratio`` set, at most ``ceil(length_ratio × its source's tokens) + length_margin``."""
    cap = settings.max_new_tokens if cap is None else cap
    ratio = getattr(settings, "length_ratio", None)
    if ratio is None:
        return [cap] * len(source_lengths)
    return [min(cap, math.ceil(ratio * n) + settings.length_margin) for n in source_lengths]


def keep_to_caps(
    tokens, eos_ids: Sequence[int], caps: Sequence[int], forced_last: bool = False
) -> tuple[list[list[int]], list[bool | None]]:
    """Rows of generated ``tokens [rows, steps]`` (the new tokens of a batch generated up to ``max(caps)``),
    each kept to its own cap, and per row whether it was cut: True where it holds no end token within its cap
    and reached it (:func:`cut_at_cap` of the kept tokens). ``forced_last``: the model forces an end token at
    the batch's cap (mBART), which a row whose cap is the batch's does not count as an end."""
    kept = [row[:cap] for row, cap in zip(tokens.tolist(), caps)]
    if not eos_ids:
        return kept, [None] * len(kept)
    ends, width = set(eos_ids), int(tokens.shape[1])
    cut: list[bool | None] = []
    for row, cap in zip(kept, caps):
        forced = forced_last and cap >= width == max(caps)  # the row ran to the forced end
        if len(row) < cap:  # the batch stopped before this row's cap: every row had ended
            cut.append(False)
        else:
            cut.append(not ends.intersection(row[: cap - 1] if forced else row))
    return kept, cut


def cut_at_cap(tokens, eos_ids: Sequence[int], cap: int, forced_last: bool = False) -> list[bool | None]:
    """Per row of generated ``tokens [rows, steps]`` (the new tokens only): True where the row holds no
    end-of-sequence token and generation ran to ``cap`` tokens, i.e. it was cut at the cap rather than
    ended. A row that ends with EOS exactly at the cap is not cut, unless ``forced_last``: the model forces an
    end token at the cap (mBART's ``forced_eos_token_id``), so an end there is the cut itself. None for every
    row when the end tokens are unknown."""
    import torch

    rows = int(tokens.shape[0])
    if not eos_ids:
        return [None] * rows
    if tokens.shape[1] < cap:  # generation stopped before the cap: every row ended
        return [False] * rows
    if forced_last:
        tokens = tokens[:, : cap - 1]
    ended = torch.isin(tokens, torch.tensor(list(eos_ids), device=tokens.device)).any(dim=1)
    return [not bool(e) for e in ended.tolist()]


def forces_end(model) -> bool:
    """Whether ``model.generate`` forces an end token at the length cap (``forced_eos_token_id``)."""
    return getattr(getattr(model, "generation_config", None), "forced_eos_token_id", None) is not None


def length_batches(
    lengths: Sequence[int], max_tokens: int, max_new_tokens: int, max_rows: int | None = None
) -> list[list[int]]:
    """Row indices grouped into decoding batches.

    ``max_tokens > 0``: the indices sorted by ``lengths``, longest first (ties in input order), and a batch
    filled while ``rows * (its longest length + max_new_tokens) <= max_tokens``; a row longer than the budget
    alone gets a batch of its own. ``max_rows`` (optional) caps the rows of a batch as well.
    ``max_tokens <= 0``: input order in chunks of ``max_rows`` rows (all rows in one batch without it).
    """
    n = len(lengths)
    if max_tokens <= 0:
        step = max_rows or max(n, 1)
        return [list(range(s, min(s + step, n))) for s in range(0, n, step)]
    order = sorted(range(n), key=lambda k: -lengths[k])  # sorted() is stable: ties keep input order
    batches: list[list[int]] = []
    for k in order:
        batch = batches[-1] if batches else None
        # sorted longest first: the batch's first row is its longest, and adding a row never lengthens it
        fits = (
            batch is not None
            and (len(batch) + 1) * (lengths[batch[0]] + max_new_tokens) <= max_tokens
            and (max_rows is None or len(batch) < max_rows)
        )
        if fits:
            batch.append(k)
        else:
            batches.append([k])
    return batches


def bucketed(batches: list[list[int]]) -> list[list[int]]:
    """Each batch cut into parts whose row counts are powers of two, largest first (100 rows: 64 + 32 + 4):
    a compiled decoding step (``eval.backend=static`` on CUDA) is compiled once per batch size, so a decode
    meets at most log2(rows) + 1 sizes instead of one per batch."""
    out = []
    for batch in batches:
        start = 0
        while start < len(batch):
            size = 1 << ((len(batch) - start).bit_length() - 1)
            out.append(batch[start : start + size])
            start += size
    return out


def decode_batches(
    lengths: Sequence[int],
    settings,
    decode: Callable[[list[int]], list[T]],
    model=None,
    buckets: bool = False,
) -> list[T]:
    """``decode(indices)`` on each batch of :func:`length_batches` (``settings``: the ``eval`` section), the
    results put back in input order. With a budget (``eval.max_batch_tokens``, ``auto`` sized for ``model``'s
    device by :func:`batch_token_budget`) ``eval.batch_size`` does not cap the rows: the budget is what bounds
    memory, and short rows are cheapest decoded many at a time. ``buckets``: batch sizes rounded down to powers
    of two (:func:`bucketed`)."""
    budget = batch_token_budget(settings, model)
    if budget > 0:
        batches = length_batches(lengths, budget, settings.max_new_tokens)
    else:
        batches = length_batches(lengths, 0, settings.max_new_tokens, max_rows=settings.batch_size)
    if buckets:
        batches = bucketed(batches)
    out: list[T | None] = [None] * len(lengths)
    for idx in batches:
        results = decode(idx)
        if len(results) != len(idx):
            raise RuntimeError(f"decoding {len(idx)} rows gave {len(results)} outputs")
        for k, r in zip(idx, results):
            out[k] = r
        if (bar := _PROGRESS.get()) is not None:
            bar.update(len(idx))
    return out  # type: ignore[return-value]  (every index is in exactly one batch)


def _lora_layers(model) -> list:
    """The adapter layers of a peft ``model`` when all of them are LoRA on whole linear weights, else ``[]``:
    another tuner, an adapted embedding, an FSDP / ZeRO-3 shard or a quantized base is decoded through the
    adapter, unmerged."""
    import torch

    try:
        from peft.tuners.lora import LoraLayer
        from peft.tuners.tuners_utils import BaseTunerLayer
    except ImportError:  # peft is a dependency, but a model without LoRA needs none of this
        return []
    layers = []
    for m in model.modules():
        if not isinstance(m, BaseTunerLayer):
            continue
        base = m.get_base_layer()
        # A quantized base (QLoRA: bitsandbytes' layers are nn.Linear subclasses) would be dequantized, merged
        # and quantized again: not exact, and its scales would not be restored. It decodes through the adapter.
        whole = (
            isinstance(base, torch.nn.Linear)
            and base.weight.dtype.is_floating_point
            and tuple(base.weight.shape) == (base.out_features, base.in_features)
        )
        if not isinstance(m, LoraLayer) or not whole:
            return []
        if not m.merged and not m.disable_adapters:
            layers.append(m)
    return layers


def copies_fit(need_bytes: int, free_bytes: int | None) -> bool:
    """Whether copies of ``need_bytes`` stay on the device: its free memory is unknown (a CPU: host memory is
    its memory) or they take at most half of it (the other half is the decoding batch's)."""
    return free_bytes is None or need_bytes <= free_bytes // 2


def _copy_aside(params: list) -> list:
    """Copies of ``params`` for a bit-exact restore: on their device when they fit (:func:`copies_fit`), else in
    host memory."""
    import torch

    device = params[0].device
    need = sum(p.numel() * p.element_size() for p in params)
    free = free_device_bytes(device)
    where = device if copies_fit(need, free) else torch.device("cpu")
    if free is not None:
        log.info("LoRA merge: %.1f GiB of base weights copied aside on %s", need / GIB, where)
    return [p.detach().to(where, copy=True) for p in params]


@contextmanager
def merged_lora(model, enabled: bool = True, restore: bool = True) -> Iterator[None]:
    """Inside the block, the model's LoRA adapter is merged into its base weights (one matmul a layer
    instead of three), in place on the device. With ``restore`` every base weight (and bias) is restored on
    exit bit for bit from a copy taken before the merge, on the device when there is room for it, else in host
    memory (:func:`_copy_aside`). Without ``restore`` nothing is copied and the model stays merged (decoding
    later goes through the merged weights; for the final predictions, after which the model trains no more).
    No-op for a model without LoRA (or whose adapter is merged already)."""
    layers = _lora_layers(model) if enabled and hasattr(model, "merge_adapter") else []
    if not layers:
        yield
        return
    saved = []
    if restore:
        params = [
            p for m in layers for p in (m.get_base_layer().weight, m.get_base_layer().bias) if p is not None
        ]
        copies = iter(_copy_aside(params))
        for m in layers:
            base = m.get_base_layer()
            saved.append((m, [(p, next(copies)) for p in (base.weight, base.bias) if p is not None]))
    try:
        try:
            model.merge_adapter()
        except ValueError as e:  # peft refuses some layouts (e.g. an adapter on tied embeddings)
            log.info("LoRA not merged for decoding (%s); decoding through the adapter", e)
        yield
    finally:
        for m, params in saved:
            for p, copy in params:
                p.data.copy_(copy)
            # The weights are the unmerged ones again: tell peft so, without its unmerge() arithmetic.
            m.merged_adapters.clear()


def shared_prefix_lengths(ids: Sequence[Sequence[int]], groups: Sequence[object]) -> list[int]:
    """Per row, how many leading tokens it shares with every other row of its group (e.g. the chat template
    and the instruction of one language): the longest common prefix of the group, short of each row's last
    token (a row needs one token of its own to compute). 0 for a row alone in its group."""
    members: dict[object, list[int]] = {}
    for k, g in enumerate(groups):
        members.setdefault(g, []).append(k)
    out = [0] * len(ids)
    for idx in members.values():
        if len(idx) < 2:
            continue
        first = ids[idx[0]]
        n = min(len(ids[k]) for k in idx) - 1
        p = 0
        while p < n and all(ids[k][p] == first[p] for k in idx):
            p += 1
        for k in idx:
            out[k] = p
    return out

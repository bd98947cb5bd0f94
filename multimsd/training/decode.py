"""What every model kind's decoding shares: length-sorted batches under a token budget, and LoRA merged for it.

**Batches** (:func:`length_batches`). Decoding rows in input order in fixed chunks pads every short row to
the longest of its chunk and makes a chunk of short rows as small as one of long rows. Instead the rows are
sorted by encoded input length, longest first (an out-of-memory shows in the first batch, not the last), and
a batch takes rows while ``rows * (longest input + max_new_tokens) <= eval.max_batch_tokens``: the size of
the batch's KV cache at the end of decoding, the quantity that bounds memory. ``eval.max_batch_tokens=0``
keeps the old way (input order, ``eval.batch_size`` rows a batch). Either way the outputs come back in input
order (:func:`decode_batches`). The causal kind also computes the prompt head a language's rows share only
once (:func:`shared_prefix_lengths`, ``multimsd.training.kinds.causal.PromptHeads``).

**Cut outputs** (:class:`Generated`, :func:`cut_at_cap`). Every built-in kind returns its outputs as
:class:`Generated` strings that also say whether generation stopped because it reached the token cap
(``eval.max_new_tokens``) rather than at an end-of-sequence token; the training stage writes that next to the
predictions (:func:`multimsd.training.predict.write_generation_info`) and the evaluation reports the share of
cut outputs. A plugin kind that returns plain strings leaves it unknown.

**LoRA** (:func:`merged_lora`). peft runs every adapted linear layer as the base matmul plus two small
adapter matmuls; merged (``W + s·BA``) it is one matmul again. The model keeps training after the per-epoch
validation generation and a resumed run must be bit-exact, so the base weights are copied aside before the
merge and copied back after: ``unmerge_adapter()`` alone (``W + s·BA - s·BA``) does not give ``W`` back in
floating point.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TypeVar

log = logging.getLogger(__name__)

T = TypeVar("T")


class Generated(str):
    """A decoded output that also records whether generation stopped at the token cap instead of at an
    end-of-sequence token: ``cut`` is True / False, or None where unknown. It is a ``str`` in every other
    respect (and pickles with its flag, so it survives gathering over processes)."""

    cut: bool | None

    def __new__(cls, text: str, cut: bool | None = None) -> Generated:
        obj = super().__new__(cls, text)
        obj.cut = cut
        return obj

    def __reduce__(self):
        return (Generated, (str(self), self.cut))


def eos_token_ids(model, tokenizer) -> list[int]:
    """The token ids that end a generation: the model's generation config's, else the tokenizer's."""
    ids = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if ids is None:
        ids = getattr(tokenizer, "eos_token_id", None)
    if ids is None:
        return []
    return [int(i) for i in (ids if isinstance(ids, list | tuple) else [ids])]


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


def decode_batches(
    lengths: Sequence[int],
    settings,
    decode: Callable[[list[int]], list[T]],
) -> list[T]:
    """``decode(indices)`` on each batch of :func:`length_batches` (``settings``: the ``eval`` section), the
    results put back in input order. With a budget ``eval.batch_size`` does not cap the rows: the budget is
    what bounds memory, and short rows are cheapest decoded many at a time."""
    if settings.max_batch_tokens > 0:
        batches = length_batches(lengths, settings.max_batch_tokens, settings.max_new_tokens)
    else:
        batches = length_batches(lengths, 0, settings.max_new_tokens, max_rows=settings.batch_size)
    out: list[T | None] = [None] * len(lengths)
    for idx in batches:
        results = decode(idx)
        if len(results) != len(idx):
            raise RuntimeError(f"decoding {len(idx)} rows gave {len(results)} outputs")
        for k, r in zip(idx, results):
            out[k] = r
    return out  # type: ignore[return-value]  (every index is in exactly one batch)


def _lora_layers(model) -> list:
    """The adapter layers of a peft ``model`` when all of them are LoRA on whole linear weights, else ``[]``:
    another tuner, an adapted embedding or an FSDP / ZeRO-3 shard is decoded through the adapter, unmerged."""
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
        whole = isinstance(base, torch.nn.Linear) and tuple(base.weight.shape) == (
            base.out_features,
            base.in_features,
        )
        if not isinstance(m, LoraLayer) or not whole:
            return []
        if not m.merged and not m.disable_adapters:
            layers.append(m)
    return layers


@contextmanager
def merged_lora(model, enabled: bool = True) -> Iterator[None]:
    """Inside the block, the model's LoRA adapter is merged into its base weights (one matmul a layer
    instead of three); on exit every base weight (and bias) is restored bit for bit from a copy taken
    before the merge, in host memory so that a GPU needs no room for it. No-op for a model without LoRA."""
    layers = _lora_layers(model) if enabled and hasattr(model, "merge_adapter") else []
    if not layers:
        yield
        return
    saved = []
    for m in layers:
        base = m.get_base_layer()
        params = [p for p in (base.weight, base.bias) if p is not None]
        saved.append((m, [(p, p.detach().to("cpu", copy=True)) for p in params]))
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

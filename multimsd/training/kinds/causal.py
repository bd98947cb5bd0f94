"""``model.kind=causal``: a chat LM (Llama-3.1-8B-Instruct, SmolLM2) trained on prompt + answer, LoRA optional.

The prompt is the chat template around the complex sentence (multimsd.training.prompts); only the answer is
learned. ``mode=icl`` (k-shot prompting, no training) is possible with this kind only.
"""

from __future__ import annotations

import functools

from multimsd.errors import MultimsdError
from multimsd.training.decode import (
    BACKENDS,
    Generated,
    batch_token_budget,
    check_backend,
    decode_batches,
    eos_token_ids,
    forces_end,
    keep_to_caps,
    row_caps,
    shared_prefix_lengths,
)
from multimsd.training.kinds.base import Tokenized, novel_flags, register_kind, tokenizer_set
from multimsd.training.kinds.transformer import TransformerKind
from multimsd.training.number_guard import guard_kwargs
from multimsd.training.prompts import chat_messages


def accepts_logits_to_keep(model) -> bool:
    """Whether a causal LM (or the base model under a PEFT wrapper) can compute only the last N logits."""
    import inspect

    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "logits_to_keep" in inspect.signature(base.forward).parameters


@register_kind("causal")
class CausalKind(TransformerKind):
    supports_icl = True
    shift_labels = True
    supports_packing = True  # transformers' attention masks (and flash-attention) honour packed position_ids

    def auto_class(self):
        from transformers import AutoModelForCausalLM

        return AutoModelForCausalLM

    def lora_task_type(self):
        from peft import TaskType

        return TaskType.CAUSAL_LM

    def peft_auto_class(self):
        from peft import AutoPeftModelForCausalLM

        return AutoPeftModelForCausalLM

    def check_tokenizer(self, ms, tokenizer) -> None:
        if getattr(tokenizer, "chat_template", None) is None:
            raise MultimsdError(
                f"model {ms.pretrained!r} has no chat template; the causal models here are chat models"
            )

    def encode(self, tokenizer, row: dict, max_length: int, shots=()) -> Tokenized:
        """Chat prompt + answer; the prompt is masked from the loss (labels -100)."""
        prompt = tokenizer.apply_chat_template(
            chat_messages(row["complex"], row["lang"], shots=shots),
            tokenize=False,
            add_generation_prompt=True,
        )
        full = tokenizer.apply_chat_template(
            chat_messages(row["complex"], row["lang"], row["simple"], shots), tokenize=False
        )
        if not full.startswith(prompt):
            raise MultimsdError("the tokenizer's chat template does not extend the prompt with the answer")
        p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
        a_ids = tokenizer(full[len(prompt) :], add_special_tokens=False)["input_ids"]
        ids = (p_ids + a_ids)[:max_length]
        labels = ([-100] * len(p_ids) + a_ids)[:max_length]
        source = set(tokenizer(row["complex"], add_special_tokens=False)["input_ids"])
        return Tokenized(ids, labels, novel_flags(labels, source, set(tokenizer.all_special_ids)))

    def can_trim(self, model) -> bool:
        return accepts_logits_to_keep(model)

    def logits_forward_kw(self, model, batch: dict, trim: bool) -> tuple[dict, int]:
        """The prompt carries no labels, so with ``trim`` the logits are computed only from the batch's earliest
        labelled position on (``logits_to_keep``): the vocabulary projection of the prompt is skipped, which is
        ~10 % of a SmolLM2 + LoRA step on the sample (``benchmarks/train_bench.py``), for the same loss."""
        labelled = batch["labels"].ne(-100)
        rows = labelled.any(dim=1)
        if not trim or not rows.any():
            return {}, 0
        # the labels come shifted (labels[:, t] is the target of logits[:, t]): keep from the earliest label on
        start = int(labelled[rows].float().argmax(dim=1).min())
        return {"logits_to_keep": batch["labels"].shape[1] - start}, start

    def hidden_forward_kw(self, model, batch: dict) -> dict:
        return {}  # a decoder-only LM reads its labels' tokens in input_ids already

    decode_backends = BACKENDS  # eval.backend: generate, static (compiled on CUDA), continuous

    def generate(self, cfg, model, tokenizer, rows: list[dict], shots: dict) -> list[Generated]:
        prompts = [
            tokenizer.apply_chat_template(
                chat_messages(r["complex"], r["lang"], shots=shots.get(r["lang"], ())),
                tokenize=False,
                add_generation_prompt=True,
            )
            for r in rows
        ]
        ids = tokenizer(prompts, add_special_tokens=False)["input_ids"]
        backend = check_backend(cfg.eval.backend, self.decode_backends, "causal")
        eos = eos_token_ids(model, tokenizer)
        # each output bounded by its source's length (eval.length_ratio, multimsd.training.decode.row_caps)
        sources = tokenizer([r["complex"] for r in rows], add_special_tokens=False)["input_ids"]
        caps = row_caps([len(t) for t in sources], cfg.eval)
        if backend == "continuous":
            return continuous_batches(cfg, model, tokenizer, ids, eos, caps)
        gen_kw = {**self.generation_settings(cfg), "pad_token_id": tokenizer.pad_token_id}
        if backend == "static":
            # A static KV cache: on CUDA, generate compiles the decoding step for it (torch.compile, CUDA
            # graphs). The first batch is the longest (length-sorted), so its cache length is kept for the rest.
            gen_kw["cache_implementation"] = "static"
        # With a token budget, greedy: the prompt head a language's rows share (chat template and instruction:
        # half the prompt tokens on the sample) is computed once and its KV cache reused.
        share = backend == "generate" and cfg.eval.max_batch_tokens != 0 and cfg.eval.num_beams == 1
        heads = PromptHeads(model, ids, [r["lang"] for r in rows] if share else None)

        def decode(idx: list[int]) -> list[Generated]:
            kw = {**gen_kw, **guard_kwargs(cfg, tokenizer, [rows[k]["complex"] for k in idx])}  # number_guard
            kw["max_new_tokens"] = max(caps[k] for k in idx)  # then each row kept to its own cap
            new = heads.generate(idx, tokenizer.pad_token_id, kw)
            if new is None:  # nothing shared: the tokenizer pads the whole prompts
                enc = tokenizer(
                    [prompts[k] for k in idx], return_tensors="pt", padding=True, add_special_tokens=False
                )
                enc = {n: t.to(model.device) for n, t in enc.items()}
                new = model.generate(**enc, **kw)[:, enc["input_ids"].shape[1] :]
            kept, cut = keep_to_caps(new, eos, [caps[k] for k in idx], forces_end(model))
            texts = tokenizer.batch_decode(kept, skip_special_tokens=True)
            return [Generated(" ".join(t.split()), c) for t, c in zip(texts, cut)]

        # decoder-only: pad on the left so every prompt ends where generation starts (the caller's side after)
        with tokenizer_set(tokenizer, padding_side="left"):
            lengths = [len(i) for i in ids]
            return decode_batches(lengths, cfg.eval, decode, model=model, buckets=backend == "static")


def continuous_batches(
    cfg, model, tokenizer, ids: list[list[int]], eos: list[int], caps: list[int] | None = None
) -> list[Generated]:
    """``eval.backend=continuous``: every prompt handed to transformers' continuous batching at once
    (``generate_batch``: a paged KV cache, sized from the free device memory by transformers; rows join and
    leave the running batch as they start and end), greedy; the outputs in input order, each kept to its row's
    cap (``caps``; ``eval.max_new_tokens`` for every row without them: one generation config serves all)."""
    import torch
    from transformers import GenerationConfig

    if cfg.eval.num_beams != 1:
        raise MultimsdError(
            f"eval.backend=continuous decodes greedily; eval.num_beams={cfg.eval.num_beams} needs "
            "eval.backend=generate or static"
        )
    if not ids:
        return []
    cap = cfg.eval.max_new_tokens
    config = GenerationConfig(
        max_new_tokens=cap,
        do_sample=False,
        eos_token_id=eos or None,
        pad_token_id=tokenizer.pad_token_id,
    )
    on_cuda = next(model.parameters()).device.type == "cuda"
    kw = {"warmup": on_cuda}  # warmup pre-captures CUDA graphs; on a CPU there are none to capture
    blocks = continuous_cache_blocks(cfg.eval, model, ids, on_cuda)
    if blocks is not None:
        try:
            from transformers import ContinuousBatchingConfig
        except ImportError:  # an older transformers: its own sizing
            ContinuousBatchingConfig = None  # noqa: N806
        if ContinuousBatchingConfig is not None:
            kw["continuous_batching_config"] = ContinuousBatchingConfig(num_blocks=blocks)
    results = list(model.generate_batch(inputs=ids, generation_config=config, **kw).values())
    failed = [r for r in results if r.error is not None]
    if len(results) != len(ids) or failed:
        why = failed[0].error if failed else f"{len(results)} outputs for {len(ids)} prompts"
        raise MultimsdError(f"eval.backend=continuous: transformers' generate_batch failed ({why})")
    new = [list(r.generated_tokens) for r in results]
    # a row shorter than the cap ended; padded with an end token so that keep_to_caps sees it so
    fill = eos[0] if eos else tokenizer.pad_token_id
    width = max(len(t) for t in new)
    tokens = torch.tensor([t + [fill] * (width - len(t)) for t in new], dtype=torch.long)
    caps = caps or [cap] * len(new)
    _, cut = keep_to_caps(tokens, eos, caps)
    # the text from each row's own tokens, not the padded ones: an end token need not be a special token
    texts = tokenizer.batch_decode([t[:c] for t, c in zip(new, caps)], skip_special_tokens=True)
    return [Generated(" ".join(t.split()), c) for t, c in zip(texts, cut)]


CONTINUOUS_PAGE = 256  # tokens a page of transformers' paged cache holds (ContinuousBatchingConfig.page_size)


def continuous_cache_blocks(settings, model, ids: list[list[int]], on_cuda: bool) -> int | None:
    """Blocks of ``CONTINUOUS_PAGE`` tokens for the continuous backend's paged cache: None (transformers sizes it
    from the free memory, 90 %) with ``eval.max_batch_tokens=auto`` on CUDA; else the budget (8192 on a CPU,
    where transformers would take 90 % of the host's RAM: gigabytes to allocate for a few rows), or with
    ``eval.max_batch_tokens=0`` ``eval.batch_size`` rows of the longest; at least the longest row."""
    if settings.max_batch_tokens == "auto" and on_cuda:
        return None
    longest = max(len(i) for i in ids) + settings.max_new_tokens
    budget = batch_token_budget(settings, model) or settings.batch_size * longest
    return -(-max(budget, longest) // CONTINUOUS_PAGE)


class PromptHeads:
    """Prompt heads shared within a group of rows, computed once and decoded from their KV cache.

    Row ``k`` shares its first ``lengths[k]`` tokens with the other rows of ``groups[k]`` (``groups=None``:
    nothing is shared). A batch is laid out as ``[pad… head | pad… tail]``: the head part comes from the cache
    (each row's head right-aligned, the pads masked), ``generate`` computes the tails. Positions follow the
    attention mask, so every token sits where it sits in the unpadded prompt: the same decoding as the whole
    prompts, left-padded, less the repeated heads. A batch that mixes languages pads each head to the longest
    one, so its cache can exceed ``eval.max_batch_tokens`` (counted on whole prompts) by the difference.
    """

    def __init__(self, model, ids: list[list[int]], groups: list | None) -> None:
        self.model, self.ids, self.groups = model, ids, groups
        self.lengths = shared_prefix_lengths(ids, groups) if groups else [0] * len(ids)
        self.kv: dict = {}  # group -> per layer (keys, values) of its head, [1, heads, length, dim]

    def _head(self, k: int):
        g = self.groups[k]
        if g not in self.kv:
            import torch
            from transformers.cache_utils import DynamicCache

            try:
                from transformers.cache_utils import DynamicLayer
            except ImportError:  # transformers < 4.54 has no cache layers to splice: whole prompts
                self.kv[g] = None
                return None
            kw = {"logits_to_keep": 1} if accepts_logits_to_keep(self.model) else {}
            head = torch.tensor([self.ids[k][: self.lengths[k]]], device=self.model.device)
            cache = getattr(self.model(input_ids=head, use_cache=True, **kw), _cache_name())
            plain = type(cache) is DynamicCache and all(type(layer) is DynamicLayer for layer in cache.layers)
            # A sliding-window or hybrid cache cannot be spliced like this: such a model decodes whole prompts.
            self.kv[g] = [(layer.keys, layer.values) for layer in cache.layers] if plain else None
        return self.kv[g]

    def generate(self, idx: list[int], pad: int, gen_kw: dict):
        """The new tokens of rows ``idx`` (``[rows, steps]``), or None when none of them has a shared head."""
        import torch
        from transformers.cache_utils import DynamicCache

        heads = [self._head(k) if self.lengths[k] else None for k in idx]
        if not any(heads):
            return None
        cut = [self.lengths[k] if h else 0 for k, h in zip(idx, heads)]
        tails = [self.ids[k][c:] for k, c in zip(idx, cut)]
        width, rest = max(cut), max(len(t) for t in tails)
        rows, mask = [], []
        for k, c, t in zip(idx, cut, tails):
            rows.append([pad] * (width - c) + self.ids[k][:c] + [pad] * (rest - len(t)) + t)
            mask.append([0] * (width - c) + [1] * c + [0] * (rest - len(t)) + [1] * len(t))
        model = self.model
        some = next(h for h in heads if h)
        capacity = width + rest + gen_kw["max_new_tokens"]
        ReservedLayer = _reserved_layer_class()  # noqa: N806  (a class, built once on first use)
        cache = DynamicCache()
        for n, (k0, _) in enumerate(some):
            layer = ReservedLayer(len(idx), k0.shape[1], capacity, k0.shape[3], k0)
            for i, (c, h) in enumerate(zip(cut, heads)):
                if h:
                    layer.reserve[0][i, :, width - c : width] = h[n][0][0]
                    layer.reserve[1][i, :, width - c : width] = h[n][1][0]
            layer.use(width)
            cache.layers.append(layer)
        gen = model.generate(
            input_ids=torch.tensor(rows, device=model.device),
            attention_mask=torch.tensor(mask, device=model.device),
            **{_cache_name(): cache},
            **gen_kw,
        )
        return gen[:, width + rest :]


@functools.cache
def _cache_name() -> str:
    """What transformers calls the KV cache of a model output and of ``generate``: ``cache`` in newer releases
    (which warn on the old name), ``past_key_values`` in older ones."""
    import dataclasses

    from transformers.modeling_outputs import CausalLMOutputWithPast

    fields = {f.name for f in dataclasses.fields(CausalLMOutputWithPast)}
    return "cache" if "cache" in fields else "past_key_values"


@functools.cache
def _reserved_layer_class():
    """The class below, defined on first use: importing this module must not import transformers."""
    from transformers.cache_utils import DynamicLayer

    class ReservedLayer(DynamicLayer):
        """A KV cache layer written in place into storage reserved for the whole decode.

        transformers' DynamicLayer concatenates every new token to its keys and values, which copies the whole
        cache each step (a third of a decoding step of a batch of 32 on a CPU); this one writes the new token
        into its reserve and hands out a view of the filled part, the same values. Past the reserve it
        concatenates like its parent.
        """

        def __init__(self, rows: int, heads: int, capacity: int, dim: int, like) -> None:
            super().__init__()
            keys = like.new_zeros(rows, heads, capacity, dim)
            self.reserve = (keys, keys.clone())
            self.dtype, self.device, self.is_initialized = like.dtype, like.device, True

        def use(self, length: int) -> None:
            self.keys, self.values = (t[:, :, :length] for t in self.reserve)

        def update(self, key_states, value_states, *args, **kwargs):
            n, m = self.keys.shape[-2], key_states.shape[-2]
            if self.reserve is None or n + m > self.reserve[0].shape[-2]:
                self.reserve = None  # from here on the parent's concatenation
                return super().update(key_states, value_states, *args, **kwargs)
            self.reserve[0][:, :, n : n + m] = key_states
            self.reserve[1][:, :, n : n + m] = value_states
            self.use(n + m)
            return self.keys, self.values

    return ReservedLayer

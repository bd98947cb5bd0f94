"""``model.kind=causal``: a chat LM (Llama-3.1-8B-Instruct, SmolLM2) trained on prompt + answer, LoRA optional.

The prompt is the chat template around the complex sentence (multimsd.training.prompts); only the answer is
learned. ``mode=icl`` (k-shot prompting, no training) is possible with this kind only.
"""

from __future__ import annotations

from multimsd.errors import MultimsdError
from multimsd.training.decode import decode_batches
from multimsd.training.kinds.base import Tokenized, novel_flags, register_kind
from multimsd.training.kinds.transformer import TransformerKind
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

    def forward_kw(self, batch: dict, trim: bool) -> tuple[dict, int]:
        """The prompt carries no labels, so with ``trim`` the logits are computed only from the batch's earliest
        labelled position on (``logits_to_keep``): the vocabulary projection of the prompt is skipped, which is
        ~10 % of a SmolLM2 + LoRA step on the sample (``benchmarks/train_bench.py``), for the same loss."""
        labelled = batch["labels"].ne(-100)
        rows = labelled.any(dim=1)
        if not trim or not rows.any():
            return {}, 0
        # logits[:, t] predicts labels[:, t + 1]: keep the positions from one before the earliest label on.
        start = max(int(labelled[rows].float().argmax(dim=1).min()) - 1, 0)
        return {"logits_to_keep": batch["labels"].shape[1] - start}, start

    def generate(self, cfg, model, tokenizer, rows: list[dict], shots: dict) -> list[str]:
        prompts = [
            tokenizer.apply_chat_template(
                chat_messages(r["complex"], r["lang"], shots=shots.get(r["lang"], ())),
                tokenize=False,
                add_generation_prompt=True,
            )
            for r in rows
        ]
        lengths = [len(ids) for ids in tokenizer(prompts, add_special_tokens=False)["input_ids"]]

        def decode(idx: list[int]) -> list[str]:
            enc = tokenizer(
                [prompts[k] for k in idx], return_tensors="pt", padding=True, add_special_tokens=False
            )
            enc = {n: t.to(model.device) for n, t in enc.items()}
            gen = model.generate(
                **enc,
                max_new_tokens=cfg.eval.max_new_tokens,
                do_sample=False,
                num_beams=cfg.eval.num_beams,
                pad_token_id=tokenizer.pad_token_id,
            )
            texts = tokenizer.batch_decode(gen[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
            return [" ".join(t.split()) for t in texts]

        side = tokenizer.padding_side
        # decoder-only: pad on the left so every prompt ends where generation starts
        tokenizer.padding_side = "left"
        try:
            return decode_batches(lengths, cfg.eval, decode)
        finally:
            tokenizer.padding_side = side

"""``eval.number_guard``: decoding that never writes a digit sequence the source does not have (issue #48 item 5).

A cheap baseline for the safety of numbers, with no training: while generating the output of a source, every
vocabulary token that holds a digit is banned unless each of its digit runs is part of a number the source
writes ("5 mg twice daily": "5" stays allowed; "50", "10", "0" are banned). It is a
:class:`transformers.LogitsProcessor`, so greedy search, beam search and sampling all honour it.

What it cannot see, by construction: numbers written as words ("five"), CJK numerals (五), and a new number
pieced together from allowed tokens (a source with "25" and "0" lets "250" through as "25" + "0"); a unit or a
negation it does not touch. The safety flags still judge its outputs like any other system's.
"""

from __future__ import annotations

import re
from functools import lru_cache

import torch

DIGITS = re.compile(r"\d+")


@lru_cache(maxsize=8)
def _digit_tokens(tokenizer) -> tuple[tuple[int, ...], tuple[tuple[str, ...], ...]]:
    """(ids, digit runs) of every vocabulary token whose text holds a digit, once per tokenizer."""
    ids, runs = [], []
    # a token's digits are in its string as written (SentencePiece's "▁5", byte-level BPE's "Ġ50"): ASCII
    # digits are bytes that byte-level BPE keeps as themselves
    for token, i in tokenizer.get_vocab().items():
        found = DIGITS.findall(token)
        if found:
            ids.append(i)
            runs.append(tuple(found))
    return tuple(ids), tuple(runs)


def banned_tokens(tokenizer, source: str) -> list[int]:
    """The ids of the tokens with a digit run that no number of ``source`` contains."""
    numbers = DIGITS.findall(source)
    ids, runs = _digit_tokens(tokenizer)
    return [i for i, rs in zip(ids, runs) if not all(any(r in n for n in numbers) for r in rs)]


class NumberGuard:
    """A logits processor over a batch of ``sources`` (``beams`` hypotheses a source, in order): the scores of
    a row's banned tokens are set to −inf."""

    def __init__(self, tokenizer, sources: list[str], beams: int = 1):
        self.banned = [banned_tokens(tokenizer, s) for s in sources]
        self.beams = beams
        self.mask: torch.Tensor | None = None

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if self.mask is None or self.mask.shape[1] != scores.shape[1]:
            mask = torch.zeros(len(self.banned), scores.shape[1], dtype=torch.bool)
            for row, ids in enumerate(self.banned):
                mask[row, [i for i in ids if i < scores.shape[1]]] = True
            self.mask = mask.repeat_interleave(self.beams, 0).to(scores.device)
        return scores.masked_fill(self.mask[: scores.shape[0]], float("-inf"))


def guard_kwargs(cfg, tokenizer, sources: list[str]) -> dict:
    """``generate``'s ``logits_processor`` for ``sources`` when ``eval.number_guard`` is on, else nothing."""
    if not getattr(cfg.eval, "number_guard", False):
        return {}
    from transformers import LogitsProcessorList

    beams = 1 if getattr(cfg.eval, "do_sample", False) else cfg.eval.num_beams
    return {"logits_processor": LogitsProcessorList([NumberGuard(tokenizer, sources, beams)])}

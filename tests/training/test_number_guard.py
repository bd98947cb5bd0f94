"""``eval.number_guard`` (issue #48 item 5): the tokens banned for a source (hand-made vocabulary), the logits
processor's rows under beam search, 🤗 generate honouring it on tiny Llama even when every digit is what the
model wants most, and its settings' checks."""

from __future__ import annotations

import re

import pytest
import torch

from multimsd.errors import MultimsdError
from multimsd.training.number_guard import NumberGuard, banned_tokens


class Vocab:
    """A tokenizer with a hand-made vocabulary (SentencePiece and byte-level spellings)."""

    def __init__(self, vocab: dict[str, int]):
        self.vocab = vocab

    def get_vocab(self) -> dict[str, int]:
        return self.vocab


VOCAB = Vocab({"▁Take": 0, "▁5": 1, "50": 2, "Ġ250": 3, "0": 4, "10": 5, "mg": 6, "2": 7, "▁1-2": 8, "x9": 9})


def test_a_token_is_banned_unless_each_of_its_digit_runs_is_part_of_a_number_of_the_source():
    banned = banned_tokens(VOCAB, "Take 5 mg, up to 250 mg a day.")
    # 5, 50 (in 250), 250, 0, 2 are parts of the source's numbers; 10, 1-2 (1 is not), x9 are not
    assert sorted(banned) == [5, 8, 9]
    assert sorted(banned_tokens(VOCAB, "Take it with food.")) == [1, 2, 3, 4, 5, 7, 8, 9]  # every digit
    assert banned_tokens(VOCAB, "1 or 2 tablets, 10 or 250 mg, 9 days, 5 times.") == []


def test_the_processor_masks_each_sources_rows_for_every_beam():
    guard = NumberGuard(VOCAB, ["Take 5 mg.", "Take 10 mg."], beams=2)
    # 2 sources x 2 beams; the model's vocabulary may be padded past the tokenizer's
    scores = torch.zeros(4, 12)
    out = guard(torch.zeros(4, 1, dtype=torch.long), scores)
    banned = [set(torch.nonzero(torch.isinf(row)).flatten().tolist()) for row in out]
    first, second = set(banned_tokens(VOCAB, "Take 5 mg.")), set(banned_tokens(VOCAB, "Take 10 mg."))
    assert banned == [first, first, second, second]
    assert 1 not in first and 1 in second and 5 in first and 5 not in second  # "5" ∉ "10", "10" ∉ "5"
    assert out[:, [0, 6, 10, 11]].eq(0).all()  # words and the padded columns untouched


class LovesDigits:
    """A model that wants digits above all: every digit token's score raised by 100."""

    def __init__(self, ids: list[int]):
        self.ids = ids

    def __call__(self, input_ids, scores):
        scores[:, self.ids] += 100.0
        return scores


@pytest.mark.integration
@pytest.mark.parametrize("beams", [1, 3])
def test_generate_writes_only_the_sources_digits_however_much_the_model_wants_others(beams):
    from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessorList

    from multimsd.training.models.offline import resolve_model_path

    path = resolve_model_path("tiny:llama")
    tok, model = AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path)
    digits = [i for t, i in tok.get_vocab().items() if re.search(r"\d", t)]
    sources = ["Take 5 mg twice a day.", "Up to 250 mg, 3 times."]
    enc = tok(sources, return_tensors="pt", padding=True)

    def generate(processors):
        torch.manual_seed(0)
        out = model.generate(
            **enc, max_new_tokens=12, num_beams=beams, do_sample=False, logits_processor=processors,
            pad_token_id=tok.pad_token_id,
        )  # fmt: skip
        return tok.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)

    free = generate(LogitsProcessorList([LovesDigits(digits)]))
    assert all(re.search(r"\d", t) for t in free)  # without the guard: digits everywhere
    guarded = generate(LogitsProcessorList([LovesDigits(digits), NumberGuard(tok, sources, beams)]))
    for source, text in zip(sources, guarded):
        allowed = set(re.findall(r"\d", source))
        assert set(re.findall(r"\d", text)) <= allowed, (source, text)
        assert re.search(r"\d", text)  # it still writes the source's own digits


@pytest.mark.parametrize(
    ("over", "message"),
    [
        (
            {"model": {"kind": "lstm", "name": "x", "pretrained": "scratch"}},
            "does not decode with 🤗 generate",
        ),
        ({"eval": {"number_guard": True, "backend": "continuous"}}, "takes no logits processor"),
    ],
)
def test_number_guard_settings_it_cannot_honour_are_one_line(over, message):
    from multimsd.training.checks import check_config
    from multimsd.training.loop import to_train_config

    cfg = {"eval": {"number_guard": True}, **over}
    with pytest.raises(MultimsdError, match=message):
        check_config(to_train_config(cfg))

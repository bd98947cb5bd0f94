"""data.packing: a causal LM's micro-batch as one row without padding gives the padded batch's losses."""

from __future__ import annotations

import pytest
import torch

from multimsd.training.data import Collator, PackingCollator
from multimsd.training.loop import run, to_train_config

pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")

EXAMPLES = [
    {"input_ids": [1, 11, 12, 21, 22], "labels": [-100, -100, -100, 21, 22], "novel": [0, 0, 0, 1, 0]},
    {"input_ids": [1, 13, 23], "labels": [-100, -100, 23], "novel": [0, 0, 1]},
    # a label on the first token: unpacked it is never a target (nothing precedes it), so it must not be one here
    {"input_ids": [24, 14, 25], "labels": [24, -100, 25], "novel": [1, 0, 0]},
]


def targets(batch: dict) -> list[tuple[int, int, bool]]:
    """(input token, its target, novel) for every position a causal LM learns from, in order: the collators
    shift, so ``labels[t]`` is the target of the output at ``t``, the next token."""
    out = []
    for ids, labels, novel in zip(batch["input_ids"], batch["labels"], batch["novel"]):
        for t in range(len(ids)):
            if labels[t] != -100:
                out.append((int(ids[t]), int(labels[t]), bool(novel[t])))
    return out


def test_packed_row_holds_the_padded_batchs_targets_and_no_padding():
    packed = PackingCollator()(EXAMPLES)
    padded = Collator(pad_id=0, shift=True)(EXAMPLES)
    assert packed["input_ids"].tolist() == [[1, 11, 12, 21, 22, 1, 13, 23, 24, 14, 25]]
    assert packed["position_ids"].tolist() == [[0, 1, 2, 3, 4, 0, 1, 2, 0, 1, 2]]
    assert "attention_mask" not in packed  # no mask: transformers then reads the boundaries off position_ids
    # each example's first label cleared, then the row shifted: labels[t] is the token after t
    assert packed["labels"].tolist() == [[-100, -100, 21, 22, -100, -100, 23, -100, -100, 25, -100]]
    assert packed["novel"].tolist() == [
        [False, False, True, False, False, False, True, False, False, False, False]
    ]
    assert packed["target_index"].tolist() == [2, 3, 6, 9]
    assert padded["labels"].tolist() == [
        [-100, -100, 21, 22, -100],
        [-100, 23, -100, -100, -100],
        [-100, 25, -100, -100, -100],
    ]
    # No shifted target crosses an example boundary (22 -> first of example 2, 23 -> 24 are not learned).
    assert (
        targets(packed)
        == targets(padded)
        == [(12, 21, True), (21, 22, False), (13, 23, True), (14, 25, False)]
    )


def test_packing_needs_aligned_labels():
    from multimsd.errors import MultimsdError

    with pytest.raises(MultimsdError, match="decoder-only"):
        PackingCollator()([{"input_ids": [1, 2, 3], "labels": [2, 3], "novel": [0, 0]}])


def test_attention_stays_within_each_example(tmp_path):
    """The packed row's logits are each example's own logits, as if it were alone (tiny Llama, sdpa)."""
    from multimsd.training.forward import model_inputs
    from multimsd.training.kinds.transformer import TransformerModelSettings as ModelSettings
    from multimsd.training.modeling import load_model_and_tokenizer

    model, _ = load_model_and_tokenizer(
        ModelSettings(name="tiny_llama", kind="causal", pretrained="tiny:llama")
    )
    model.eval()
    packed = PackingCollator()(EXAMPLES)
    with torch.no_grad():
        together = model(**model_inputs(packed)).logits[0]
        start = 0
        for ex in EXAMPLES:
            n = len(ex["input_ids"])
            alone = model(input_ids=torch.tensor([ex["input_ids"]])).logits[0]
            torch.testing.assert_close(together[start : start + n], alone, rtol=1e-5, atol=1e-5)
            start += n
        # without position_ids the same row is one sequence: the check above can fail
        whole = model(input_ids=packed["input_ids"]).logits[0]
    assert not torch.allclose(whole[5:8], together[5:8], atol=1e-3)


def _cfg(tmp_path, name: str, **data) -> dict:
    return {
        "model": {
            "name": "tiny_llama",
            "kind": "causal",
            "pretrained": "tiny:llama",
            "lora": {"enabled": True, "dropout": 0.0},  # LoRA dropout would draw masks of another shape
        },
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 8,
            "max_eval_examples": 2,
            **data,
        },
        "loss": {"theta": 4.0},
        "optim": {"batch_size": 2, "grad_accum": 2, "epochs": 1, "lr": 1e-2},
        "eval": {"generate": False, "before_training": False, "max_new_tokens": 4},
        "output_dir": str(tmp_path / name),
    }


@pytest.mark.integration
def test_run_with_packing_gives_the_padded_runs_losses(tmp_path):
    from accelerate.state import AcceleratorState, GradientState

    def fresh_run(cfg):
        AcceleratorState._reset_state(True)
        GradientState._reset_state()
        res = run(cfg)
        return [h["loss"] for h in res["history"] if "step" in h], res

    padded, ref = fresh_run(_cfg(tmp_path, "padded"))
    packed, res = fresh_run(_cfg(tmp_path, "packed", packing=True))
    cfg = _cfg(tmp_path, "packed_logits", packing=True)
    cfg["loss"]["chunked"] = False  # packing on the logits path (logits_to_keep from the first label) too
    packed_logits, _ = fresh_run(cfg)
    assert len(padded) == 2
    assert res["packing"] and res["chunked_loss"] and not ref["packing"]
    assert packed == pytest.approx(padded, rel=1e-5)
    assert packed_logits == pytest.approx(padded, rel=1e-5)
    assert res["train_tokens"] == ref["train_tokens"]  # the same real tokens; the padding is gone
    assert res["after"]["val_loss"] == pytest.approx(ref["after"]["val_loss"], rel=1e-5)


def test_kinds_that_cannot_pack_keep_padded_batches():
    from multimsd.training.kinds import get_kind

    assert get_kind("causal").supports_packing
    assert not get_kind("seq2seq").supports_packing and not get_kind("lstm").supports_packing
    assert to_train_config({}).data.packing is False  # off unless asked for

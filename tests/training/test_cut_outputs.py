"""Outputs cut at ``eval.max_new_tokens``: every built-in model kind records, per output, whether generation
stopped at the token cap rather than at an end-of-sequence token, and the training stage writes it next to
the predictions (``generation.json``), where the evaluation reads it."""

from __future__ import annotations

import json
import pickle

import pytest
import torch

from multimsd.training.decode import Generated, as_generated, cut_at_cap


def test_cut_at_cap_by_hand():
    eos = [2]
    # 3 steps at a cap of 3: row 0 never ends (cut), row 1 ends with its last token, row 2 ends early and pads
    t = torch.tensor([[5, 6, 7], [5, 6, 2], [2, 0, 0]])
    assert cut_at_cap(t, eos, 3) == [True, False, False]
    assert cut_at_cap(t[:, :2], eos, 3) == [False, False, False]  # stopped before the cap: all ended
    assert cut_at_cap(t, [], 3) == [None, None, None]  # end tokens unknown
    assert cut_at_cap(t, [7, 2], 3) == [False, False, False]  # several end tokens
    # mBART forces </s> at the cap: an end in the last position is the cut itself
    assert cut_at_cap(t, eos, 3, forced_last=True) == [True, True, False]


def test_generated_says_its_text_and_whether_it_was_cut():
    from multimsd.training.decode import as_generated

    g = Generated("a b", True)
    assert (g.text, g.cut) == ("a b", True) and not isinstance(g, str) and Generated("x").cut is None
    back = pickle.loads(pickle.dumps([g]))[0]  # gathered over processes
    assert back == g
    assert as_generated("plain") == Generated("plain", None) and as_generated(g) is g  # a plugin's string
    assert getattr("plain", "cut", None) is None


def rows(n=5):
    from multimsd.training.data import sample_gold_pairs

    return [r for r in sample_gold_pairs()["validation"] if r["lang"] == "en"][:n]


def decoded(cfg, model, tok, rs):
    from accelerate import Accelerator

    from multimsd.training.predict import generate

    return generate(cfg, model, tok, rs, Accelerator(cpu=True))


def tiny(kind: str):
    from multimsd.training.data import sample_gold_pairs
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    model_cfg = {
        "causal": {"kind": "causal", "pretrained": "tiny:llama"},
        "seq2seq": {"kind": "seq2seq", "pretrained": "tiny:mbart"},
        "lstm": {
            "kind": "lstm",
            "pretrained": "scratch",
            "lstm": {"embedding_size": 16, "hidden_size": 16, "encoder_layers": 1, "decoder_layers": 1},
        },
    }[kind]
    cfg = to_train_config({"model": model_cfg})
    cfg.eval.max_new_tokens, cfg.eval.batch_size = 4, 2
    torch.manual_seed(0)
    model, tok = load_model_and_tokenizer(cfg.model, sample_gold_pairs()["train"] if kind == "lstm" else None)
    return cfg, model, tok


def force_end(kind, model, tok, monkeypatch, end: bool):
    """Make the model end every output at once (``end``) or never emit an end token."""
    if kind == "seq2seq":
        with torch.no_grad():
            model.final_logits_bias[0, tok.eos_token_id] = 1e4 if end else -1e4
    elif kind == "causal":
        vocab = model.config.vocab_size
        # every token ends a generation, or none the model can emit (an id outside the vocabulary)
        model.generation_config.eos_token_id = list(range(vocab)) if end else [vocab + 7]
    else:
        real = model._next_logits

        def biased(o):
            logits = real(o)
            logits[:, tok.eos_token_id] = 1e4 if end else -1e4
            return logits

        monkeypatch.setattr(model, "_next_logits", biased)


@pytest.mark.integration
@pytest.mark.usefixtures("fresh_accelerate_state")
@pytest.mark.parametrize("kind", ["causal", "seq2seq", "lstm"])
def test_every_kind_records_cut_outputs(kind, monkeypatch, tmp_path):
    from multimsd.training.predict import write_generation_info

    torch.set_num_threads(1)
    cfg, model, tok = tiny(kind)
    rs = rows()
    force_end(kind, model, tok, monkeypatch, end=False)
    cut = decoded(cfg, model, tok, rs)
    assert len(cut) == len(rs) and all(isinstance(p, Generated) for p in cut)
    assert [p.cut for p in cut] == [True] * len(rs), [(p, p.cut) for p in cut]
    monkeypatch.undo()
    force_end(kind, model, tok, monkeypatch, end=True)
    ended = decoded(cfg, model, tok, rs)
    assert [p.cut for p in ended] == [False] * len(rs), [(p, p.cut) for p in ended]
    # generation.json: one flag per line of <lang>.txt; a plain string (a plugin kind) is unknown
    mixed = [*cut[:2], ended[2], as_generated("plain"), ended[4]]
    write_generation_info(tmp_path, rs, mixed, cfg.eval.max_new_tokens)
    info = json.loads((tmp_path / "generation.json").read_text())
    assert info == {"max_new_tokens": 4, "cut": {"en": [True, True, False, None, False]}}


def test_row_caps_bound_each_row_by_its_source():
    from types import SimpleNamespace

    from multimsd.training.decode import row_caps

    s = SimpleNamespace(max_new_tokens=64, length_ratio=2.0, length_margin=32)
    assert row_caps([0, 10, 15, 40], s) == [32, 52, 62, 64]  # 2 × n + 32, never above max_new_tokens
    assert row_caps([10], SimpleNamespace(max_new_tokens=64, length_ratio=1.5, length_margin=0)) == [15]
    assert row_caps([7], SimpleNamespace(max_new_tokens=64, length_ratio=0.5, length_margin=1)) == [5]  # ceil
    assert row_caps([10, 200], SimpleNamespace(max_new_tokens=64, length_ratio=None, length_margin=32)) == [
        64,
        64,
    ]
    assert row_caps([10], s, cap=20) == [20]  # seq2seq: max_length less its start token


def test_keep_to_caps_by_hand():
    from multimsd.training.decode import keep_to_caps

    eos = [2]
    # a batch generated up to its largest cap (4): rows of caps 2, 4, 3, 4
    t = torch.tensor([[5, 6, 7, 8], [5, 6, 7, 8], [5, 2, 0, 0], [5, 6, 7, 2]])
    kept, cut = keep_to_caps(t, eos, [2, 4, 3, 4])
    assert kept == [[5, 6], [5, 6, 7, 8], [5, 2, 0], [5, 6, 7, 2]]
    assert cut == [True, True, False, False]  # rows 0 and 1 reached their caps without an end
    kept, cut = keep_to_caps(t[:, :3], eos, [2, 4, 3, 4])  # the batch stopped at 3: rows past 3 had ended
    assert cut == [True, False, False, False]
    assert keep_to_caps(t, [], [2, 4, 3, 4])[1] == [None] * 4
    # mBART forces </s> at the batch's cap: the last row's end there is the cut itself, not row 2's early end
    assert keep_to_caps(t, eos, [2, 4, 3, 4], forced_last=True)[1] == [True, True, False, True]


@pytest.mark.integration
@pytest.mark.usefixtures("fresh_accelerate_state")
@pytest.mark.parametrize("kind", ["causal", "seq2seq"])
def test_an_output_is_bounded_by_its_source_length(kind, monkeypatch):
    """A model that never ends stops at each row's own bound (eval.length_ratio), not at max_new_tokens, and
    is marked cut; each row's output is what decoding that row alone with its bound as the cap gives."""
    from multimsd.training.decode import row_caps

    torch.set_num_threads(1)
    cfg, model, tok = tiny(kind)
    rs = rows(4)
    force_end(kind, model, tok, monkeypatch, end=False)
    cfg.eval.max_new_tokens, cfg.eval.length_ratio, cfg.eval.length_margin = 40, 0.25, 1
    lengths = [
        len(tok(r["complex"], add_special_tokens=False)["input_ids"]) for r in rs
    ]  # the sources' tokens
    cap = 40 if kind == "causal" else 39  # seq2seq: max_length counts the decoder's start token
    caps = row_caps(lengths, cfg.eval, cap=cap)
    assert len(set(caps)) > 1 and max(caps) < cap  # rows of different bounds in one batch
    cfg.eval.batch_size, cfg.eval.max_batch_tokens = 4, 0
    bounded = decoded(cfg, model, tok, rs)
    assert [p.cut for p in bounded] == [True] * len(rs)
    for r, c, out in zip(rs, caps, bounded):
        cfg.eval.length_ratio = None
        cfg.eval.max_new_tokens = c if kind == "causal" else c + 1
        alone = decoded(cfg, model, tok, [r])[0]
        assert out == alone and alone.cut

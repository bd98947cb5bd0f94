"""The Adduru et al. (2018) LSTM baseline: sampled softmax, word tokenizer, seq2seq model, paraphrase splits, and
``model=tiny_lstm`` through the training loop and the CLIs (train.py -> evaluate.py)."""

import json
import math
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from multimsd.errors import MultimsdError
from multimsd.training.data import Collator, paraphrase_splits, sample_gold_pairs, tokenize_rows
from multimsd.training.loss import weighted_cross_entropy
from multimsd.training.models.lstm import LstmSeq2Seq, LstmSeq2SeqConfig, WordTokenizer, detokenize
from multimsd.training.sampled_softmax import (
    SampledSoftmax,
    log_expected_count,
    log_uniform_probs,
    sample_candidates,
    sampled_softmax_loss,
    step_generator,
    unigram_probs,
)


@pytest.fixture(autouse=True)
def one_thread():
    # Tiny models: one thread is fastest, and on a loaded machine 2+ threads oversubscribe badly.
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def en_rows():
    pairs = sample_gold_pairs()
    return {s: [r for r in rows if r["lang"] == "en"] for s, rows in pairs.items()}


# ---------------------------------------------------------------------------------------------- sampled softmax
def test_sampled_softmax_matches_a_hand_computation():
    # V = 4 classes, H = 2. Two label tokens (+ one ignored position); candidates {0, 1}.
    hidden = torch.tensor([[[1.0, 0.0], [0.0, 2.0], [5.0, 5.0]]])
    weight = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])
    bias = torch.tensor([0.0, 0.5, 0.0, 0.0])
    labels = torch.tensor([[2, 1, -100]])
    sampled = torch.tensor([0, 1])
    log_e_sampled = torch.log(torch.tensor([0.5, 0.25]))
    log_e_true = torch.log(torch.tensor([[0.2, 0.25, 1.0]]))

    # token 0: h = (1, 0), y = 2: z_true = 1 - log .2; z_0 = 1 - log .5; z_1 = 0 + .5 - log .25
    z = [1 - math.log(0.2), 1 - math.log(0.5), 0.5 - math.log(0.25)]
    loss0 = math.log(sum(math.exp(v) for v in z)) - z[0]
    # token 1: h = (0, 2), y = 1: z_true = 2 + .5 - log .25; z_0 = 0 - log .5; candidate 1 is the label itself
    # (an accidental hit) and is dropped.
    z = [2.5 - math.log(0.25), -math.log(0.5)]
    loss1 = math.log(sum(math.exp(v) for v in z)) - z[0]

    got = sampled_softmax_loss(hidden, weight, bias, labels, sampled, log_e_sampled, log_e_true)
    assert got.item() == pytest.approx((loss0 + loss1) / 2, rel=1e-6)
    # theta weights the novel token only; the denominator stays the token count (or num_items)
    novel = torch.tensor([[True, False, True]])
    got = sampled_softmax_loss(
        hidden, weight, bias, labels, sampled, log_e_sampled, log_e_true, novel_mask=novel, theta=4.0
    )
    assert got.item() == pytest.approx((4 * loss0 + loss1) / 2, rel=1e-6)
    got = sampled_softmax_loss(
        hidden,
        weight,
        bias,
        labels,
        sampled,
        log_e_sampled,
        log_e_true,
        novel_mask=novel,
        theta=4.0,
        num_items=5,
    )
    assert got.item() == pytest.approx((4 * loss0 + loss1) / 5, rel=1e-6)
    # without removing accidental hits, token 1 also competes with its own (corrected) copy
    z = [2.5 - math.log(0.25), -math.log(0.5), 2.5 - math.log(0.25)]
    loss1_hit = math.log(sum(math.exp(v) for v in z)) - z[0]
    got = sampled_softmax_loss(
        hidden, weight, bias, labels, sampled, log_e_sampled, log_e_true, remove_accidental_hits=False
    )
    assert got.item() == pytest.approx((loss0 + loss1_hit) / 2, rel=1e-6)


@pytest.mark.parametrize("theta", [1.0, 3.0])
def test_all_classes_sampled_without_correction_is_full_cross_entropy(theta):
    g = torch.Generator().manual_seed(0)
    B, T, H, V = 3, 5, 8, 11
    hidden = torch.randn(B, T, H, generator=g)
    weight, bias = torch.randn(V, H, generator=g), torch.randn(V, generator=g)
    labels = torch.randint(0, V, (B, T), generator=g)
    labels[0, 3:] = -100
    labels[2, 1] = -100
    novel = torch.rand(B, T, generator=g) < 0.5
    got = sampled_softmax_loss(
        hidden, weight, bias, labels, torch.arange(V), None, None, novel_mask=novel, theta=theta, num_items=17
    )
    full = weighted_cross_entropy(
        F.linear(hidden, weight, bias), labels, novel_mask=novel, theta=theta, num_items=17
    )
    assert got.item() == pytest.approx(full.item(), rel=1e-5)
    if theta == 1.0:
        plain = F.cross_entropy(
            F.linear(hidden, weight, bias).view(-1, V), labels.view(-1), ignore_index=-100
        )
        assert sampled_softmax_loss(hidden, weight, bias, labels, torch.arange(V), None, None).item() == (
            pytest.approx(plain.item(), rel=1e-5)
        )


def test_proposals_and_candidate_sampling():
    q = log_uniform_probs(50)
    assert q.sum().item() == pytest.approx(1.0, abs=1e-6) and bool((q[1:] < q[:-1]).all())
    assert q[0].item() == pytest.approx(math.log(2) / math.log(51), rel=1e-6)
    u = unigram_probs([0, 3, 15])  # add-one smoothed, ** 0.75
    assert u.tolist() == pytest.approx([x / (1 + 4**0.75 + 16**0.75) for x in (1, 4**0.75, 16**0.75)])

    c = sample_candidates(q, 10, step_generator(1, 7, 0))
    assert c.ids.numel() == 10 and c.ids.unique().numel() == 10 and c.num_tries >= 10
    assert torch.equal(c.ids, sample_candidates(q, 10, step_generator(1, 7, 0)).ids)  # a function of the seed
    assert not torch.equal(c.ids, sample_candidates(q, 10, step_generator(1, 8, 0)).ids)
    with pytest.raises(MultimsdError, match="num_sampled=50"):
        sample_candidates(q, 50)
    # TF's expected counts: k * Q with replacement, 1 - (1 - Q) ** tries for unique sampling
    assert log_expected_count(torch.tensor([0.1]), 5, False).exp().item() == pytest.approx(0.5, rel=1e-6)
    assert log_expected_count(torch.tensor([0.1]), 5, True).exp().item() == pytest.approx(
        1 - 0.9**5, rel=1e-6
    )


def test_unique_sampling_expected_counts_match_the_inclusion_frequency():
    # The - log E(c) correction is only right if E(c) is the probability that c is among the candidates.
    q = log_uniform_probs(12)
    g = torch.Generator().manual_seed(3)
    hits, expected, trials = torch.zeros(12), torch.zeros(12), 3000
    for _ in range(trials):
        c = sample_candidates(q, 4, g)
        hits[c.ids] += 1
        expected += log_expected_count(q, c.num_tries, True).exp()
    assert (hits / trials).tolist() == pytest.approx((expected / trials).tolist(), abs=0.03)


# ---------------------------------------------------------------------------------------------- tokenizer
def test_tokenizer_vocabularies_round_trip_and_save_load(tmp_path, en_rows):
    rows = en_rows["train"]
    tok = WordTokenizer.build(rows)
    assert tok.source_vocab[:4] == tok.target_vocab[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert not tok.shared and tok.source_vocab != tok.target_vocab
    # separate vocabularies: words only the complex side uses are not target words, and the reverse
    src_only = set(tok.source_vocab) - set(tok.target_vocab)
    tgt_only = set(tok.target_vocab) - set(tok.source_vocab)
    assert "hyperresponsiveness" in src_only and src_only and tgt_only
    # ids are sorted by training frequency (what the log-uniform sampler assumes)
    counts = tok.target_counts[4:]
    assert counts == sorted(counts, reverse=True) and tok.target_counts[3] == len(rows)

    row = rows[0]
    ids, labels, novel = tok.encode_pair(row, max_length=50)
    assert labels[-1] == tok.eos_token_id and len(novel) == len(labels)
    assert tok.decode(labels, "en") == row["simple"]  # round trip (in-vocabulary sentence)
    assert tok.decode([], "en") == "" and tok.decode([5, 3, 6], "en") == tok.target_vocab[5]  # stops at </s>
    # novelty is decided on words: "Asthma" is copied from the input, "long" is not
    words = tok.words(row["simple"], "en")
    assert novel[words.index("Asthma")] == 0 and novel[words.index("long")] == 1 and novel[-1] == 0
    # unknown words map to <unk>; truncation keeps </s>
    assert tok.encode_target("Zyxwv asthma.", "en", 50)[0] == tok.unk_token_id
    assert (
        len(tok.encode_target(row["simple"], "en", 5)) == 5
        and tok.encode_target(row["simple"], "en", 5)[-1] == 3
    )

    tok.save_pretrained(tmp_path)
    back = WordTokenizer.from_pretrained(tmp_path)
    assert back.source_vocab == tok.source_vocab and back.target_vocab == tok.target_vocab
    assert back.target_counts == tok.target_counts and back.encode_pair(row, 50) == (ids, labels, novel)


def test_tokenizer_options_and_languages():
    rows = [
        {"complex": "The The the cat sat.", "simple": "A cat sat.", "lang": "en"},
        {"complex": "喘息は気道の慢性炎症性疾患です。", "simple": "ぜんそくは気道の病気です。", "lang": "ja"},
    ]
    tok = WordTokenizer.build(rows, lowercase=True, min_count=2)
    assert tok.source_vocab[4:] == ["the"]  # lowercased, and only words seen twice
    tok = WordTokenizer.build(rows, max_vocab_size=6)
    assert len(tok.source_vocab) == 6 and tok.source_vocab[4] == "The"
    shared = WordTokenizer.build(rows, shared=True)
    assert shared.shared and "A" in shared.source_vocab and "sat" in shared.target_vocab
    ja = WordTokenizer.build(rows)
    ids = ja.encode_target(rows[1]["simple"], "ja", 50)
    assert ja.decode(ids, "ja") == rows[1]["simple"]  # MeCab morphemes joined without spaces
    assert detokenize(
        ["l", "'", "asthme", "(", "2", ".", "5", "%", ")", "anti", "-", "viral", "."], "fr"
    ) == ("l'asthme (2.5%) anti-viral.")
    assert detokenize(["DVT", "は", "DVT", "ok"], "zh") == "DVTはDVT ok"
    with pytest.raises(MultimsdError, match="max_vocab_size"):
        WordTokenizer.build(rows, max_vocab_size=4)


# ---------------------------------------------------------------------------------------------- the model
def tiny_model(tok, attention="bahdanau", input_feeding=True, size=16, layers=2, seed=0):
    torch.manual_seed(seed)
    cfg = LstmSeq2SeqConfig(
        tok.source_vocab_size, tok.target_vocab_size, size, size, layers, layers, attention, input_feeding
    )
    return LstmSeq2Seq(cfg).eval()


def batch_of(tok, rows, max_length=50):
    return Collator(tok.pad_token_id, shift=False)(tokenize_rows(tok, rows, "lstm", max_length))


@pytest.mark.parametrize("attention", ["bahdanau", "luong"])
@pytest.mark.parametrize("input_feeding", [True, False])
def test_generate_shapes_beam1_is_greedy_and_teacher_forcing_agrees(en_rows, attention, input_feeding):
    tok = WordTokenizer.build(en_rows["train"])
    model = tiny_model(tok, attention, input_feeding)
    b = batch_of(tok, en_rows["train"][:5])
    greedy = model.generate(b["input_ids"], b["attention_mask"], max_new_tokens=9)
    assert greedy.dtype == torch.long and greedy.shape == (5, 9)  # an untrained model does not stop early
    assert torch.equal(
        model.generate(b["input_ids"], b["attention_mask"], max_new_tokens=9, num_beams=1), greedy
    )
    assert torch.equal(model._beam_search(b["input_ids"], b["attention_mask"], 9, 1, 1.0), greedy)
    beam = model.generate(b["input_ids"], b["attention_mask"], max_new_tokens=9, num_beams=3)
    assert beam.shape[0] == 5 and beam.shape[1] <= 9
    # the teacher-forced forward pass (one call) computes the same decoder as step-by-step decoding: fed the
    # greedy output as labels, its argmax is that output again
    logits = model(b["input_ids"], b["attention_mask"], labels=greedy).logits
    logits[..., [tok.pad_token_id, tok.bos_token_id]] = float("-inf")
    assert torch.equal(logits.argmax(-1), greedy)
    # padding the source does not change the result (packed encoder, masked attention)
    one = b["input_ids"][1:2, : int(b["attention_mask"][1].sum())]
    assert torch.equal(model.generate(one, max_new_tokens=9), greedy[1:2])


def test_beam_search_finds_a_better_sequence_than_greedy_or_the_same(en_rows):
    tok = WordTokenizer.build(en_rows["train"])
    model = tiny_model(tok, size=24)
    b = batch_of(tok, en_rows["train"][:6])

    def logprob(seqs):  # sum of log-probabilities of the sequences (up to and including </s>)
        out = model(b["input_ids"], b["attention_mask"], labels=seqs)
        logits = out.logits.float()
        logits[..., [tok.pad_token_id, tok.bos_token_id]] = float("-inf")
        lp = torch.log_softmax(logits, -1).gather(-1, seqs.clamp(min=0)[..., None])[..., 0]
        return (lp * (seqs != tok.pad_token_id)).sum(1)

    greedy = model.generate(b["input_ids"], b["attention_mask"], max_new_tokens=6)
    beam = model.generate(
        b["input_ids"], b["attention_mask"], max_new_tokens=6, num_beams=4, length_penalty=0.0
    )
    assert (logprob(beam) >= logprob(greedy) - 1e-4).all()


def test_model_save_and_load(tmp_path, en_rows):
    tok = WordTokenizer.build(en_rows["train"])
    model = tiny_model(tok, "luong", False)
    model.save_pretrained(tmp_path)
    back = LstmSeq2Seq.from_pretrained(tmp_path).eval()
    assert back.config == model.config
    b = batch_of(tok, en_rows["train"][:3])
    assert torch.equal(
        back(b["input_ids"], labels=b["labels"]).logits, model(b["input_ids"], labels=b["labels"]).logits
    )
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    with pytest.raises(MultimsdError, match="not an LSTM"):
        LstmSeq2Seq.from_pretrained(tmp_path)


@pytest.mark.integration
def test_overfits_20_pairs_with_the_sampled_softmax(en_rows):
    rows = en_rows["train"][:20]
    tok = WordTokenizer.build(rows)
    model = tiny_model(tok, size=64, layers=1).train()
    b = batch_of(tok, rows, max_length=20)
    loss_fn = SampledSoftmax.from_sampler_name(
        "log_uniform", model.output_projection, tok.target_counts, 32, 0
    )
    opt = torch.optim.Adam(model.parameters(), lr=2e-2)
    losses = []
    for step in range(45):
        out = model(b["input_ids"], b["attention_mask"], labels=b["labels"])
        loss = loss_fn(out.hidden, b["labels"], step=step)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.1 * losses[0], losses[::5]
    model.eval()
    # the full softmax (what validation and decoding use) has learnt the pairs too
    logits = model(b["input_ids"], labels=b["labels"]).logits
    full = weighted_cross_entropy(logits, b["labels"], novel_mask=b["novel"], theta=1.0)
    assert full.item() < 0.1 * losses[0]
    preds = tok.batch_decode(model.generate(b["input_ids"], b["attention_mask"], max_new_tokens=20), "en")
    refs = [tok.decode([t for t in lab.tolist() if t != -100], "en") for lab in b["labels"]]
    assert sum(p == r for p, r in zip(preds, refs)) >= 12, list(zip(preds, refs))


# ---------------------------------------------------------------------------------------------- paraphrase mode
def test_paraphrase_splits_swap_and_never_share_a_sentence():
    def row(c, s, split):
        return {"complex": c, "simple": s, "lang": "en", "split": split}

    rows = {
        "test": [row("a", "b", "test")],
        "validation": [row("c", "d", "validation"), row("b", "e", "validation")],  # b is a test sentence
        "train": [
            row("a  ", "f", "train"),
            row("g", "d", "train"),
            row("h", "i", "train"),
            row("i", "h", "train"),
        ],
    }
    out = paraphrase_splits(rows)
    pairs = {s: {(r["complex"].strip(), r["simple"]) for r in out[s]} for s in out}
    assert pairs["test"] == {("a", "b"), ("b", "a")}
    assert pairs["validation"] == {("c", "d"), ("d", "c")}  # (b, e) leaked test's b
    assert pairs["train"] == {("h", "i"), ("i", "h")}  # a (test) and d (validation) leak; (i, h) deduplicated
    assert [r.get("swapped", False) for r in out["test"]] == [False, True]


def test_paraphrase_mode_on_the_sample_all_languages():
    from multimsd.training.config import TrainData
    from multimsd.training.data import select

    cfg = TrainData(mode="multi", paraphrase=True)
    out = select(sample_gold_pairs(), cfg, seed=0)
    sentences = {
        s: {(r["lang"], " ".join(r[k].split())) for r in out[s] for k in ("complex", "simple")} for s in out
    }
    assert all(out[s] for s in out)
    assert not (sentences["train"] & sentences["validation"]) and not (sentences["train"] & sentences["test"])
    assert not (sentences["validation"] & sentences["test"])
    # every pair is there in both directions
    for s in out:
        fwd = {(r["lang"], r["complex"], r["simple"]) for r in out[s]}
        assert {(lang, b, a) for lang, a, b in fwd} == fwd


# ---------------------------------------------------------------------------------------------- the training loop
def lstm_cfg(tmp_path, name="run", **over):
    cfg = {
        "model": {
            "name": "tiny_lstm",
            "kind": "lstm",
            "pretrained": "scratch",
            "lstm": {
                "embedding_size": 16,
                "hidden_size": 16,
                "encoder_layers": 2,
                "decoder_layers": 2,
                "num_sampled": 16,
            },
        },
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 8,
            "max_eval_examples": 3,
            "max_length": 20,
        },
        "optim": {
            "optimizer": "sgd",
            "lr": 0.5,
            "scheduler": "exponential",
            "gamma": 0.99,
            "batch_size": 2,
            "epochs": 2,
        },
        "eval": {"max_new_tokens": 6, "batch_size": 4, "generate": False, "before_training": False},
        "output_dir": str(tmp_path / name),
        "checkpoint_every": 1,
    }
    for k, v in over.items():
        *path, key = k.split("__")
        d = cfg
        for p in path:
            d = d.setdefault(p, {})
        d[key] = v
    return cfg


def step_losses(res):
    return [h["loss"] for h in res["history"] if "step" in h]


@pytest.mark.integration
def test_loop_resume_after_a_crash_gives_the_same_losses(tmp_path, fresh_accelerate_state, monkeypatch):
    from multimsd.training import loop

    ref = loop.run(lstm_cfg(tmp_path, "ref"))
    expected = step_losses(ref)
    assert len(expected) == 8  # 8 examples / batch 2 x 2 epochs
    # SGD, lr 0.5 x 0.99 per optimizer step (the checkpointed optimizer holds the current lr)
    opt_state = torch.load(
        tmp_path / "ref" / "checkpoints" / "step_00000008" / "optimizer.bin", weights_only=False
    )
    assert opt_state["param_groups"][0]["lr"] == pytest.approx(0.5 * 0.99**8)
    assert (tmp_path / "ref" / "best" / "vocab.json").exists()

    real_save = loop.save_checkpoint

    def crash_after_step_3(accelerator, out, state, keep=2):
        real_save(accelerator, out, state, keep)
        if state.step == 3:  # mid-epoch: the resume has to skip the batches already seen
            raise KeyboardInterrupt("simulated kill")

    monkeypatch.setattr(loop, "save_checkpoint", crash_after_step_3)
    with pytest.raises(KeyboardInterrupt):
        loop.run(lstm_cfg(tmp_path, "killed"))
    monkeypatch.setattr(loop, "save_checkpoint", real_save)
    resumed = loop.run(lstm_cfg(tmp_path, "killed"))
    assert resumed["resumed_from"].endswith("step_00000003")
    assert step_losses(resumed) == expected


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"model__lstm__num_sampled": 5000}, "must be smaller than the target vocabulary"),
        ({"mode": "icl"}, "mode=icl prompts a chat model"),
        # LoRA is an option of the transformers kinds: the LSTM's options have no such key
        ({"model__lora__enabled": True}, "Key 'lora' not in 'LstmModelSettings'"),
        ({"model__lstm__sampler": "zipf"}, "sampler"),
        ({"model__lstm__attention": "dot"}, "attention"),
        ({"loss__label_smoothing": 0.1}, "label_smoothing needs the full softmax"),
        ({"optim__optimizer": "adam"}, "optim.optimizer"),
        ({"model__pretrained": "/no/such/dir"}, "takes 'scratch'"),
    ],
)
def test_bad_lstm_input(tmp_path, fresh_accelerate_state, over, message):
    from multimsd.training.loop import run

    with pytest.raises(MultimsdError, match=message):
        run(lstm_cfg(tmp_path, **over))
    assert not (tmp_path / "run" / "checkpoints").exists()


@pytest.mark.integration
def test_full_softmax_training_and_a_saved_model_as_the_start(tmp_path, fresh_accelerate_state):
    from multimsd.training.loop import run

    first = run(lstm_cfg(tmp_path, "a", model__lstm__num_sampled=0, eval__generate=True, optim__epochs=1))
    assert all(math.isfinite(x) for x in step_losses(first)) and "sari" in first["validation"]
    # continue from the saved best/ (vocabularies and architecture come from there)
    second = run(
        lstm_cfg(
            tmp_path,
            "b",
            model__pretrained=str(tmp_path / "a" / "best"),
            model__lstm__num_sampled=0,
            optim__epochs=1,
        )
    )
    # the same first batch (same seed), now seen by the trained weights
    assert step_losses(second)[0] < step_losses(first)[0]
    vocab = (tmp_path / "a" / "best" / "vocab.json").read_text()
    assert (tmp_path / "b" / "best" / "vocab.json").read_text() == vocab


# ---------------------------------------------------------------------------------------------- the CLIs
@pytest.mark.e2e
def test_cli_train_then_evaluate(tmp_path, repo_root):
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    out = tmp_path / "run"
    train = subprocess.run(
        [
            sys.executable,
            str(repo_root / "train.py"),
            "model=tiny_lstm",
            "debug=train_tiny",
            f"output_dir={out}",
        ],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert train.returncode == 0, train.stderr[-3000:]
    assert (out / "best" / "model.safetensors").exists() and (out / "best" / "vocab.json").exists()
    preds = (out / "predictions" / "test" / "en.txt").read_text(encoding="utf-8").splitlines()
    assert len(preds) == 4 and all(preds)  # debug=train_tiny: 4 rows per language and split
    res = json.loads((out / "all_results.json").read_text())
    assert set(res["test"]["per_language"]) == {"en"} and "before" in res and res["train_tokens"] > 0

    ev = subprocess.run(
        [
            sys.executable,
            str(repo_root / "evaluate.py"),
            f"refs.path={out / 'predictions' / 'test' / 'references.jsonl'}",
            f"systems.lstm={out / 'predictions' / 'test'}",
            f"output.dir={tmp_path / 'eval'}",
        ],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert ev.returncode == 0, ev.stderr[-3000:]
    scores = json.loads((tmp_path / "eval" / "results.json").read_text())["systems"]["lstm"]["en"]
    assert {"bleu", "meteor", "ter"} <= set(scores)
    assert 0 <= scores["bleu"] <= 100 and 0 <= scores["meteor"] <= 100 and scores["ter"] >= 0


@pytest.mark.slow  # the error contract itself is shared by all models (tests/project/test_bad_input.py)
def test_cli_bad_input_is_one_line_and_exit_2(tmp_path, repo_root):
    proc = subprocess.run(
        [
            sys.executable,
            str(repo_root / "train.py"),
            "model=tiny_lstm",
            "mode=icl",
            f"output_dir={tmp_path}",
        ],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].startswith("error: mode=icl prompts a chat model")
    assert "Traceback" not in proc.stderr

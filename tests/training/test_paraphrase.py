"""The Siamese BiLSTM paraphrase identifier (Adduru et al. 2018, section 2.3) and its use by aligner=lexical."""

import json
import os
import random

import numpy as np
import pytest
import torch
from conftest import run_cli as run_align

from multimsd.alignment.aligners.lexical import (
    STRING_SCORES,
    LexicalConfig,
    lexical_matches,
    mean_similarity,
    score_matrices,
)
from multimsd.alignment.aligners.paraphrase import (
    CONFIG_FILE,
    load_paraphrase_model,
    paraphrase_matrix,
    paraphrase_probability,
    save_paraphrase_model,
    train_paraphrase,
)
from multimsd.alignment.aligners.paraphrase_config import ParaphraseConfig
from multimsd.alignment.aligners.paraphrase_data import PairRow, load_word2vec, make_splits, read_pairs
from multimsd.errors import MultimsdError

TINY = {"embedding_dim": 16, "hidden_size": 8, "dense_size": 8, "num_layers": 1, "batch_size": 32, "lr": 0.01}
TINY_ARGS = [f"aligner.lexical.paraphrase.{k}={v}" for k, v in TINY.items()]
# Small models on a busy 2-core machine: more threads than cores only adds spinning.
ENV = {**os.environ, "OMP_NUM_THREADS": "1"}


@pytest.fixture(autouse=True, scope="module")
def one_thread():
    # In-process training too: tiny LSTMs run fastest on one thread (and the setting is put back).
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def toy_pairs(n: int = 240, seed: int = 0) -> list[tuple[str, str]]:
    """Easy paraphrases: both sentences draw their words from one of six disjoint topics.

    Random negatives then mostly pair two topics, which a Siamese encoder can learn from scratch.
    """
    rng = random.Random(seed)
    topics = [[f"t{k}w{i}" for i in range(8)] for k in range(6)]
    out = []
    for _ in range(n):
        t = rng.choice(topics)
        out.append((" ".join(rng.sample(t, 5)), " ".join(rng.sample(t, 5))))
    return out


@pytest.fixture(scope="module")
def toy_tsv(tmp_path_factory):
    path = tmp_path_factory.mktemp("para") / "toy.tsv"
    path.write_text("".join(f"{a}\t{b}\n" for a, b in toy_pairs()), encoding="utf-8")
    return path


def run_cli(python, repo_root, *args):
    return run_align(python, repo_root, *args, env=ENV)


@pytest.fixture(scope="module")
def trained(tmp_path_factory, python, repo_root, toy_tsv):
    out = tmp_path_factory.mktemp("model") / "para"
    proc = run_cli(
        python,
        repo_root,
        "mode=train_paraphrase",
        "aligner=lexical",
        f"aligner.lexical.paraphrase.train_path={toy_tsv}",
        f"aligner.lexical.paraphrase.output_dir={out}",
        "aligner.lexical.paraphrase.epochs=12",
        *TINY_ARGS,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out, proc


@pytest.mark.e2e
def test_cli_training_writes_a_model_that_learnt(trained):
    out, proc = trained
    assert f"paraphrase model saved to {out.resolve()}" in proc.stdout
    assert "validation accuracy" in proc.stdout
    for name in (CONFIG_FILE, "vocab.json", "model.safetensors", "metrics.json"):
        assert (out / name).is_file(), name
    metrics = json.loads((out / "metrics.json").read_text())
    history = metrics["history"]
    assert history[-1]["train_loss"] < history[0]["train_loss"] - 0.1  # the loss falls
    # balanced classes (random negatives), so chance is 0.5: the easy toy set is separated far better
    assert metrics["validation"]["accuracy"] > 0.75
    assert metrics["test"]["accuracy"] > 0.75
    meta = json.loads((out / CONFIG_FILE).read_text())
    assert meta["hidden_size"] == 8 and meta["num_layers"] == 1 and meta["max_tokens"] == 30


def test_reload_gives_identical_probabilities(tmp_path, toy_tsv):
    p = ParaphraseConfig(epochs=2, **TINY)
    model, _ = train_paraphrase(p, read_pairs(toy_tsv))
    save_paraphrase_model(model, tmp_path / "m")
    again = load_paraphrase_model(tmp_path / "m")
    s1 = [a for a, _ in toy_pairs(20, seed=1)] + ["", "an unseen sentence"]
    s2 = [b for _, b in toy_pairs(20, seed=2)] + ["t0w1", ""]
    first = paraphrase_probability(model, s1, s2)
    assert first.shape == (22,) and ((first > 0) & (first < 1)).all()
    assert np.array_equal(first, paraphrase_probability(again, s1, s2))
    # the m x n path (each sentence encoded once, dense layer split) agrees with pair-by-pair
    mat = paraphrase_matrix(again, s1[:5], s2[:7])
    pairs = paraphrase_probability(again, [a for a in s1[:5] for _ in range(7)], s2[:7] * 5)
    np.testing.assert_allclose(mat, pairs.reshape(5, 7), atol=1e-6)


@pytest.mark.integration
def test_training_is_deterministic(toy_tsv):
    p = ParaphraseConfig(epochs=2, **TINY)
    rows = read_pairs(toy_tsv)
    a, ma = train_paraphrase(p, rows)
    b, mb = train_paraphrase(p, rows)
    assert ma["history"] == mb["history"]
    for (ka, va), (kb, vb) in zip(a.net.state_dict().items(), b.net.state_dict().items()):
        assert ka == kb and torch.equal(va, vb)


def test_splits_balance_and_leak_no_sentence():
    rows = [PairRow(a, b, None, "en") for a, b in toy_pairs(200)]
    splits = make_splits(rows, 0.1, 0.1, swap=False, seed=0)
    firsts = {}
    for name, part in splits.items():
        labels = [y for _, _, y, _ in part]
        assert labels.count(0) == labels.count(1) > 0, name  # random negatives balance the classes
        positives = {(s1, s2) for s1, s2, y, _ in part if y == 1}
        assert all((s1, s2) not in positives and (s2, s1) not in positives for s1, s2, y, _ in part if y == 0)
        for s1, _, y, _ in part:
            if y == 1:
                assert firsts.setdefault(s1, name) == name  # a first sentence lives in one part only
    swapped = make_splits(rows, 0.1, 0.1, swap=True, seed=0)
    assert len(swapped["train"]) == 2 * len(splits["train"])
    # given negatives count towards the balance
    labelled = [PairRow(a, b, 1, "en") for a, b in toy_pairs(60)] + [
        PairRow(a, b, 0, "en")
        for a, b in zip([x for x, _ in toy_pairs(60, 3)], [y for _, y in toy_pairs(60, 4)])
    ]
    part = make_splits(labelled, 0.2, 0.0, swap=False, seed=0)["train"]
    assert sum(y == 0 for *_, y, _ in part) >= sum(y == 1 for *_, y, _ in part)


def test_read_pairs_formats(tmp_path):
    plain = tmp_path / "plain.tsv"
    plain.write_text("a b\tc d\t1\nc d\te f\t0\tde\ng h\ti j\n", encoding="utf-8")
    rows = read_pairs(plain)
    assert [(r.s1, r.s2, r.label, r.lang) for r in rows] == [
        ("a b", "c d", 1, "en"),
        ("c d", "e f", 0, "de"),
        ("g h", "i j", None, "en"),
    ]
    quora = tmp_path / "quora.tsv"
    quora.write_text(
        "id\tqid1\tqid2\tquestion1\tquestion2\tis_duplicate\n0\t1\t2\tHow are you?\tHow do you do?\t1\n",
        encoding="utf-8",
    )
    assert [(r.s1, r.s2, r.label) for r in read_pairs(quora)] == [("How are you?", "How do you do?", 1)]
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text(
        '{"s1": "x y", "s2": "y z", "lang": "fr"}\n{"sentence1": "p", "sentence2": "q", "label": 0}\n'
    )
    assert [(r.s1, r.label, r.lang) for r in read_pairs(jsonl)] == [("x y", None, "fr"), ("p", 0, "en")]
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tb\tmaybe\n", encoding="utf-8")
    with pytest.raises(MultimsdError, match=r"bad.tsv:1: label 'maybe' is not 0/1"):
        read_pairs(bad)
    with pytest.raises(MultimsdError, match="not found"):
        read_pairs(tmp_path / "missing.tsv")


def test_word2vec_text_and_binary(tmp_path):
    from gensim.models import KeyedVectors

    vocab = {"<pad>": 0, "<unk>": 1, "glioma": 2, "tumour": 3, "absent": 4}
    text = tmp_path / "vec.txt"
    # header "count dim"; a capitalised entry is used only when no lowercase one exists
    text.write_text("3 2\nGlioma 9 9\nglioma 1 2\nTumour 3 4\n", encoding="utf-8")
    matrix, found = load_word2vec(str(text), False, vocab, 2)
    assert found == 2
    np.testing.assert_array_equal(matrix, [[0, 0], [0, 0], [1, 2], [3, 4], [0, 0]])
    kv = KeyedVectors(vector_size=2)
    kv.add_vectors(["glioma", "other"], np.array([[5.0, 6.0], [7.0, 8.0]], dtype=np.float32))
    binary = tmp_path / "vec.bin"
    kv.save_word2vec_format(str(binary), binary=True)
    matrix, found = load_word2vec(str(binary), True, vocab, 2)
    assert found == 1 and matrix[2].tolist() == [5.0, 6.0]
    with pytest.raises(MultimsdError, match="dimension 2, but paraphrase.embedding_dim=3"):
        load_word2vec(str(binary), True, vocab, 3)


def test_pretrained_vectors_are_used_and_frozen(tmp_path, toy_tsv):
    vec = tmp_path / "vec.txt"
    vec.write_text("t0w1 " + " ".join(["0.5"] * 16) + "\n", encoding="utf-8")
    p = ParaphraseConfig(epochs=1, embeddings_path=str(vec), **TINY)
    model, metrics = train_paraphrase(p, read_pairs(toy_tsv))
    assert metrics["word2vec_found"] == 1
    row = model.net.embedding.weight[model.vocab["t0w1"]]
    assert torch.equal(row, torch.full((16,), 0.5))  # frozen (paper): unchanged by training
    assert not model.net.embedding.weight[model.vocab["t0w2"]].any()  # missing from the file: zero


@pytest.mark.integration
def test_lexical_uses_the_paraphrase_score(trained):
    model_dir, _ = trained
    model = load_paraphrase_model(model_dir)
    c = ["t0w1 t0w2 t0w3 t0w4", "t3w1 t3w2 t3w5"]
    s = ["t0w4 t0w3 t0w6 t0w7", "t5w0 t5w1 t5w2", "t3w5 t3w1 t3w2 t3w7"]
    mats = score_matrices(c, s, "en", paraphrase_model=model)
    assert list(mats) == [*STRING_SCORES, "paraphrase"]  # 12 scores
    np.testing.assert_allclose(mats["paraphrase"], paraphrase_matrix(model, c, s))
    string_only = mean_similarity({k: v for k, v in mats.items() if k != "paraphrase"})
    twelve = (11 * string_only + mats["paraphrase"]) / 12
    cfg = LexicalConfig(max_mean=1.0)
    cfg.paraphrase.model_path = str(model_dir)
    [matches] = lexical_matches([(c, s)], ["en"], cfg)
    assert len(matches) == 6
    for m in matches:
        assert m.score == pytest.approx(twelve[m.i, m.j], abs=1e-12)
    # the trained identifier ranks same-topic pairs above cross-topic ones
    p = mats["paraphrase"]
    assert p[0, 0] > p[0, 1] and p[1, 2] > p[1, 1]


def test_align_run_with_paraphrase_model(trained, tmp_path, caplog):
    from multimsd.alignment.stage import run

    model_dir, _ = trained
    cfg = {
        "aligner": {
            "method": "lexical",
            "threshold": 0.5,
            "lexical": {"paraphrase": {"model_path": str(model_dir)}},
        },
        "data": {"languages": ["en", "ja"], "max_articles": 3},
        "output": {"dir": str(tmp_path / "aligned")},
    }
    with caplog.at_level("INFO", logger="multimsd"):
        stats = run(cfg)
    assert "mean of 12 similarities" in caplog.text
    assert stats["aligner"]["method"] == "lexical"


@pytest.mark.e2e
def test_cli_missing_train_file(tmp_path, python, repo_root):
    out = tmp_path / "model"
    proc = run_cli(
        python,
        repo_root,
        "mode=train_paraphrase",
        "aligner=lexical",  # the mode and its options belong to the lexical aligner
        f"aligner.lexical.paraphrase.train_path={tmp_path / 'nope.tsv'}",
        f"aligner.lexical.paraphrase.output_dir={out}",
    )
    assert proc.returncode == 2
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "paraphrase training file not found" in errors[0], proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    assert not out.exists()


@pytest.mark.parametrize("case", ["word2vec_dimension", "foreign_output_dir"])
def test_bad_input_is_one_error_line(case, tmp_path, toy_tsv, capsys):
    """The CLI contract (one ``error:`` line, exit status 2, nothing left behind), run in-process."""
    from multimsd.alignment.stage import run
    from multimsd.commands.stage import run_stage

    out = tmp_path / "model"
    para = {"train_path": str(toy_tsv), "output_dir": str(out), **TINY}
    if case == "word2vec_dimension":
        vec = tmp_path / "vec.txt"
        vec.write_text("t0w1 0.1 0.2 0.3\n", encoding="utf-8")  # 3-d vectors, the model wants 16
        para["embeddings_path"] = str(vec)
        expect = "vector of dimension 3, but paraphrase.embedding_dim=16"
    else:
        out.mkdir()
        (out / "precious.txt").write_text("not ours")
        expect = "refusing to overwrite"
    cfg = {"mode": "train_paraphrase", "aligner": {"method": "lexical", "lexical": {"paraphrase": para}}}
    with pytest.raises(SystemExit) as exit_info:
        run_stage(run, cfg)
    assert exit_info.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and expect in errors[0]
    if case == "foreign_output_dir":
        assert [p.name for p in out.iterdir()] == ["precious.txt"]
    else:
        assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".model")]  # no temp dirs left

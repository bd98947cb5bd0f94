"""The training stage end to end on tiny random models (seconds each): loop, loss, checkpoints, ICL, errors."""

import json
from pathlib import Path

import pytest
import torch

from multimsd.errors import MultimsdError
from multimsd.training.loop import run

# Each test builds its own Accelerator (fixture in conftest.py).
pytestmark = pytest.mark.usefixtures("fresh_accelerate_state")


def tiny_cfg(tmp_path, model="tiny_mbart", **over):
    kind = "seq2seq" if model == "tiny_mbart" else "causal"
    # the chat prompt (instruction + sentence) is long in tokens, the mBART input is not
    max_length = 64 if kind == "seq2seq" else 512
    cfg = {
        "model": {
            "name": model,
            "kind": kind,
            "pretrained": f"tiny:{model.split('_')[1]}",
            "lora": {"enabled": kind == "causal"},
        },
        "data": {
            "languages": ["en"],
            "mode": "mono",
            "max_train_examples": 8,
            "max_eval_examples": 3,
            "max_length": max_length,
        },
        "optim": {"batch_size": 4, "epochs": 1, "lr": 1e-2},
        "eval": {"max_new_tokens": 6, "batch_size": 4, "num_beams": 1},
        "output_dir": str(tmp_path / "run"),
    }
    for k, v in over.items():
        sect, key = k.split("__")
        cfg.setdefault(sect, {})[key] = v
    return cfg


@pytest.mark.e2e
def test_tiny_mbart_trains_and_writes_everything(tmp_path):
    res = run(tiny_cfg(tmp_path, loss__theta=2.0))
    out = tmp_path / "run"
    steps = [h for h in res["history"] if "loss" in h and "step" in h]
    assert len(steps) == 2  # 8 examples / batch 4
    assert all(torch.isfinite(torch.tensor(h["loss"])) for h in steps)
    assert "val_loss" in res["before"] and "sari" in res["before"]
    assert (out / "best" / "config.json").exists()
    preds = (out / "predictions" / "test" / "en.txt").read_text(encoding="utf-8").splitlines()
    refs = (out / "predictions" / "test" / "references.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(preds) == len(refs) == 3
    saved = json.loads((out / "all_results.json").read_text())
    assert set(saved["test"]["per_language"]) == {"en"} and 0 <= saved["test"]["sari"] <= 100
    assert list((out / "checkpoints").glob("step_*"))


@pytest.mark.e2e
def test_epoch_generation_is_capped_and_final_predictions_are_whole(tmp_path):
    res = run(tiny_cfg(tmp_path, eval__generate_max_rows=1))
    epoch = next(h for h in res["history"] if "sari" in h)
    assert epoch["per_language"]["en"]["n"] == 1 and res["before"]["per_language"]["en"]["n"] == 1
    # the best model's predictions: every validation and test row (data.max_eval_examples=3)
    assert res["validation"]["per_language"]["en"]["n"] == 3 and res["test"]["per_language"]["en"]["n"] == 3


@pytest.mark.integration
def test_weights_change_and_lora_only(tmp_path):
    from multimsd.training.kinds.transformer import TransformerModelSettings as ModelSettings
    from multimsd.training.modeling import load_model_and_tokenizer

    ms = ModelSettings(name="tiny_llama", kind="causal", pretrained="tiny:llama")
    ms.lora.enabled = True
    model, _ = load_model_and_tokenizer(ms)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    run(tiny_cfg(tmp_path, model="tiny_llama"))
    from peft.utils import load_peft_weights

    trained = load_peft_weights(str(tmp_path / "run" / "best"))
    initial = {n.replace(".default", ""): p for n, p in model.named_parameters() if "lora_B" in n}
    # LoRA's B matrices start at zero: after training some must have moved
    moved = [n for n, p in trained.items() if "lora_B" in n and p.abs().sum() > 0]
    assert moved and all(initial[n].abs().sum() == 0 for n in initial)


def test_icl_few_shot_writes_predictions(tmp_path):
    res = run({**tiny_cfg(tmp_path, model="tiny_llama"), "mode": "icl", "icl": {"shots": 2}})
    preds = (tmp_path / "run" / "predictions" / "test" / "en.txt").read_text(encoding="utf-8").splitlines()
    assert len(preds) == 3 and res["shots"] == 2 and "sari" in res["test"]


@pytest.mark.parametrize(
    ("over", "message"),
    [
        ({"loss__theta": 0.0}, "loss.theta"),
        ({"loss__theta": -2.0}, "loss.theta"),
        ({"data__languages": ["en", "de"]}, "mode=mono trains on one language"),
        ({"data__languages": ["xx"]}, "unknown language"),
        ({"data__path": "/no/such/pairs.jsonl"}, "training data not found"),
        ({"model__pretrained": "/no/such/model"}, "cannot load model"),
        ({"eval__early_stopping_metric": "sari", "eval__generate": False}, "needs eval.generate=true"),
        ({"eval__generate_max_rows": 0}, "eval.generate_max_rows"),
    ],
)
def test_bad_input(tmp_path, over, message):
    with pytest.raises(MultimsdError, match=message):
        run(tiny_cfg(tmp_path, **over))
    assert not (tmp_path / "run" / "checkpoints").exists()


def test_empty_training_split(tmp_path):
    p = tmp_path / "pairs.jsonl"
    p.write_text(
        json.dumps({"complex": "A b c d e.", "simple": "A b c.", "lang": "en", "split": "test"}) + "\n"
    )
    with pytest.raises(MultimsdError, match="no training pairs"):
        run(tiny_cfg(tmp_path, data__path=str(p)))


@pytest.mark.e2e
def test_checkpoint_of_another_config_is_refused_and_kept(tmp_path):
    run(tiny_cfg(tmp_path, optim__max_steps=1))
    ckpts = sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("step_*"))
    with pytest.raises(MultimsdError, match="different configuration"):
        run(tiny_cfg(tmp_path, optim__max_steps=1, loss__theta=4.0))
    assert sorted(p.name for p in (tmp_path / "run" / "checkpoints").glob("step_*")) == ckpts
    with pytest.raises(MultimsdError, match="already holds checkpoints"):
        run({**tiny_cfg(tmp_path, optim__max_steps=1), "resume": False})


@pytest.mark.e2e
def test_push_model_uploads_card_and_weights(tmp_path, monkeypatch):
    calls = {}

    class FakeApi:
        def create_repo(self, repo_id, private=None, exist_ok=None):
            calls["repo"] = (repo_id, private)

        def upload_folder(self, folder_path, repo_id, commit_message=None):
            from pathlib import Path

            calls["files"] = sorted(p.name for p in Path(folder_path).iterdir())
            calls["card"] = (Path(folder_path) / "README.md").read_text()

    monkeypatch.setattr("huggingface_hub.HfApi", FakeApi)
    res = run(tiny_cfg(tmp_path, hub__push=True, hub__repo_id="me/tiny", optim__max_steps=1))
    assert calls["repo"] == ("me/tiny", True)
    assert "config.json" in calls["files"] and "README.md" in calls["files"]
    assert "tiny_mbart" in calls["card"] and "| validation |" in calls["card"]
    assert "after" in res


@pytest.mark.e2e
def test_push_failure_does_not_leak_token(tmp_path, monkeypatch, capsys):
    token = "hf_SECRETsecretSECRET"
    monkeypatch.setenv("HF_TOKEN", token)

    class FailingApi:
        def create_repo(self, *a, **k):
            raise RuntimeError(f"401 for {token}")

    monkeypatch.setattr("huggingface_hub.HfApi", FailingApi)
    with pytest.raises(MultimsdError) as e:
        run(tiny_cfg(tmp_path, hub__push=True, hub__repo_id="me/tiny", optim__max_steps=1))
    assert token not in str(e.value)
    captured = capsys.readouterr()
    assert token not in captured.out + captured.err


@pytest.mark.integration
def test_tokenize_dataset_is_cached_and_equals_tokenize_rows(tmp_path):
    """Dataset.map tokenisation: same answer as the per-row encoder, one cache file per distinct input."""
    from multimsd.training.data import load_pairs, select, tokenize_dataset, tokenize_rows
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    tc = to_train_config(tiny_cfg(tmp_path, model="tiny_llama"))
    _, tok = load_model_and_tokenizer(tc.model)
    rows = select(load_pairs(None), tc.data, tc.seed)["train"]
    cache = tmp_path / "tok-cache"
    first = tokenize_dataset(tok, rows, "causal", 512, cache)
    assert first.to_list() == tokenize_rows(tok, rows, "causal", 512)
    (cached,) = {f["filename"] for f in first.cache_files}
    mtime = Path(cached).stat().st_mtime_ns
    again = tokenize_dataset(tok, rows, "causal", 512, cache)
    assert {f["filename"] for f in again.cache_files} == {cached}
    assert Path(cached).stat().st_mtime_ns == mtime  # read back, not written again
    assert again.to_list() == first.to_list()
    # A prompt cut by max_length leaves no label: that row is dropped, and the result gets a file of its own.
    short = tokenize_dataset(tok, rows, "causal", 40, cache)
    assert len(short) < len(first)
    assert len(list(cache.glob("tokenized-*.arrow"))) == 2
    assert len(tokenize_dataset(tok, [], "causal", 512, cache)) == 0


@pytest.mark.integration
def test_tokenizer_fingerprint_is_the_state_not_the_call_settings():
    """The tokenised-data cache key: another src_lang is another key, a call's truncation is not, and loading
    the same files again gives the same key (in a process of its own too: tests/training/test_train_cli.py)."""
    from transformers import AutoTokenizer

    from multimsd.training.data import tokenizer_fingerprint
    from multimsd.training.models.offline import resolve_model_path

    tok = AutoTokenizer.from_pretrained(resolve_model_path("tiny:mbart"))
    first = tokenizer_fingerprint(tok)
    tok("Ein Satz.", truncation=True, max_length=4)  # sets the backend's truncation for this call
    assert tok.backend_tokenizer.truncation is not None
    assert tokenizer_fingerprint(tok) == first
    assert tok.backend_tokenizer.truncation is not None  # put back as it was
    tok.src_lang = "de_DE"
    assert tokenizer_fingerprint(tok) != first
    tok.src_lang = "en_XX"
    assert tokenizer_fingerprint(tok) == first
    tok._vocab_scores[5] = ("changed", 0.0)  # the vocabulary list counts, not only its length
    assert tokenizer_fingerprint(tok) != first


def test_training_data_from_a_hub_id(monkeypatch):
    """data.path=owner/name loads align.py's pushed DatasetDict; a failure is one clear line, no token."""
    import datasets

    from multimsd.training.data import load_pairs

    rows = {"complex": ["A hard one."], "simple": ["An easy one."], "lang": ["en"], "article_id": ["a1"]}
    dsd = datasets.DatasetDict({s: datasets.Dataset.from_dict(rows) for s in ("train", "validation", "test")})
    asked = []
    monkeypatch.setattr(datasets, "load_dataset", lambda repo_id: asked.append(repo_id) or dsd)
    got = load_pairs("someone/msd-aligned")
    assert asked == ["someone/msd-aligned"]
    assert got["train"] == [{k: v[0] for k, v in rows.items()}] and len(got["test"]) == 1

    def offline(repo_id):
        raise ConnectionError("hf_secret_token must never show")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    with pytest.raises(MultimsdError, match="not a local file or directory") as e:
        load_pairs("someone/msd-aligned")
    assert "hf_secret" not in str(e.value)
    with pytest.raises(MultimsdError, match="training data not found"):
        load_pairs("someone/pairs.jsonl")  # a file name, not a Hub id


def test_a_cap_on_the_training_pairs_is_logged(caplog):
    """data.max_train_examples (debug=tiny's 16) says how many of how many pairs it trains on (issue #49)."""
    from multimsd.training.config import TrainData
    from multimsd.training.data import sample_gold_pairs, select

    rows = sample_gold_pairs()
    n = len([r for r in rows["train"] if r["lang"] == "en"])
    with caplog.at_level("INFO", logger="multimsd"):
        assert (
            len(select(rows, TrainData(languages=["en"], mode="mono", max_train_examples=16), 0)["train"])
            == 16
        )
    assert caplog.messages == [
        f"data.max_train_examples=16: training on 16 of {n} pairs (a debug limit: `multimsd run debug=tiny` and "
        "`train.py debug=train_tiny` set it)"
    ]


@pytest.mark.integration
def test_logits_only_from_the_first_label_give_the_same_loss(tmp_path):
    """The loop computes a causal LM's logits only from the batch's earliest label on (logits_to_keep)."""
    from multimsd.training.data import Collator, load_pairs, select, tokenize_rows
    from multimsd.training.kinds import get_kind
    from multimsd.training.kinds.causal import accepts_logits_to_keep
    from multimsd.training.loop import to_train_config
    from multimsd.training.loss import weighted_cross_entropy
    from multimsd.training.modeling import load_model_and_tokenizer

    def _forward_kw(batch, kind, trim):  # the forward arguments are the model kind's
        return get_kind(kind).logits_forward_kw(None, batch, trim)

    # Hand-made targets (shifted: labels[:, t] is the target of logits[:, t]): the earliest label is at
    # position 3 (row 1), so logits from position 3 on: 6 - 3 = 3 kept.
    labels = torch.tensor([[-100, -100, -100, -100, 5, 6], [-100, -100, -100, 7, 8, -100], [-100] * 6])
    assert _forward_kw({"labels": labels}, "causal", True) == ({"logits_to_keep": 3}, 3)
    assert _forward_kw({"labels": labels}, "causal", False) == ({}, 0)
    assert _forward_kw({"labels": torch.full((2, 3), -100)}, "causal", True) == ({}, 0)
    assert _forward_kw({"labels": labels}, "lstm", True)[1] == 0

    tc = to_train_config(tiny_cfg(tmp_path, model="tiny_llama"))
    model, tok = load_model_and_tokenizer(tc.model)
    assert accepts_logits_to_keep(model)
    model.eval()
    rows = select(load_pairs(None), tc.data, tc.seed)["train"][:4]
    b = Collator(tok.pad_token_id, shift=True)(tokenize_rows(tok, rows, "causal", 512))
    kw, start = _forward_kw(b, "causal", True)
    assert start > 10  # the chat prompt is long: most positions need no logits
    with torch.no_grad():
        full = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"]).logits
        part = model(input_ids=b["input_ids"], attention_mask=b["attention_mask"], **kw).logits
    assert part.shape[1] == b["labels"].shape[1] - start
    for theta in (1.0, 4.0):
        a = weighted_cross_entropy(full, b["labels"], novel_mask=b["novel"], theta=theta)
        c = weighted_cross_entropy(
            part, b["labels"][:, start:], novel_mask=b["novel"][:, start:], theta=theta
        )
        assert float(c) == pytest.approx(float(a), rel=1e-5)


def test_a_checkpoint_written_before_a_new_setting_existed_is_resumed(tmp_path):
    """Keys added to the schema later (model.attn_implementation, model.fused_kernels) are missing from an older
    run's train_config.json: left at their defaults they describe the same run; set, a different one."""
    from multimsd.training.checks import check_resume_target, config_fingerprint
    from multimsd.training.loop import to_train_config

    cfg = to_train_config(tiny_cfg(tmp_path))
    fp = json.loads(json.dumps(config_fingerprint(cfg)))
    old = json.loads(json.dumps(fp))
    del old["model"]["attn_implementation"], old["model"]["fused_kernels"]
    out = tmp_path / "old"
    out.mkdir()
    (out / "train_config.json").write_text(json.dumps(old))
    check_resume_target(out, fp, cfg)  # resumed: nothing raised
    cfg.model.fused_kernels = "false"
    with pytest.raises(MultimsdError, match=r"differs in: model\)"):
        check_resume_target(out, config_fingerprint(cfg), cfg)
    cfg.model.fused_kernels = "auto"
    cfg.loss.theta = 4.0
    with pytest.raises(MultimsdError, match=r"differs in: loss\)"):
        check_resume_target(out, config_fingerprint(cfg), cfg)

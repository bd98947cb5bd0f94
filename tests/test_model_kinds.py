"""Model kinds (multimsd.training.kinds): the registry, and a user's kind registered from a plugin module and
used by the real ``train.py`` CLI."""

import json
import os
import sys
import textwrap

import pytest
import torch
from conftest import run_cli

from multimsd.errors import MultimsdError
from multimsd.training.kinds import MODEL_KINDS, ModelKind, get_kind, register_kind
from multimsd.training.kinds.causal import CausalKind
from multimsd.training.kinds.lstm import LstmKind
from multimsd.training.kinds.seq2seq import Seq2SeqKind


def test_builtin_kinds_dispatch():
    assert isinstance(get_kind("causal"), CausalKind)
    assert isinstance(get_kind("seq2seq"), Seq2SeqKind)
    assert isinstance(get_kind("lstm"), LstmKind)
    assert {"causal", "seq2seq", "lstm"} <= set(MODEL_KINDS)
    labels = torch.tensor([[-100, 4, 5], [-100, -100, 6]])
    # decoder-only: logits[:, t] predict labels[:, t + 1]; encoder-decoders take the labels
    assert get_kind("causal").label_tokens({"labels": labels}) == 3
    assert get_kind("seq2seq").label_tokens({"labels": labels}) == 3
    assert get_kind("causal").label_tokens({"labels": labels[:, [1, 0, 2]]}) == 2
    assert get_kind("seq2seq").forward_kw({"labels": labels}, True)[0]["labels"] is labels
    assert get_kind("causal").supports_icl and not get_kind("seq2seq").supports_icl


def test_unknown_kind_is_one_error_listing_the_registered_ones():
    with pytest.raises(MultimsdError, match=r"model.kind='nope'.*causal, lstm, seq2seq"):
        get_kind("nope")


def test_register_kind(monkeypatch):
    monkeypatch.setattr("multimsd.training.kinds.base.MODEL_KINDS", dict(MODEL_KINDS))
    from multimsd.training.kinds import base

    @register_kind("unit_toy")
    class UnitToy(Seq2SeqKind):
        pass

    assert isinstance(base.get_kind("unit_toy"), UnitToy) and UnitToy.name == "unit_toy"
    assert Seq2SeqKind.name == "seq2seq"  # the parent keeps its own name
    with pytest.raises(TypeError, match="ModelKind subclass"):
        register_kind("bad")(object)
    assert issubclass(UnitToy, ModelKind)


def test_unknown_kind_through_the_loop(tmp_path, fresh_accelerate_state):
    from multimsd.training.loop import run

    with pytest.raises(MultimsdError, match="not a registered model kind"):
        run({"model": {"kind": "nope", "pretrained": "tiny:mbart"}, "output_dir": str(tmp_path)})


TOY_KIND = '''
"""A user's model kind: mBART with a marker file next to the saved model and tagged outputs."""

from multimsd.training.kinds.base import register_kind
from multimsd.training.kinds.seq2seq import Seq2SeqKind


@register_kind("toy")
class ToyKind(Seq2SeqKind):
    def save_pretrained(self, model, tokenizer, path, save_function):
        super().save_pretrained(model, tokenizer, path, save_function)
        (path / "toy_marker.txt").write_text("saved by the toy kind\\n", encoding="utf-8")

    def generate(self, cfg, model, tokenizer, rows, shots):
        return ["TOY " + p for p in super().generate(cfg, model, tokenizer, rows, shots)]
'''


def test_a_plugin_kind_is_used_by_the_train_cli(tmp_path, repo_root):
    (tmp_path / "toy_kind.py").write_text(textwrap.dedent(TOY_KIND), encoding="utf-8")
    (tmp_path / "conf" / "model").mkdir(parents=True)
    (tmp_path / "conf" / "model" / "toy.yaml").write_text(
        "name: toy\nkind: toy\npretrained: tiny:mbart\n", encoding="utf-8"
    )
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(repo_root)]),
        "OMP_NUM_THREADS": "1",
    }
    res = run_cli(
        sys.executable,
        repo_root,
        "debug=train_tiny",
        "model=toy",
        "plugins=[toy_kind]",
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "data.max_length=64",
        "eval.before_training=false",
        f"output_dir={out}",
        script="train.py",
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert (out / "best" / "toy_marker.txt").read_text(encoding="utf-8") == "saved by the toy kind\n"
    assert (out / "best" / "config.json").exists()  # and the model itself, saved by the seq2seq kind
    preds = (out / "predictions" / "test" / "en.txt").read_text(encoding="utf-8").splitlines()
    assert preds and all(p.startswith("TOY") for p in preds)
    results = json.loads((out / "all_results.json").read_text())
    assert [h for h in results["history"] if "step" in h]  # it trained
    assert json.loads((out / "train_config.json").read_text())["model"]["kind"] == "toy"

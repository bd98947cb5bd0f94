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
    # a batch's labels are its outputs' targets for every kind (a decoder-only LM's come shifted by the collator)
    assert get_kind("causal").shift_labels and not get_kind("seq2seq").shift_labels
    assert get_kind("lstm").logits_forward_kw(None, {"labels": labels}, True)[0]["labels"] is labels
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
"""A user's model kind with an option of its own: mBART with a marker file next to the saved model and outputs
tagged with model.tag."""

from dataclasses import dataclass

from multimsd.training.decode import Generated
from multimsd.training.kinds.base import register_kind
from multimsd.training.kinds.seq2seq import Seq2SeqKind
from multimsd.training.kinds.transformer import TransformerModelSettings


@dataclass
class ToyOptions(TransformerModelSettings):
    tag: str = "TOY"  # put in front of every output


@register_kind("toy")
class ToyKind(Seq2SeqKind):
    options = ToyOptions
    default_pretrained = "tiny:mbart"

    def save_pretrained(self, model, tokenizer, path, save_function):
        super().save_pretrained(model, tokenizer, path, save_function)
        (path / "toy_marker.txt").write_text("saved by the toy kind\\n", encoding="utf-8")

    def generate(self, cfg, model, tokenizer, rows, shots):
        tag = self.settings(cfg.model).tag
        outputs = super().generate(cfg, model, tokenizer, rows, shots)
        return [Generated(f"{tag} {o.text}", o.cut) for o in outputs]  # the text, and whether it was cut
'''


@pytest.mark.e2e
def test_a_plugin_kind_with_options_is_used_by_the_train_cli(tmp_path, repo_root):
    """model=toy comes from the plugin's registration alone (no YAML): its option reaches the kind, and a
    misspelt option is one error line naming the right one, exit 2, before any work."""
    (tmp_path / "toy_kind.py").write_text(textwrap.dedent(TOY_KIND), encoding="utf-8")
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(repo_root)]),
        "OMP_NUM_THREADS": "1",
    }
    common = ["debug=train_tiny", "model=toy", "plugins=[toy_kind]", f"output.dir={out}"]
    bad = run_cli(sys.executable, repo_root, *common, "model.tga=HELLO", script="train.py", env=env)
    errors = [line for line in bad.stderr.splitlines() if line.strip()]
    assert bad.returncode == 2 and len(errors) == 1, bad.stderr[-2000:]
    assert "model.tga: no such key (did you mean model.tag?)" in errors[0] and not out.exists()
    res = run_cli(
        sys.executable,
        repo_root,
        *common,
        "model.tag=HELLO",
        "data.max_length=64",
        "eval.before_training=false",
        script="train.py",
        env=env,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert (out / "best" / "toy_marker.txt").read_text(encoding="utf-8") == "saved by the toy kind\n"
    assert (out / "best" / "config.json").exists()  # and the model itself, saved by the seq2seq kind
    preds = (out / "predictions" / "test" / "en.txt").read_text(encoding="utf-8").splitlines()
    assert preds and all(p.startswith("HELLO") for p in preds)
    results = json.loads((out / "all_results.json").read_text())
    assert [h for h in results["history"] if "step" in h]  # it trained
    model = json.loads((out / "train_config.json").read_text())["model"]
    assert (model["kind"], model["tag"], model["pretrained"]) == ("toy", "HELLO", "tiny:mbart")


def test_a_kinds_options_live_with_it():
    from dataclasses import fields

    from multimsd.training.config import ModelSettings
    from multimsd.training.kinds.lstm import LstmModelSettings
    from multimsd.training.kinds.transformer import TransformerModelSettings
    from multimsd.training.loop import to_train_config

    assert {f.name for f in fields(ModelSettings)} == {"name", "kind", "pretrained", "dtype", "dropout"}
    assert get_kind("causal").options is get_kind("seq2seq").options is TransformerModelSettings
    assert get_kind("lstm").options is LstmModelSettings
    # a plain dict gets its kind's options as the schema; the shared settings keep TrainConfig's defaults
    cfg = to_train_config({"model": {"kind": "lstm", "lstm": {"hidden_size": 8}}})
    assert isinstance(cfg.model, LstmModelSettings) and cfg.model.lstm.hidden_size == 8
    assert cfg.model.pretrained == "offline:smollm2" and cfg.model.name == "smollm2_lora"
    assert isinstance(to_train_config({}).model, TransformerModelSettings)
    # a kind's settings from another kind's options: its defaults, the shared settings kept
    lstm = get_kind("lstm").settings(
        to_train_config({"model": {"pretrained": "x", "dtype": "bfloat16"}}).model
    )
    assert isinstance(lstm, LstmModelSettings) and (lstm.pretrained, lstm.dtype) == ("x", "bfloat16")
    assert get_kind("seq2seq").default_options().pretrained == "facebook/mbart-large-50"


@pytest.mark.integration
def test_a_kind_leaves_the_callers_tokenizer_as_it_was(tmp_path):
    """Encoding and generating set the tokenizer's language (mBART-50) or padding side (a chat LM) for their own
    work only: the caller's tokenizer reads as before afterwards (issue #50)."""
    from multimsd.training.loop import to_train_config
    from multimsd.training.modeling import load_model_and_tokenizer

    for model, kind in (("mbart", "seq2seq"), ("llama", "causal")):
        cfg = to_train_config(
            {
                "model": {"kind": kind, "pretrained": f"tiny:{model}"},
                "eval": {"max_new_tokens": 3, "batch_size": 2},
                "data": {"max_length": 32},
            }
        )
        net, tok = load_model_and_tokenizer(cfg.model)
        rows = [{"complex": "Take 5 mg.", "simple": "Take 5 mg.", "lang": lang} for lang in ("de", "fr")]
        before = {k: getattr(tok, k, None) for k in ("src_lang", "tgt_lang", "padding_side")}
        for row in rows:
            get_kind(kind).encode(tok, row, 32)
        assert get_kind(kind).generate(cfg, net, tok, rows, {}) and len(rows) == 2
        assert {k: getattr(tok, k, None) for k in before} == before, kind

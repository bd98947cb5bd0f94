"""``multimsd export``'s model card is publishable (issue #49 item 5): its metadata names the base model and the
data as Hub ids or not at all (never an offline alias or a local path), and huggingface_hub reads it as a valid
card; an unwritable ``--to`` is one line before the model is loaded (item 7c)."""

from __future__ import annotations

import pytest

from multimsd.errors import MultimsdError
from multimsd.training.hub import model_card
from multimsd.training.loop import to_train_config


def card_of(pretrained: str, data_path: str | None = None) -> str:
    cfg = to_train_config(
        {"model": {"pretrained": pretrained}, "data": {"path": data_path, "languages": ["en"]}}
    )
    return model_card(cfg, {"test": {"sari": 40.0, "bleu": 8.0}}, {"en": {"sari": 40.0, "bleu": 8.2}})


def metadata(card: str) -> dict:
    """The card's metadata as huggingface_hub reads it, checked offline as it checks a card: the YAML block a
    mapping, ``ModelCardData`` built from it with no metadata error ignored, every repository id valid.
    (``RepoCard.validate`` asks the Hub's server: not reachable here.)"""
    from huggingface_hub import ModelCard
    from huggingface_hub.utils import validate_repo_id

    data = ModelCard(card, ignore_metadata_errors=False).data.to_dict()
    for repo in [data.get("base_model"), *(data.get("datasets") or [])]:
        if repo is not None:
            validate_repo_id(repo)
    assert (
        data["metrics"] == ["sari", "bleu"] and "license" not in data
    )  # the user's to add: said in a comment
    return data


def test_an_offline_alias_is_carded_as_the_hub_model_it_copies(tmp_path):
    card = card_of("offline:smollm2", str(tmp_path / "run" / "align"))
    data = metadata(card)
    assert data["base_model"] == "HuggingFaceTB/SmolLM2-135M-Instruct" and data["language"] == ["en"]
    assert "datasets" not in data  # a local corpus that was never pushed: no Hub id to name
    assert str(tmp_path) not in card.split("---")[1]
    assert "as multimsd's `offline:smollm2` (dequantised to float32 from the Q4_1 GGUF" in card
    assert (
        "- Training data: a local corpus, not pushed to the Hub (so the metadata names no `datasets`" in card
    )


def test_every_offline_model_has_a_hub_origin():
    from huggingface_hub.utils import validate_repo_id

    from multimsd.training.models.offline import OFFLINE_MODELS, OFFLINE_ORIGINS, hub_origin

    assert set(OFFLINE_ORIGINS) == set(OFFLINE_MODELS)
    for name in OFFLINE_MODELS:
        validate_repo_id(hub_origin(f"offline:{name}")[0])
    assert hub_origin("tiny:llama") is None and hub_origin("HuggingFaceTB/SmolLM2-135M-Instruct") is None


@pytest.mark.parametrize(
    ("pretrained", "words"),
    [
        (
            "tiny:llama",
            "`tiny:llama`, multimsd's randomly initialised model for tests and benchmarks, on no Hub",
        ),
        ("random:smollm2", "`random:smollm2`, multimsd's randomly initialised model"),
        ("LOCAL", "a local directory (`my-llama`), not a Hub model"),
    ],
)
def test_a_base_with_no_hub_id_is_left_out_and_the_card_says_so(tmp_path, pretrained, words):
    local = tmp_path / "models" / "my-llama"
    local.mkdir(parents=True)
    card = card_of(str(local) if pretrained == "LOCAL" else pretrained)
    assert "base_model" not in metadata(card)
    assert f"- Base model: {words}" in card and "(so the metadata names no `base_model`)" in card
    assert str(tmp_path) not in card.split("## Training configuration")[0]  # (the config records it, below)


def test_a_hub_id_is_the_base_model_as_it_is():
    assert (
        metadata(card_of("meta-llama/Llama-3.1-8B-Instruct"))["base_model"]
        == "meta-llama/Llama-3.1-8B-Instruct"
    )


def aligned_dir(root, push: bool, repo: str | None):
    """An align.py output's record of its config (what the card reads of it)."""
    from omegaconf import OmegaConf

    from multimsd.config import ALIGN_CONFIG_FILE, AlignConfig

    cfg = OmegaConf.structured(AlignConfig)
    cfg.output.push_to_hub, cfg.output.hub_repo_id = push, repo
    root.mkdir(parents=True)
    (root / ALIGN_CONFIG_FILE).write_text(OmegaConf.to_yaml(cfg), encoding="utf-8")
    return str(root)


def test_the_data_are_named_by_the_hub_id_they_were_pushed_to(tmp_path):
    pushed = card_of("offline:smollm2", aligned_dir(tmp_path / "pushed", True, "me/medical-pairs"))
    assert metadata(pushed)["datasets"] == ["me/medical-pairs"]
    assert "- Training data: [me/medical-pairs](https://huggingface.co/datasets/me/medical-pairs)" in pushed
    # a repository named but not pushed (push_to_hub=false): the data are not there
    named = card_of("offline:smollm2", aligned_dir(tmp_path / "named", False, "me/medical-pairs"))
    assert "datasets" not in metadata(named)
    sample = card_of("offline:smollm2", None)
    assert "datasets" not in metadata(sample) and "the sample corpus bundled with multimsd" in sample


def test_a_hub_dataset_id_is_named_when_the_hub_cache_holds_it(tmp_path, monkeypatch):
    """``data.path=owner/name`` is a Hub dataset when training could load it from the Hub cache; a relative path
    that is not here (``outputs/aligned`` from another directory) is spelt the same and is left out."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hub" / "datasets--me--pairs" / "snapshots" / "abc").mkdir(parents=True)
    assert metadata(card_of("offline:smollm2", "me/pairs"))["datasets"] == ["me/pairs"]
    assert "datasets" not in metadata(card_of("offline:smollm2", "outputs/aligned"))


def test_an_unwritable_to_is_one_line_before_the_model_is_read(tmp_path, monkeypatch, capsys):
    from multimsd.simplify import export, source

    def never(*_args):
        raise AssertionError("the model was resolved before --to was checked")

    monkeypatch.setattr(source, "resolve", never)
    with pytest.raises(MultimsdError) as e:
        export.export(str(tmp_path), "/proc/forbidden/x")
    assert str(e.value) == (
        "--to /proc/forbidden/x cannot be written (its nearest existing parent /proc): it does not accept new files"
    )
    (tmp_path / "file").write_text("x")
    with pytest.raises(SystemExit) as exit_:
        export.main([str(tmp_path), "--to", str(tmp_path / "file" / "model")])
    err = capsys.readouterr().err.strip().splitlines()
    assert exit_.value.code == 2 and err == [
        f"error: --to {tmp_path / 'file' / 'model'} is under {tmp_path / 'file'}, which is not a directory"
    ]


def test_the_card_body_names_no_local_path(tmp_path):
    """The card's training settings print no path of the training machine (issue #49 item 5): the data and the
    output directory are cut to their last name; a Hub id is kept as it is."""
    from multimsd.training.hub import card_config

    cfg = to_train_config(
        {
            "model": {"pretrained": str(tmp_path / "models" / "my-base")},
            "data": {"path": str(tmp_path / "run" / "align"), "languages": ["en"]},
            "output": {"dir": str(tmp_path / "run" / "systems" / "finetuned")},
        }
    )
    card = model_card(cfg, {"test": {"sari": 40.0, "bleu": 8.0}})
    assert str(tmp_path) not in card
    settings = card_config(cfg)
    assert settings["data"]["path"] == "<local>/align"
    assert settings["output"]["dir"] == "<local>/finetuned"
    assert settings["model"]["pretrained"] == "<local>/my-base"
    assert (
        settings["model"]["kind"] == "causal" and settings["loss"]["theta"] == cfg.loss.theta
    )  # the rest kept

    hub = to_train_config(
        {"model": {"pretrained": "HuggingFaceTB/SmolLM2-135M-Instruct"}, "data": {"path": None}}
    )
    assert card_config(hub)["model"]["pretrained"] == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert card_config(to_train_config({}))["model"]["pretrained"] == "offline:smollm2"

"""push_to_hub: what is pushed, and that a failure never echoes the token (Hub calls faked)."""

import datasets
import pytest

from multimsd.alignment import stage as align
from multimsd.alignment.stage import to_config
from multimsd.errors import MultimsdError


@pytest.fixture
def saved(tmp_path):
    out = tmp_path / "aligned"
    datasets.DatasetDict(
        {"train": datasets.Dataset.from_dict({"complex": ["a"], "simple": ["b"]})}
    ).save_to_disk(out)
    (out / "README.md").write_text("card")
    return out


def test_push_sends_dataset_and_card(saved, monkeypatch):
    calls = {}

    def fake_push(self, repo_id, private=None, **kw):
        calls["push"] = (repo_id, private, list(self))

    class FakeApi:
        def upload_file(self, **kw):
            calls["card"] = kw

    monkeypatch.setattr(datasets.DatasetDict, "push_to_hub", fake_push)
    monkeypatch.setattr("huggingface_hub.HfApi", FakeApi)
    cfg = to_config({"output": {"push_to_hub": True, "hub_repo_id": "me/msd", "hub_private": False}})
    align.push_to_hub(saved, cfg)
    assert calls["push"] == ("me/msd", False, ["train"])
    assert calls["card"]["repo_id"] == "me/msd" and calls["card"]["repo_type"] == "dataset"
    assert calls["card"]["path_in_repo"] == "README.md"


def test_push_failure_does_not_leak_token(saved, monkeypatch, capsys):
    token = "hf_SECRETsecretSECRET"
    monkeypatch.setenv("HF_TOKEN", token)

    def failing_push(self, repo_id, **kw):
        raise RuntimeError(f"401 Unauthorized for token {token}")

    monkeypatch.setattr(datasets.DatasetDict, "push_to_hub", failing_push)
    cfg = to_config({"output": {"push_to_hub": True, "hub_repo_id": "me/msd"}})
    with pytest.raises(MultimsdError) as e:
        align.push_to_hub(saved, cfg)
    assert token not in str(e.value) and "me/msd" in str(e.value)
    captured = capsys.readouterr()
    assert token not in captured.out + captured.err

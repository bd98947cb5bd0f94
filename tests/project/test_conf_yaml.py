"""The YAML in conf/ holds what differs from its schema, never a copy of a dataclass default: a default lives in
one place (the dataclass), so changing it cannot leave a stale copy behind.

Checked: the entry points' primary configs and the group options whose schema is known (embedder/, data/,
model/ — a model preset against the options of the kind it starts from). ``debug/`` and ``experiment/`` presets
are ``@package _global_`` overrides of the *composed* config (they often restore a dataclass default that the
entry point's YAML changed, e.g. ``eval.max_new_tokens: 256``), so they are not checked here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from omegaconf import OmegaConf

from multimsd.config import DataConfig, EmbedderConfig, EvaluateConfig
from multimsd.paths import conf_dir
from multimsd.pipeline.config import RunConfig
from multimsd.pipeline.run import register_schemas
from multimsd.training.config import TrainConfig
from multimsd.training.kinds import MODEL_KINDS

CONF = conf_dir()
MISSING = object()


def leaves(tree: Any, prefix: str = ""):
    if isinstance(tree, dict):
        for k, v in tree.items():
            yield from leaves(v, f"{prefix}{k}.")
    else:
        yield prefix.rstrip("."), tree


def repeated_defaults(path: Path, schema: Any) -> list[str]:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    data = {k: v for k, v in data.items() if k not in ("defaults", "hydra")}
    node = OmegaConf.structured(schema)
    out = []
    for key, value in leaves(data):
        default = OmegaConf.select(node, key, default=MISSING, throw_on_missing=False)
        if default is not MISSING and OmegaConf.is_config(default):
            default = OmegaConf.to_container(default)
        if default is not MISSING and default == value and not isinstance(value, dict):
            out.append(f"{key}: {value!r}")
    return out


def test_the_check_finds_a_repeated_default(tmp_path):
    f = tmp_path / "x.yaml"
    f.write_text("name: e5-small-offline\nmodel: mine\nnormalize: true\n")
    assert repeated_defaults(f, EmbedderConfig) == ["name: 'e5-small-offline'", "normalize: True"]


def register() -> None:
    from multimsd.config import register_configs

    register_configs()
    register_schemas()


@pytest.mark.parametrize(
    ("name", "schema"),
    [
        ("align.yaml", "align"),
        ("train.yaml", TrainConfig),
        ("evaluate.yaml", EvaluateConfig),
        ("pipeline/run.yaml", RunConfig),
    ],
)
def test_primary_configs_hold_what_differs(name, schema):
    register()
    if schema == "align":
        from multimsd.config import AlignConfig

        schema = AlignConfig
    assert repeated_defaults(CONF / name, schema) == []


@pytest.mark.parametrize(
    "path", sorted(CONF.glob("embedder/*.yaml")) + sorted(CONF.glob("data/*.yaml")), ids=lambda p: p.name
)
def test_group_options_hold_what_differs(path):
    schema = EmbedderConfig if path.parent.name == "embedder" else DataConfig
    assert repeated_defaults(path, schema) == []


@pytest.mark.parametrize("path", sorted(CONF.glob("model/*.yaml")), ids=lambda p: p.name)
def test_model_presets_start_from_a_kind_and_hold_what_differs(path):
    register()
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    [kind] = [d for d in data["defaults"] if d != "_self_"]
    options = MODEL_KINDS[kind].default_options()
    assert repeated_defaults(path, options) == []
    assert "kind" not in data  # set by the kind it starts from


def test_no_aligner_yaml_repeats_its_options():
    # Every aligner's options are its dataclass, registered as aligner=<name>: nothing to repeat in YAML.
    assert not list(CONF.glob("aligner/*.yaml"))

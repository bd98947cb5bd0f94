"""One name for the output directory: ``output.dir``, in every stage and in ``multimsd run``.

align.py and evaluate.py always called it ``output.dir``; train.py called it ``output_dir`` and ``multimsd run``
``dir``. Those old names stay in their schemas as deprecated aliases (default null, so a misspelt key still fails
at start-up): when one is set, its value is copied to ``output.dir``, the alias is cleared, and one line says so
(``note: output_dir is deprecated; use output.dir``, once a process, on stderr). Setting the alias and
``output.dir`` to different values on the command line is one error. The copy happens wherever a config is
composed (:func:`multimsd.pipeline.run.compose`: the start-up check of every entry point, the stage configs of
``multimsd run``), so a stage's fingerprint is the same whichever name was used.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterable
from typing import Any

OUTPUT_KEY = "output.dir"
# config name -> its deprecated name of output.dir
ALIASES = {"train": "output_dir", "run": "dir"}

_noted: set[str] = set()
_OVERRIDE_KEY = re.compile(r"^\+{0,2}(?P<key>[^=~+][^=]*)=")


def alias_of(config_name: str) -> str | None:
    """The deprecated name of ``output.dir`` in that config (``train``: output_dir, ``run``: dir), or None."""
    return ALIASES.get(config_name)


def note_deprecated(alias: str) -> None:
    """The one-line notice, printed once a process (by the first process of ``accelerate launch``)."""
    if alias in _noted or os.environ.get("RANK", "0") != "0":
        return
    _noted.add(alias)
    print(f"note: {alias} is deprecated; use {OUTPUT_KEY}", file=sys.stderr, flush=True)


def overridden_keys(overrides: Iterable[str]) -> set[str]:
    """The keys set by Hydra overrides (``key=v``, ``+key=v``, ``++key=v``)."""
    keys = set()
    for o in overrides:
        m = _OVERRIDE_KEY.match(str(o))
        if m:
            keys.add(m["key"].strip())
    return keys


def _raw(cfg: Any, dotted: str) -> Any:
    """A node's value as written (an interpolation stays one), or None."""
    from omegaconf import OmegaConf

    parent_key, _, key = dotted.rpartition(".")
    parent = OmegaConf.select(cfg, parent_key, throw_on_resolution_failure=False) if parent_key else cfg
    if parent is None or key not in parent:
        return None
    return parent._get_node(key)._value()


def use_output_dir(cfg: Any, config_name: str, overrides: Iterable[str] = ()) -> Any:
    """In place (a DictConfig): the deprecated alias, when set, copied to ``output.dir`` and cleared, with the
    notice. ``overrides``: the ones the config was composed with; ``output.dir`` among them with a value other
    than the alias's is a :class:`MultimsdError` (one line; no notice is printed then). Returns ``cfg``."""
    from multimsd.errors import MultimsdError

    alias = alias_of(config_name)
    if alias is None or alias not in cfg:
        return cfg
    value = _raw(cfg, alias)
    if value is None:
        return cfg
    current = _raw(cfg, OUTPUT_KEY)
    if OUTPUT_KEY in overridden_keys(overrides) and str(current) != str(value):
        raise MultimsdError(
            f"{config_name} config: {alias}={value} and {OUTPUT_KEY}={current} are both set; "
            f"{alias} is the deprecated name of {OUTPUT_KEY}: set {OUTPUT_KEY} only"
        )
    note_deprecated(alias)
    cfg.output.dir = value
    cfg[alias] = None
    return cfg


def output_dir_of(cfg: Any, config_name: str) -> str:
    """The output directory of a config that may not have been through :func:`use_output_dir` (a Hydra
    callback's job config): the alias's value when it is set, else ``output.dir``."""
    from omegaconf import OmegaConf

    alias = alias_of(config_name)
    value = OmegaConf.select(cfg, alias, default=None) if alias else None
    return str(value if value is not None else OmegaConf.select(cfg, OUTPUT_KEY))

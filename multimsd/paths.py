"""Where multimsd keeps things on disk."""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path


def cache_dir() -> Path:
    """Root of multimsd's cache (converted offline models, embedding cache).

    ``$MULTIMSD_CACHE`` if set, else ``$XDG_CACHE_HOME/multimsd``, else ``~/.cache/multimsd``.
    """
    env = os.environ.get("MULTIMSD_CACHE")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "multimsd"


def sample_data_dir() -> Path:
    """Directory of the bundled sample corpus (``articles.jsonl``: article pairs with their gold alignment)."""
    return Path(str(resources.files("multimsd") / "sample_data"))

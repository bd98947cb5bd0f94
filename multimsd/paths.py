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


def conf_dir() -> Path:
    """The Hydra config directory: ``multimsd/conf`` inside an installed wheel, the repository's top-level
    ``conf/`` in a checkout or an editable install (the one source both are made from; see setup.py)."""
    from multimsd.errors import MultimsdError

    here = Path(__file__).resolve().parent
    for candidate in (here / "conf", here.parent / "conf"):
        if (candidate / "align.yaml").is_file() and (candidate / "pipeline" / "run.yaml").is_file():
            return candidate
    raise MultimsdError(
        f"cannot find multimsd's configs (looked in {here / 'conf'} and {here.parent / 'conf'}): "
        "reinstall multimsd (pip install multimsd, or pip install -e . in a checkout)"
    )

"""What the three entry points (align.py, train.py, evaluate.py) share: logging and the error contract."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any


# Library chatter ("Loading weights", prompt lists, SIMD builds) hides our own progress; warnings still show.
def load_plugins(names: list[str]) -> None:
    """Import the user's extension modules (``plugins=[pkg.mod]``): importing one runs its registrations."""
    import importlib

    from multimsd.errors import MultimsdError

    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as e:
            if e.name and (name == e.name or name.startswith(e.name + ".")):
                raise MultimsdError(
                    f"plugins: cannot import {name!r} (is its directory on PYTHONPATH, or the package installed?)"
                ) from None
            raise


NOISY_LOGGERS = ("faiss", "sentence_transformers", "transformers", "peft", "accelerate", "gensim")


def run_stage(run: Callable[[Any], Any], cfg: Any) -> Any:
    """Run a stage; a :class:`MultimsdError` becomes one ``error: …`` line on stderr and exit status 2."""
    from multimsd.errors import MultimsdError

    logging.getLogger("multimsd").setLevel(logging.INFO)
    for name in NOISY_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency
        pass
    try:
        load_plugins(list(cfg.get("plugins") or []) if hasattr(cfg, "get") else [])
        return run(cfg)
    except MultimsdError as e:
        # One clear line for input/environment problems; tracebacks are for bugs.
        print(f"error: {e}", file=sys.stderr)
        sys.exit(2)

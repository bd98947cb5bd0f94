"""The one name two modules want: the checkout's ``evaluate.py`` (the evaluation command, a name the design
keeps beside ``align.py`` and ``train.py``) and the 🤗 ``evaluate`` package. The clash is handled here, for
the checkout's script; ``multimsd evaluate`` and ``multimsd.evaluate`` shadow nothing.

A file ``evaluate.py`` in the repository root shadows the 🤗 package for every process whose ``sys.path``
starts with the root (``python evaluate.py``, ``python -c`` / ``-m`` or a REPL started there, ``python -m
pytest``). The script can be loaded two ways:

* **imported as the module** ``evaluate`` (``import evaluate`` resolved to the script): :func:`hand_over` finds
  the real 🤗 package on ``sys.path`` *without* the script's directory and ``''``, executes it and puts it in
  ``sys.modules["evaluate"]`` in the script's place; the import statement then returns that module (the
  import system reads ``sys.modules`` back after loading), so ``import evaluate`` anywhere gets 🤗 evaluate
  and nothing of the command is defined or imported;
* **run as a script**: :func:`step_aside`, before anything else is imported, moves the script's directory
  from the front of ``sys.path`` to the end, so that any later ``import evaluate`` (🤗 libraries, metric
  scripts loaded with ``evaluate.load``, such as ``multimsd/hf_metrics/sari/sari.py``) finds the installed
  package first, while ``multimsd`` stays importable from a plain checkout.
"""

from __future__ import annotations

import os
import sys


def hand_over(script: str, name: str = "evaluate") -> None:
    """``import evaluate`` found ``script``: load the installed package ``name`` into ``sys.modules`` in its
    place, or raise the ImportError the import would have raised without the script."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.realpath(script))
    search = [
        p for p in sys.path if isinstance(p, str) and p not in ("", ".") and os.path.realpath(p) != here
    ]
    spec = importlib.machinery.PathFinder.find_spec(name, search)
    if spec is None or spec.loader is None:
        raise ImportError(
            f"No module named {name!r} (the Hugging Face package): the {name}.py found on sys.path is "
            f"multimsd's command-line script (pip install {name})",
            name=name,
        )
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # before executing: the package imports its own submodules
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(name, None)
        raise


def step_aside(script: str) -> None:
    """``script`` runs as ``__main__``: its directory (``sys.path[0]``, or ``''`` / the cwd with ``-m``) moves
    behind site-packages."""
    here = os.path.dirname(os.path.realpath(script))
    mine = [p for p in sys.path if isinstance(p, str) and os.path.realpath(p or ".") == here]
    sys.path[:] = [p for p in sys.path if p not in mine] + mine

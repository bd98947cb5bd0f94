"""Evaluation stage entry point of a checkout: ``python evaluate.py [hydra overrides]`` (see ``--help``).

The same command as ``multimsd evaluate`` (:mod:`multimsd.evaluate`); the stage itself is
:func:`multimsd.evaluation.stage.run`, importable and testable on its own.

The name clash with 🤗 ``evaluate``: a file ``evaluate.py`` in the repository root shadows the 🤗 package for
every process whose ``sys.path`` starts with the root (``python evaluate.py``, ``python -c``/``-m`` or a REPL
started there, ``python -m pytest``). This file handles both ways it can be loaded:

* **imported as the module** ``evaluate`` (``import evaluate`` resolved to this file): it finds the real 🤗
  package on ``sys.path`` *without* this directory and ``''``, executes it, and puts it in
  ``sys.modules["evaluate"]`` in its own place; the import statement then returns that module (the import
  system reads ``sys.modules`` back after loading), so ``import evaluate`` anywhere gets 🤗 evaluate and
  nothing of the CLI is defined or imported;
* **run as a script**: before anything else is imported it moves its own directory from the front of
  ``sys.path`` to the end, so that any later ``import evaluate`` (🤗 libraries, metric scripts loaded with
  ``evaluate.load``) finds the installed package first, while ``multimsd`` stays importable from a plain
  checkout.
"""

import sys

if __name__ == "evaluate":  # pragma: no cover - exercised in a subprocess by tests/test_evaluate_cli.py
    import importlib.machinery
    import importlib.util
    import os

    _here = os.path.dirname(os.path.realpath(__file__))
    _search = [
        p for p in sys.path if isinstance(p, str) and p not in ("", ".") and os.path.realpath(p) != _here
    ]
    _spec = importlib.machinery.PathFinder.find_spec("evaluate", _search)
    if _spec is None or _spec.loader is None:
        raise ImportError(
            "No module named 'evaluate' (the Hugging Face package): the evaluate.py found on sys.path is "
            "multimsd's command-line script (pip install evaluate)",
            name="evaluate",
        )
    _module = importlib.util.module_from_spec(_spec)
    sys.modules["evaluate"] = _module  # before executing: the package imports its own submodules
    try:
        _spec.loader.exec_module(_module)
    except BaseException:
        sys.modules.pop("evaluate", None)
        raise
else:
    import os

    if __name__ == "__main__":
        # sys.path[0] is this directory (or '' / the cwd with -m): move it behind site-packages.
        _here = os.path.dirname(os.path.realpath(__file__))
        _mine = [p for p in sys.path if isinstance(p, str) and os.path.realpath(p or ".") == _here]
        sys.path[:] = [p for p in sys.path if p not in _mine] + _mine

    if __name__ == "__main__":
        from multimsd.interrupts import guard, installed

        with installed(), guard():  # Ctrl-C while the libraries load is one line too, no traceback
            from multimsd.evaluate import main  # the same command as `multimsd evaluate`

            main()

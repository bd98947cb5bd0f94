"""``multimsd evaluate [hydra overrides]`` (also ``python -m multimsd.evaluate`` and the checkout's
``evaluate.py``): :func:`multimsd.evaluation.stage.run` as a command
(:func:`multimsd.commands.stage.stage_command`).

This module is ``multimsd.evaluate``: it never shadows the 🤗 ``evaluate`` package (only a file named
``evaluate.py`` at the front of ``sys.path`` would: the checkout's, :mod:`multimsd.commands.clash`)."""

from __future__ import annotations

from multimsd.commands.stage import stage_command


def run(cfg):
    """The stage, imported when it runs (not for ``--help`` or a command line that fails its check)."""
    from multimsd.evaluation.stage import run

    return run(cfg)


main = stage_command("evaluate", run)

if __name__ == "__main__":
    main()

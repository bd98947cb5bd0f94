"""``multimsd align [hydra overrides]`` (also ``python -m multimsd.align`` and the checkout's ``align.py``):
:func:`multimsd.alignment.stage.run` as a command (:func:`multimsd.commands.stage.stage_command`)."""

from __future__ import annotations

from multimsd.commands.stage import stage_command


def run(cfg):
    """The stage, imported when it runs (not for ``--help`` or a command line that fails its check)."""
    from multimsd.alignment.stage import run

    return run(cfg)


main = stage_command("align", run)

if __name__ == "__main__":
    main()

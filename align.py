"""Alignment stage entry point of a checkout: ``python align.py [hydra overrides]`` (see ``--help``).

The same command as ``multimsd align`` (:mod:`multimsd.align`); the stage itself is
:func:`multimsd.alignment.stage.run`, importable and testable on its own.
"""

from multimsd.align import main

if __name__ == "__main__":
    main()

"""Alignment stage entry point of a checkout: ``python align.py [hydra overrides]`` (see ``--help``).

The same command as ``multimsd align`` (:mod:`multimsd.align`); the stage itself is
:func:`multimsd.alignment.stage.run`, importable and testable on its own.
"""

if __name__ == "__main__":
    from multimsd.interrupts import guard, installed

    with installed(), guard():  # Ctrl-C while the libraries load is one line too, no traceback
        from multimsd.align import main

        main()

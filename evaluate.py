"""Evaluation stage entry point of a checkout: ``python evaluate.py [hydra overrides]`` (see ``--help``).

The same command as ``multimsd evaluate`` (:mod:`multimsd.evaluate`); the stage itself is
:func:`multimsd.evaluation.stage.run`, importable and testable on its own. This file's name is also the 🤗
``evaluate`` package's: imported as ``evaluate`` it hands over to that package, run as a script it first
steps behind it on ``sys.path`` (both in :mod:`multimsd.commands.clash`).
"""

if (
    __name__ == "evaluate"
):  # pragma: no cover - exercised in a subprocess by tests/evaluation/test_evaluate_cli.py
    from multimsd.commands.clash import hand_over

    hand_over(__file__)
elif __name__ == "__main__":
    from multimsd.commands.clash import step_aside

    step_aside(__file__)

    from multimsd.interrupts import guard, installed

    with installed(), guard():  # Ctrl-C while the libraries load is one line too, no traceback
        from multimsd.evaluate import main

        main()

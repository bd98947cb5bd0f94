"""Training stage entry point of a checkout: ``accelerate launch train.py [hydra overrides]`` (see ``--help``).

The same command as ``multimsd train`` / ``accelerate launch -m multimsd.train`` (:mod:`multimsd.train`); the
stage itself is :func:`multimsd.training.loop.run`.
"""

if __name__ == "__main__":
    from multimsd.interrupts import guard, installed

    with installed(), guard():  # Ctrl-C while the libraries load is one line too, no traceback
        from multimsd.train import main

        main()

"""Training stage entry point of a checkout: ``accelerate launch train.py [hydra overrides]`` (see ``--help``).

The same command as ``multimsd train`` / ``accelerate launch -m multimsd.train`` (:mod:`multimsd.train`); the
stage itself is :func:`multimsd.training.loop.run`.
"""

from multimsd.train import main

if __name__ == "__main__":
    main()

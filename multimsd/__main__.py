"""``python -m multimsd COMMAND …``: the ``multimsd`` command (:mod:`multimsd.main`)."""

from multimsd.main import main

main()

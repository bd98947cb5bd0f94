"""``multimsd simplify MODEL INPUT --out OUT``: a trained system simplifies new documents (issue #39).

A run directory's best system (or a training output directory) rewrites each document of INPUT sentence by
sentence, with the evaluation's decoding, and every sentence is checked by the safety checks
(:mod:`multimsd.metrics.safety`). The package: :mod:`.source` (MODEL -> the system, its config, its weights),
:mod:`.documents` (INPUT, streamed and checked), :mod:`.run` (the loop, resume, the output file),
:mod:`.cli` (the command line). Imports nothing here, so importing the package costs nothing.
"""

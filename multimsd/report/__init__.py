"""The report stage: one self-contained ``report.html`` and a ``report.md`` built from a run directory's
result files (``run.json`` and the files it names), never from the other stages' code.

Only the standard library is used, so building a report needs no plotting or templating package. The blocks,
the HTML and Markdown writers, the charts and the score tables it shares with the evaluation's ``table.md``
live below both stages, in :mod:`multimsd.render`.
"""

from multimsd.report.build import build_report

__all__ = ["build_report"]

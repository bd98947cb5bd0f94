"""Rendering results as documents, for every stage that writes one: the blocks a document is made of
(:mod:`~multimsd.render.blocks`), their HTML and Markdown writers (:mod:`~multimsd.render.html`,
:mod:`~multimsd.render.markdown`), the SVG charts (:mod:`~multimsd.render.charts`) and their PNG twin
(:mod:`~multimsd.render.figure`), and the score tables and chart data of an evaluation's results
(:mod:`~multimsd.render.scores`).

A library below the stages: the evaluation writes ``table.md`` and ``scores.png`` with it, the report stage
``report.html`` and ``report.md``, and neither stage imports the other (``tests/project/test_architecture.py``).
Only the standard library is needed, except for the PNG (matplotlib).
"""

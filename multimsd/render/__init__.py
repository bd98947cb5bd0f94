"""Rendering results as documents, for every stage that writes one: the blocks a document is made of
(:mod:`~multimsd.render.blocks`), their HTML and Markdown writers (:mod:`~multimsd.render.html`,
:mod:`~multimsd.render.markdown`) and the SVG charts (:mod:`~multimsd.render.charts`).

A library below the stages, so that the evaluation can write its tables with it as the report stage does,
and neither stage imports the other (``tests/test_architecture.py``).
"""

"""``multimsd studio PATH``: a local web app to look at a run's alignments and write gold alignments by hand.

Read in this order:

- :mod:`multimsd.studio.corpus` finds the alignment output under PATH and rebuilds what the aligner saw (the
  article pairs, segmented the same way, the aligned rows, sentence embeddings from the run's cache);
- :mod:`multimsd.studio.journal` keeps every action of one annotator in an fsync-ed journal and rebuilds the
  gold file (the format ``align.py mode=gold gold.path=…`` reads) from it, atomically, after each action;
- :mod:`multimsd.studio.review` is the outputs view: a run's test outputs per system, highlighted, and ratings
  1-5 (blind: names hidden, order shuffled per item) journalled like gold into ``ratings-NAME.jsonl``;
- :mod:`multimsd.studio.app` is the Starlette app: the JSON API, the bundled front end, the access token;
- :mod:`multimsd.studio.cli` is the command: arguments, start-up checks (one ``error:`` line, exit 2), uvicorn.

The front end (``static/``) is plain HTML, CSS and JavaScript: no build step, no CDN, works offline.
"""

"""``multimsd studio PATH``: a local web app to look at a run's alignments and write gold alignments by hand.

Read in this order:

- :mod:`multimsd.studio.corpus` finds the alignment output under PATH and rebuilds what the aligner saw (the
  article pairs, segmented the same way, the aligned rows, sentence embeddings from the run's cache), through
  the alignment package's public interface (:mod:`multimsd.alignment.api`);
- :mod:`multimsd.studio.journal` keeps every action of one annotator in an fsync-ed journal and rebuilds the
  gold file (the format ``multimsd align mode=gold gold.path=…`` reads) from it, atomically, after each action;
- :mod:`multimsd.studio.registry` is how a view joins the studio: one :class:`~multimsd.studio.registry.View`
  (routes, script, ``/api/info`` entry, command-line options, start-up checks), one ``register_view``;
- the views, each one module + one script in ``static/``: :mod:`multimsd.studio.alignments` (the alignment
  view, with :mod:`multimsd.studio.scorers`: other aligners, candidate scorers), :mod:`multimsd.studio.theta`
  (P/R/F1 against θ, agreement between annotators), :mod:`multimsd.studio.review` (the outputs view:
  a run's test outputs per system, highlighted, rated 1-5, blind if you like) and
  :mod:`multimsd.studio.simplifier` (a typed paragraph simplified by one of the run's systems, with the
  safety flags); :mod:`multimsd.studio.views` registers them;
- :mod:`multimsd.studio.app` is the Starlette app: the page, ``/api/info`` and every registered view's routes,
  the access token;
- :mod:`multimsd.studio.cli` is the command: arguments, start-up checks (one ``error:`` line, exit 2), uvicorn;
  :mod:`multimsd.studio.process` starts it as a child process (the tests' server, the benchmark's).

The front end (``static/``) is plain HTML, CSS and JavaScript: no build step, no CDN, works offline.
"""

"""The simplify view: type or paste a paragraph, pick one of the run's systems, and read its simplification
sentence by sentence beside the source, with novel words, medical terms and the safety flags marked.

It is ``multimsd simplify`` on one document, in the page: the same system loading and the same decoding and
checks (:mod:`multimsd.training.system`: each system's saved ``config.yaml`` and ``best/``, the evaluation's
``eval.*`` settings, :func:`~multimsd.training.system.simplify_sentences`), the same segmenter
(:func:`multimsd.alignment.api.segment_text`), so what the page shows is what the command writes for the same
text. The marks are the outputs view's (:func:`multimsd.studio.review.highlighter`: the run's evaluation
settings and term lists), and the term check uses the same dictionary.

Which systems: those of the run (``run.json``'s, and those under ``systems/``: a run that has not finished,
still running or interrupted, has no ``run.json`` yet; :func:`multimsd.training.system.read_run`) whose
directory has ``config.yaml`` and a model (a trained system's ``best/``, or a 0-shot prompted one); the others
are listed with the reason they cannot simplify (a training that has not finished, a copy baseline). The one
selected first is the run's best by the report's ranking, and a named one is checked, by the command's lookup
(:func:`multimsd.training.system.choose`); a run without a ranking (not finished) selects the first by name,
and ``note`` says so. A text in a language the
system was not trained or prompted on is refused with the languages it knows (``"any_lang": true``: simplified
anyway, with a ``warning``), as ``multimsd simplify`` does. One model is held in memory at a time, loaded on
the first request that names it; requests are served one at a time (a lock), off the event loop, so the page
stays responsive while a model loads or generates. Nothing is written: the view reads the run and keeps no
record. With no system that can simplify the view is not available, and says why.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from multimsd import LANGUAGES
from multimsd.errors import MultimsdError
from multimsd.studio.corpus import find_align_dir
from multimsd.studio.registry import Studio, Unavailable, View, register_view
from multimsd.studio.review import highlighter

log = logging.getLogger("multimsd.studio")

MAX_CHARS = 20_000  # a pasted paragraph or a leaflet, not a book: longer ones go to `multimsd simplify`
MAX_SENTENCES = 200


class Simplifier:
    """The run's systems that can simplify, the one model loaded now, and the highlighter."""

    def __init__(self, root: Path):
        from multimsd.training.system import choose, read_run, read_shots

        self.root = root
        run = read_run(root)  # a damaged config.yaml costs its system (its reason), not the view
        self.configs, self.why, self.finished = run.configs, run.why, run.finished
        self.shot_langs: dict[str, list[str]] = {}  # a k-shot system's languages: those of its examples
        for n, cfg in self.configs.items():
            if not self.why[n] and cfg is not None and cfg.get("mode") == "icl" and cfg.icl.shots:
                try:
                    self.shot_langs[n] = sorted(read_shots(root / "systems" / n, cfg.icl.shots))
                except MultimsdError as e:
                    self.why[n] = str(e)
        self.run = run
        # the command's lookup (multimsd.training.system.choose); no ranking: the first by name, and a note why
        chosen = choose(run, first_if_unranked=True, quiet=True)
        self.default = chosen.name
        self.note = chosen.why if chosen.name is not None else ""
        self.highlight = highlighter(root)
        self.lock = threading.Lock()
        self.loaded: tuple[str, object, tuple] | None = (
            None  # (name, System, (model, tokenizer, accelerator))
        )

    def languages(self, name: str) -> list[str]:
        """The languages system ``name`` was trained (or prompted) on, from its config's ``data.languages``;
        of a k-shot system, those it has examples for (the only ones it can simplify)."""
        from multimsd.training.system import known_languages

        return known_languages(self.configs.get(name), self.shot_langs.get(name))

    def why_unavailable(self) -> str:
        """Why no system can simplify, in a line (the view is then not available)."""
        reasons = "; ".join(f"{n}: {w}" for n, w in self.why.items()) or "no systems"
        if not self.finished:
            return f"the run has not finished, and none of its systems has yet ({reasons})"
        return f"no system of the run can simplify ({reasons})"

    def info(self) -> dict:
        return {
            "systems": [
                {"name": n, "usable": not w, "why": w, "languages": self.languages(n) if not w else []}
                for n, w in self.why.items()
            ],
            "default": self.default,
            "finished": self.finished,  # whether the run got to its end (run.json)
            "note": self.note,  # why the default is what it is, when it is not the run's best
            "languages": list(LANGUAGES),
            "max_chars": MAX_CHARS,
        }

    def system(self, name: str):
        """(System, loaded model) of ``name``, loading it (and dropping the one held before) when it is new."""
        if self.loaded is None or self.loaded[0] != name:
            from multimsd.training.system import load, to_system

            self.loaded = None  # the old model goes before the new one is loaded: one in memory
            system = to_system(name, self.configs[name], self.root / "systems" / name)
            self.loaded = (name, system, load(system))
        return self.loaded[1], self.loaded[2]

    def simplify(self, name: str, lang: str, text: str) -> dict:
        """One document through ``name``: per sentence the source, the output, the safety flags and the marks."""
        from multimsd.alignment.api import segment_text
        from multimsd.training.system import joined, simplify_sentences

        sentences = segment_text(text, lang)
        if not sentences:
            raise ValueError("no sentence in the text")
        if len(sentences) > MAX_SENTENCES:
            raise ValueError(
                f"{len(sentences)} sentences: at most {MAX_SENTENCES} here (use `multimsd simplify` for more)"
            )
        t0 = time.perf_counter()
        system, loaded = self.system(name)
        load_s = time.perf_counter() - t0
        rows = simplify_sentences(system, loaded, [(lang, sentences)], self.highlight.dictionary)[0]
        hl = self.highlight
        for r in rows:
            r["source_terms"] = hl.term_spans(lang, r["source"])
            r["terms"] = hl.term_spans(lang, r["output"])
            r["novel"] = hl.novel_spans(lang, r["source"], r["output"])
        return {
            "system": name,
            "lang": lang,
            "text": joined(lang, rows),
            "sentences": rows,
            "flagged": sum(1 for r in rows if r["flags"]),
            "terms": hl.note(lang),
            "seconds": round(time.perf_counter() - t0 - load_s, 3),
            "load_seconds": round(load_s, 3),
        }


def routes(state: Simplifier) -> list[Route]:
    """``POST /api/simplify`` with ``{"text", "lang", "system", "any_lang"}`` (``system`` defaults to the run's
    best; ``any_lang``: true simplifies a language the system does not know, with a ``warning``)."""
    from multimsd.training.system import check_languages, choose

    async def simplify(request: Request) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "send the text as application/json"}, 415)
        try:
            body = await request.json()
            text, lang, name = body.get("text"), body.get("lang"), body.get("system") or state.default
            any_lang = body.get("any_lang", False)
        except (ValueError, AttributeError):
            return JSONResponse({"error": "a JSON object"}, 400)
        if not isinstance(any_lang, bool):
            return JSONResponse({"error": "any_lang: true or false"}, 400)
        if not isinstance(text, str) or not text.strip():
            return JSONResponse({"error": "text: the paragraph to simplify (not empty)"}, 400)
        if len(text) > MAX_CHARS:
            return JSONResponse(
                {"error": f"{len(text)} characters: at most {MAX_CHARS} here (use `multimsd simplify`)"}, 413
            )
        if lang not in LANGUAGES:
            return JSONResponse({"error": f"lang: one of {', '.join(LANGUAGES)}"}, 400)
        chosen = choose(state.run, name)  # the command's lookup of a named system
        if chosen.unknown:
            return JSONResponse({"error": f"no system {name!r} in this run"}, 404)
        if chosen.name is None:
            return JSONResponse({"error": f"system {name}: {chosen.why}"}, 409)
        try:  # as `multimsd simplify`: before the model is loaded
            warning = check_languages(
                name, state.configs[name], state.shot_langs.get(name), [lang], any_lang, '"any_lang": true'
            )
        except MultimsdError as e:
            return JSONResponse({"error": str(e)}, 400)

        def work() -> dict:
            with state.lock:  # one model in memory, one request generating at a time
                return state.simplify(name, lang, text)

        try:
            answer = await run_in_threadpool(work)
            return JSONResponse({**answer, "warning": warning} if warning else answer)
        except ValueError as e:
            return JSONResponse({"error": str(e)}, 400)
        except MultimsdError as e:  # the system cannot be loaded (a damaged best/): the reason, one line
            return JSONResponse({"error": str(e)}, 500)
        except (RuntimeError, OSError) as e:  # e.g. out of memory: the page says what, the server goes on
            first = (str(e).strip().splitlines() or [""])[0]
            return JSONResponse({"error": f"{type(e).__name__}: {first}"}, 500)

    return [Route("/api/simplify", simplify, methods=["POST"])]


def prepare(studio: Studio) -> Simplifier | Unavailable:
    """The view's state for a run directory (finished or not) with at least one system that can simplify;
    else why not (an ``align`` output, a run with copy baselines only, a run whose trainings have not finished)."""
    from multimsd.training.system import is_run_dir

    root = studio.root
    if find_align_dir(root) == root:
        return Unavailable("a `multimsd align` output has no systems (open a `multimsd run` directory)")
    if not is_run_dir(root):
        return Unavailable("not a `multimsd run` directory (no run.json, no .stages/)")
    try:
        state = Simplifier(root)
    except MultimsdError as e:  # run.json unreadable: the other views still work, this one says why not
        log.warning("no simplify view: %s", e)
        return Unavailable(str(e))
    return state if state.default is not None else Unavailable(state.why_unavailable())


register_view(
    View(
        name="simplify",
        title="simplify",
        order=40,
        script="simplifier.js",
        routes=routes,
        info=lambda state: state.info(),
        prepare=prepare,
    )
)

__all__ = ["MAX_CHARS", "MAX_SENTENCES", "Simplifier", "prepare", "routes"]

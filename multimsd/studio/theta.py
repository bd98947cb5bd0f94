"""The θ view and the agreement between annotators: ``/api/theta`` and ``/api/agreement``.

**θ view.** The gold annotated so far is the annotator's gold file (``journal.gold_path``: the article pairs
they touched, nothing else), scored by the project's own gold mode: :func:`multimsd.alignment.api.evaluate_gold`
is called with the gold file's documents, read by :func:`multimsd.gold.load_gold_docs`, and the run's own
config (``align_config.yaml``) with ``mode=gold``. So the numbers are those ``multimsd align mode=gold
gold.path=<gold file>`` prints for the run's settings, by construction: the gold article pairs are split in a
validation half (θ is tuned there: the F1-maximising θ of the aligner's grid, ties to the higher θ) and a test
half (P/R/F1 at that θ, what gold mode prints). Scored: the run's aligner and the embedding aligners
(symmetric, asymmetric, margin), whose candidates come from the same cached sentence vectors (an aligner
other than the run's runs with its default options, as in gold mode). The command that reproduces the numbers
(``gold_command``) and the ``multimsd align`` override that re-aligns the run with the picked θ (``override``) are
built from the run's config: every key of ``align_config.yaml`` that differs from what ``align.py`` composes
by default, with ``data.path`` and ``output.dir`` made absolute (``output.dir`` is the run's own alignment
directory: the override re-aligns it in place).

**Agreement.** The other annotators' journals in the same studio directory (``journal-*.jsonl``) are read, never
written, and replayed with the studio's own :class:`~multimsd.studio.journal.Journal`; each pair of annotators
gets :func:`multimsd.metrics.agreement.agreement` (item-level F1 and Cohen's κ over candidate decisions) over
the article pairs both annotated.
"""

from __future__ import annotations

import copy
import re
import shlex
import threading
from pathlib import Path

from omegaconf import OmegaConf
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from multimsd.config import AlignConfig
from multimsd.errors import MultimsdError
from multimsd.studio.corpus import Corpus, input_path
from multimsd.studio.journal import Journal
from multimsd.studio.registry import View, register_view

# Scored besides the run's own aligner: they match from the same cached sentence vectors (cheap).
EMBEDDING_METHODS = ("symmetric", "asymmetric", "margin")
# Keys that never change what align.py aligns, or that the θ view sets itself.
SKIP_KEYS = ("mode", "gold.", "aligner.threshold")
SAFE = re.compile(r"^[A-Za-z0-9_./+@:-]+$")


def methods_of(cfg: AlignConfig) -> list[str]:
    """The run's aligner first, then the embedding aligners, each once."""
    return list(dict.fromkeys([cfg.aligner.method, *EMBEDDING_METHODS]))


# ---------------------------------------------------------------------------------------------- overrides
def hydra_value(v) -> str:
    """A value in Hydra's override syntax (``null``, ``true``, ``0.7``, ``[en,ja]``, ``"query: "``)."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int | float):
        return repr(v)
    if isinstance(v, list | tuple):
        return "[" + ",".join(hydra_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}:{hydra_value(x)}" for k, x in v.items()) + "}"
    s = str(v)
    if SAFE.match(s) and s not in ("null", "true", "false") and not re.match(r"^[-+]?[\d.]", s):
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _leaves(d, prefix: str = "") -> dict[str, object]:
    out: dict[str, object] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v:
            out.update(_leaves(v, key + "."))
        else:
            out[key] = v
    return out


def run_overrides(corpus: Corpus, method: str, skip: tuple[str, ...] = SKIP_KEYS) -> list[str]:
    """The ``align.py`` overrides that give the run's config (``align_config.yaml``), aligner ``method``.

    Every leaf that differs from what ``align.py`` composes by default (with ``aligner=method``); for an
    aligner other than the run's, the run's ``aligner.*`` options are left out (it runs with its defaults,
    as gold mode runs it). ``data.path`` and ``output.dir`` are absolute (the run's input as the studio found
    it, the run's alignment directory)."""
    from multimsd.commands.compose import compose

    cfg = corpus.cfg
    default_method = compose("align", []).aligner.method
    group = [f"aligner={method}"] if method != default_method else []
    base = _leaves(OmegaConf.to_container(compose("align", group), resolve=True))
    run = _leaves(OmegaConf.to_container(OmegaConf.structured(cfg), resolve=True))
    run["output.dir"] = str(corpus.align_dir)
    path = input_path(cfg.data.path, corpus.align_dir)
    run["data.path"] = str(Path(path).resolve()) if path and Path(path).exists() else path
    out = list(group)
    for key, value in run.items():
        if any(key == s or key.startswith(s) for s in skip if s.endswith(".")) or key in skip:
            continue
        if method != cfg.aligner.method and key.startswith("aligner."):
            continue
        if key not in base or base[key] != value:
            out.append(f"{key}={hydra_value(value)}")
    return out


def command(args: list[str]) -> str:
    """The command line a user runs: ``multimsd align …`` works wherever multimsd is installed (a wheel too)."""
    return "multimsd align " + " ".join(shlex.quote(a) for a in args)


# ---------------------------------------------------------------------------------------------- θ view
def gold_config(cfg: AlignConfig, gold_path: Path) -> AlignConfig:
    """The run's config in gold mode over the studio's gold file (cross-validation off: the split alone)."""
    g = copy.deepcopy(cfg)
    g.mode = "gold"
    g.gold.path = str(gold_path)
    g.gold.methods = methods_of(cfg)
    g.gold.folds = None
    return g


def theta_view(corpus: Corpus, journal: Journal, overrides: dict[str, list[str]] | None = None) -> dict:
    """Everything the θ view draws (see the module docstring); ``state`` is ``"empty"`` with a ``message``
    while there is not enough gold (gold mode needs two article pairs: one to tune θ on, one to test)."""
    from multimsd.alignment.api import evaluate_gold

    cfg = corpus.cfg
    methods = methods_of(cfg)
    docs = annotated_gold(journal, list(cfg.data.languages))
    n_ids = len({d.article_id for d in docs})
    head = {
        "annotator": journal.annotator,
        "gold_file": str(journal.gold_path),
        "run_aligner": cfg.aligner.method,
        "run_threshold": cfg.aligner.threshold,
        "methods": methods,
        "gold_articles": len(docs),
    }
    if n_ids < 2:
        return head | {
            "state": "empty",
            "message": f"no θ yet: {len(docs)} article pair(s) annotated; gold mode needs at least 2 "
            "(θ is tuned on one half of the gold article pairs and tested on the other)",
        }
    gcfg = gold_config(cfg, journal.gold_path)
    results = evaluate_gold(gcfg, docs)
    rows, picks = curves_and_picks(results)
    # One θ for the whole run: the pooled ("all") pick when there are several languages. The aligner: the
    # best validation F1 at its picked θ (chosen on the same half as θ; a tie keeps the run's aligner).
    pooled = "all" if any(p["lang"] == "all" for p in picks) else picks[0]["lang"]
    best = max(
        (p for p in picks if p["lang"] == pooled),
        key=lambda p: (round(p["valid"]["f1"], 12), p["aligner"] == cfg.aligner.method),
    )
    overrides = overrides if overrides is not None else {}
    for m in methods:
        if m not in overrides:
            overrides[m] = run_overrides(corpus, m)
    for p in picks:
        p["override"] = command([*overrides[p["aligner"]], f"aligner.threshold={hydra_value(p['theta'])}"])
    gold_args = [
        *overrides[cfg.aligner.method],
        *(f"gold.{k}={hydra_value(getattr(cfg.gold, k))}" for k in ("valid_fraction", "only_1to1")),
        "mode=gold",
        f"gold.path={journal.gold_path}",
        f"gold.methods={hydra_value(methods)}",
    ]
    return head | {
        "state": "ok",
        "valid_articles": results["valid_articles"],
        "test_articles": results["test_articles"],
        "only_1to1": results["only_1to1"],
        "rows": rows,
        "picked": picks,
        "recommended": {
            "lang": pooled,
            "aligner": best["aligner"],
            "theta": best["theta"],
            "valid_f1": best["valid"]["f1"],
            "test_f1": best["test"]["f1"],
            "override": best["override"],
        },
        "gold_command": command(gold_args),
    }


def annotated_gold(journal: Journal, langs: list[str]) -> list:
    """The gold file's article pairs in ``langs`` (none while nothing is annotated)."""
    from multimsd.gold import load_gold_docs

    gold = journal.gold_path
    # An empty gold file (nothing annotated yet) is "no records" to the reader: no gold, not an error.
    has_gold = gold.is_file() and gold.read_text(encoding="utf-8").strip()
    docs = load_gold_docs(str(gold)) if has_gold else []
    return [d for d in docs if d.lang in langs]


def curves_and_picks(results: dict) -> tuple[list[dict], list[dict]]:
    """Gold mode's results as the view's rows: every (language, aligner, θ) point of the validation curves,
    and per language and aligner the picked θ with its validation and test scores."""
    rows, picks = [], []
    for method, per_lang in results["methods"].items():
        for lang, e in per_lang.items():
            for p in e["valid_curve"]:
                rows.append(
                    {
                        "lang": lang,
                        "aligner": method,
                        "theta": p["threshold"],
                        "precision": p["precision"],
                        "recall": p["recall"],
                        "f1": p["f1"],
                        "n_gold": p["gold"],
                        "n_pred": p["predicted"],
                        "correct": p["correct"],
                    }
                )
            picks.append(
                {
                    "lang": lang,
                    "aligner": method,
                    "theta": e["threshold"],
                    "valid": e["valid"],
                    "test": e["test"],
                }
            )
    return rows, picks


# ---------------------------------------------------------------------------------------------- agreement
def annotations(journal: Journal) -> dict:
    """The journal's annotated article pairs as :class:`~multimsd.metrics.agreement.Annotation` s."""
    from multimsd.metrics.agreement import Annotation

    out = {}
    for key, st in list(journal.states.items()):  # another thread may add an article meanwhile
        if st.touched:
            gold, rejected = st.gold_and_rejected()
            out[key] = Annotation(set(gold), set(rejected))
    return out


def other_journals(journal: Journal) -> tuple[dict[str, Journal], list[str]]:
    """The other annotators' journals beside this one, replayed read-only; a journal that does not replay
    over this corpus is named in the second list (one line each), not an error of the view."""
    found, errors = {}, []
    for path in sorted(journal.path.parent.glob("journal-*.jsonl")):
        name = path.name.removeprefix("journal-").removesuffix(".jsonl")
        if path == journal.path or name == journal.annotator:
            continue
        try:  # Journal() only reads: nothing is written unless start() or act() is called
            found[name] = Journal(path, path.with_name(f"gold-{name}.jsonl"), name, journal.texts)
        except MultimsdError as e:
            errors.append(f"{name}: {e}")
    return found, errors


def agreement_view(corpus: Corpus, journal: Journal) -> dict:
    """Pairwise agreement of every annotator with a journal here (this one first)."""
    from multimsd.metrics.agreement import agreement

    others, errors = other_journals(journal)
    work = {journal.annotator: annotations(journal)} | {n: annotations(j) for n, j in others.items()}
    predicted = {k: [(p.complex, p.simple) for p in a.predicted] for k, a in corpus.articles.items()}
    names = list(work)
    pairs = []
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pairs.append({"a": a, "b": b, **agreement(work[a], work[b], predicted)})
    return {
        "annotators": [{"name": n, "articles": len(w)} for n, w in work.items()],
        "pairs": pairs,
        "errors": errors,
    }


# ---------------------------------------------------------------------------------------------- routes
def routes(corpus: Corpus, journal: Journal, lock: threading.Lock | None = None) -> list[Route]:
    """``/api/theta`` and ``/api/agreement``. The θ view is recomputed when the journal has changed (its
    sequence number), else served from the last answer; the overrides are composed once per aligner."""
    lock = lock or threading.Lock()
    cache: dict[str, object] = {}
    overrides: dict[str, list[str]] = {}

    def theta_now() -> dict:
        with lock:
            if cache.get("seq") != journal.seq:
                try:
                    cache["view"] = theta_view(corpus, journal, overrides)
                except MultimsdError as e:  # e.g. a gold file an aligner cannot score: one line, no trace
                    cache["view"] = {"state": "error", "message": str(e)}
                cache["seq"] = journal.seq
            return cache["view"]  # type: ignore[return-value]

    async def theta(request: Request) -> JSONResponse:
        return JSONResponse(await run_in_threadpool(theta_now))

    async def agree(request: Request) -> JSONResponse:
        return JSONResponse(await run_in_threadpool(agreement_view, corpus, journal))

    return [Route("/api/theta", theta), Route("/api/agreement", agree)]


register_view(
    View(
        name="theta",
        title="θ",
        order=20,
        script="theta.js",
        routes=lambda studio: routes(studio.corpus, studio.journal),
    )
)

__all__ = ["agreement_view", "routes", "run_overrides", "theta_view"]

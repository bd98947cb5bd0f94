"""The alignment view: an article pair's sentences side by side, the run's (and ``--aligner``'s) alignments,
ranked candidates, and the actions that write gold (``static/alignments.js`` draws it).

Routes: ``GET /api/articles?lang=``, ``GET /api/article?lang=&id=``, ``GET /api/candidates?lang=&id=&side=&idx=``
and ``POST /api/action``. Sentence positions in the API are 0-based, as in the gold file; every text meant to be
read (an item's ``label``, a warning) numbers sentences from 1, as the page does (:func:`item_label`).

A gold item that shares a professional or a consumer sentence with another gold item of the same article (a 1:1
item inside a 1:2 one, say) is kept, as the annotator made it, but the article's answer carries a warning for
each such pair (``warnings``) and marks the items (``overlaps``): gold mode scores both items, which is rarely
what was meant.
"""

from __future__ import annotations

import threading
from itertools import combinations

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from multimsd.errors import MultimsdError
from multimsd.gold import GoldPair
from multimsd.studio.corpus import Article
from multimsd.studio.journal import item_from_json, item_label, item_to_json
from multimsd.studio.registry import Option, Studio, View, register_view
from multimsd.studio.scorers import candidates_view, others_view, parse_aligners
from multimsd.studio.scorers import info as scorers_info


def overlapping(gold: set[GoldPair]) -> list[tuple[GoldPair, GoldPair]]:
    """The pairs of gold items that share a professional or a consumer sentence."""
    return [
        (a, b) for a, b in combinations(sorted(gold), 2) if set(a[0]) & set(b[0]) or set(a[1]) & set(b[1])
    ]


def overlap_warning(a: GoldPair, b: GoldPair) -> dict:
    """Both items (positions, as in the gold file) and a message that numbers sentences from 1."""
    shared = []
    for side, name in ((0, "professional"), (1, "consumer")):
        common = sorted(set(a[side]) & set(b[side]))
        if common:
            numbers = ", ".join(str(k + 1) for k in common)
            shared.append(f"{name} sentence{'s' if len(common) > 1 else ''} {numbers}")
    return {
        "items": [item_to_json(a), item_to_json(b)],
        "message": f"gold items {item_label(a)} and {item_label(b)} overlap: they share {' and '.join(shared)} "
        "(gold mode scores both; reject the one you did not mean)",
    }


def article_view(studio: Studio, art: Article) -> dict:
    """Everything the page draws for one article pair (members are sentence positions, 0-based)."""
    journal = studio.journal
    st = journal.state(art.lang, art.article_id)
    gold, rejected = st.gold_and_rejected()
    pairs = overlapping(gold)
    overlaps = {item for pair in pairs for item in pair}
    predicted = []
    for p in art.predicted:
        item = (p.complex, p.simple)
        status = "accepted" if item in gold else "rejected" if item in rejected else "open"
        predicted.append(
            {"complex": list(p.complex), "simple": list(p.simple), "score": p.score, "cosine": p.cosine}
            | {"status": status, "label": item_label(item)}
        )
    pred_items = {(p.complex, p.simple) for p in art.predicted}
    return {
        "lang": art.lang,
        "article_id": art.article_id,
        "split": art.split,
        "complex": art.complex,
        "simple": art.simple,
        "predicted": predicted,
        "gold": [
            {"complex": list(c), "simple": list(s), "predicted": (c, s) in pred_items}
            | {"label": item_label((c, s)), "overlaps": (c, s) in overlaps}
            for c, s in sorted(gold)
        ],
        "rejected": [{"complex": list(c), "simple": list(s)} for c, s in sorted(rejected)],
        "warnings": [overlap_warning(a, b) for a, b in pairs],
        "can_undo": bool(st.actions),
        "annotated": st.touched,
    } | others_view(studio.corpus, art, gold, rejected)


def prepare(studio: Studio) -> Studio:
    """``--aligner``: the other aligners, checked (one line for an unknown method or a bad θ)."""
    studio.corpus.others = parse_aligners(studio.args.aligner, studio.corpus.cfg)
    return studio


def routes(studio: Studio) -> list[Route]:
    """The view's API: the routes that read the corpus and the journal, then the one that writes gold."""
    return [*_read_routes(studio), _action_route(studio)]


def _read_routes(studio: Studio) -> list[Route]:
    """``/api/articles``, ``/api/article`` and ``/api/candidates``."""
    corpus = studio.corpus

    def find(request: Request) -> Article:
        art = corpus.get(request.query_params.get("lang", ""), request.query_params.get("id", ""))
        if art is None:
            raise LookupError
        return art

    def articles(request: Request) -> JSONResponse:
        lang = request.query_params.get("lang", "")
        rows = article_rows(studio, lang)
        return JSONResponse(rows) if rows else JSONResponse({"error": f"no language {lang!r}"}, 404)

    def article(request: Request) -> JSONResponse:
        try:
            art = find(request)
        except LookupError:
            return JSONResponse({"error": "no such article"}, 404)
        return JSONResponse(article_view(studio, art))

    def candidates(request: Request) -> JSONResponse:
        try:
            art = find(request)
            side = request.query_params.get("side", "")
            idx = int(request.query_params.get("idx", ""))
            k = int(request.query_params.get("k", "10"))
        except LookupError:
            return JSONResponse({"error": "no such article"}, 404)
        except ValueError:
            return JSONResponse({"error": "idx and k are integers"}, 400)
        n = len(art.complex) if side == "complex" else len(art.simple) if side == "simple" else 0
        if not 0 <= idx < n:
            return JSONResponse({"error": "side is complex or simple, idx a sentence position of it"}, 400)
        k = max(1, min(k, 1000))
        try:  # per scorer, and their combination with scorers=a,b (multimsd.studio.scorers)
            more = candidates_view(corpus, art, side, idx, k, request.query_params.get("scorers"))
        except ValueError as e:
            return JSONResponse({"error": str(e)}, 400)
        ranked = corpus.candidates(art, side, idx, k)
        return JSONResponse({"side": side, "idx": idx, "candidates": ranked} | more)

    return [
        Route("/api/articles", articles),
        Route("/api/article", article),
        Route("/api/candidates", candidates),
    ]


def article_rows(studio: Studio, lang: str) -> list[dict]:
    """The article list of one language: per article its sizes, predicted and gold items, whether it is annotated."""
    rows = []
    for (lg, aid), art in studio.corpus.articles.items():
        if lg != lang:
            continue
        st = studio.journal.state(lg, aid)
        gold, _ = st.gold_and_rejected()
        rows.append(
            {
                "article_id": aid,
                "split": art.split,
                "complex": len(art.complex),
                "simple": len(art.simple),
                "predicted": len(art.predicted),
                "gold": len(gold),
                "annotated": st.touched,
            }
        )
    return rows


def _action_route(studio: Studio) -> Route:
    """``POST /api/action``: accept, link, reject, accept_above or undo, written to the journal."""
    corpus = studio.corpus
    lock = threading.Lock()  # one action at a time: the journal's order is the answers'

    async def action(request: Request) -> JSONResponse:
        if request.headers.get("content-type", "").split(";")[0].strip() != "application/json":
            return JSONResponse({"error": "send the action as application/json"}, 415)
        try:
            body = await request.json()
            art = corpus.get(str(body.get("lang", "")), str(body.get("article_id", "")))
        except (ValueError, AttributeError):
            return JSONResponse({"error": "a JSON object"}, 400)
        if art is None:
            return JSONResponse({"error": "no such article"}, 404)
        try:
            kind, items, extra = action_items(studio, art, body)
        except (MultimsdError, KeyError, TypeError, ValueError) as e:
            return JSONResponse({"error": f"bad action: {e}"}, 400)

        def commit() -> dict:
            with lock:  # the journal is fsync-ed (and the gold file rebuilt) before the answer goes out
                rec = studio.journal.act(kind, art.lang, art.article_id, items, **extra)
                return {"seq": rec["seq"], "article": article_view(studio, art)}

        try:
            return JSONResponse(await run_in_threadpool(commit))
        except (
            MultimsdError
        ) as e:  # not written (a full disk): the journal took it back whole; the page says why
            return JSONResponse({"error": str(e)}, 507)

    return Route("/api/action", action, methods=["POST"])


def action_items(studio: Studio, art: Article, body: dict) -> tuple[str, list[GoldPair], dict]:
    """(the action, the items it acts on, its extra record fields) of a POSTed action; raises on a bad one."""
    kind = body.get("action")
    extra = {}
    if kind in ("accept", "link", "reject"):
        items = [item_from_json(it, len(art.complex), len(art.simple), "item") for it in body["items"]]
        if not items:
            raise MultimsdError("no items")
    elif kind == "accept_above":
        theta = float(body["theta"])
        # The items are fixed now, in the record: replaying never depends on the corpus of the day.
        _, rejected = studio.journal.state(art.lang, art.article_id).gold_and_rejected()
        items = [
            (p.complex, p.simple)
            for p in art.predicted
            if p.score >= theta and (p.complex, p.simple) not in rejected
        ]
        extra = {"theta": theta}
    elif kind == "undo":
        items = []
    else:
        raise MultimsdError(f"unknown action {kind!r}")
    return kind, items, extra


register_view(
    View(
        name="align",
        title="alignments",
        order=10,
        script="alignments.js",
        routes=routes,
        info=lambda studio: scorers_info(studio.corpus),
        options=(
            Option(
                "--aligner",
                "M[:θ]",
                "also show aligner M's alignments (symmetric, asymmetric, margin, nm, lexical; θ: its\n"
                f"{'':20}default), computed from the cached vectors; repeatable",
                repeat=True,
            ),
        ),
        prepare=prepare,
    )
)

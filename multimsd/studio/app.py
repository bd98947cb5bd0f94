"""The studio's web app: a JSON API over a :class:`~multimsd.studio.corpus.Corpus` and a
:class:`~multimsd.studio.journal.Journal`, and the bundled front end.

Nothing a request names is ever turned into a path: articles are looked up by (language, id) in the corpus,
static files in a fixed table of the files shipped in ``static/``. So ``../../etc/passwd`` in any parameter is
a 404, not a file. Behind a non-loopback address every request needs the token printed at start-up (as
``?token=``, the ``X-Studio-Token`` header, or the cookie the page sets), else 403.

On loopback, where there is no token, two things keep other web pages in the same browser out: a request whose
``Host`` is not a loopback name is refused (a DNS-rebinding page reaches the port under its own name), and an
action must be sent as ``application/json``, which another origin cannot do without a CORS preflight this app
never grants (a plain form or ``text/plain`` POST is refused with 415).
"""

from __future__ import annotations

import hmac
import threading
from importlib import resources
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from multimsd.errors import MultimsdError
from multimsd.studio.corpus import Article, Corpus
from multimsd.studio.journal import Journal, item_from_json
from multimsd.studio.scorers import candidates_view, others_view
from multimsd.studio.scorers import info as scorers_info
from multimsd.studio.theta import routes as theta_routes

# The front end: every file the app serves, and nothing else.
STATIC = {"index.html": "text/html", "studio.css": "text/css", "studio.js": "text/javascript"}
STATIC["review.js"] = "text/javascript"
STATIC["theta.js"] = "text/javascript"  # the θ view (multimsd.studio.theta)
COOKIE = "multimsd_studio_token"


def static_text(name: str) -> str:
    return (resources.files("multimsd.studio") / "static" / name).read_text(encoding="utf-8")


class TokenGate:
    """ASGI middleware: 403 for any request without the token (pure ASGI, so it also guards streaming)."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self.token = app, token

    def _given(self, scope: Scope) -> list[str]:
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        found = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("token", [])
        found.append(headers.get("x-studio-token", ""))
        for part in headers.get("cookie", "").split(";"):
            name, _, value = part.strip().partition("=")
            if name == COOKIE:
                found.append(value)
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket") and not any(
            hmac.compare_digest(t.encode(), self.token.encode()) for t in self._given(scope)
        ):
            await Response("forbidden: this studio needs its token (see the URL it printed)", 403)(
                scope, receive, send
            )
            return
        await self.app(scope, receive, send)


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


class LoopbackHostGate:
    """ASGI middleware: 403 unless the ``Host`` header names the loopback address the server listens on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            host = dict(scope.get("headers", [])).get(b"host", b"").decode("latin-1")
            name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
            if name not in LOOPBACK_NAMES:
                await Response("forbidden: not a loopback host name", 403)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def article_view(corpus: Corpus, journal: Journal, art: Article) -> dict:
    """Everything the page draws for one article pair (indices are sentence positions, 0-based)."""
    gold, rejected = journal.state(art.lang, art.article_id).gold_and_rejected()
    predicted = []
    for p in art.predicted:
        item = (p.complex, p.simple)
        status = "accepted" if item in gold else "rejected" if item in rejected else "open"
        predicted.append(
            {"complex": list(p.complex), "simple": list(p.simple), "score": p.score, "cosine": p.cosine}
            | {"status": status}
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
            for c, s in sorted(gold)
        ],
        "rejected": [{"complex": list(c), "simple": list(s)} for c, s in sorted(rejected)],
        "can_undo": bool(journal.state(art.lang, art.article_id).actions),
        "annotated": journal.state(art.lang, art.article_id).touched,
    } | others_view(corpus, art, gold, rejected)


def create_app(
    corpus: Corpus, journal: Journal, token: str | None = None, check_host: bool = False, review=None
) -> Starlette:
    """The Starlette app; with ``token`` every request must carry it, with ``check_host`` (the command sets it
    on loopback) its ``Host`` must be a loopback name."""
    lock = threading.Lock()  # one action at a time: the journal's order is the order of the answers
    cfg = corpus.cfg

    def find(request: Request) -> Article:
        art = corpus.get(request.query_params.get("lang", ""), request.query_params.get("id", ""))
        if art is None:
            raise LookupError
        return art

    async def index(request: Request) -> Response:
        resp = Response(static_text("index.html"), media_type="text/html")
        if token:  # the page's own requests (CSS, JS, API) then carry the token without it in every URL
            resp.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return resp

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return Response("not found", 404)
        return Response(static_text(name), media_type=STATIC[name])

    def info(request: Request) -> JSONResponse:
        langs = []
        for lang in corpus.languages:
            keys = [k for k in corpus.articles if k[0] == lang]
            done = sum(journal.state(*k).touched for k in keys)
            langs.append({"lang": lang, "articles": len(keys), "annotated": done})
        return JSONResponse(
            {
                "annotator": journal.annotator,
                "align_dir": str(corpus.align_dir),
                "aligner": {"method": cfg.aligner.method, "threshold": cfg.aligner.threshold},
                "embedder": cfg.embedder.name,
                "gold_file": str(journal.gold_path),
                "languages": langs,
                "sentences_encoded": corpus.n_encoded,
                "review": review.info() if review is not None else None,  # the outputs view (review.py)
            }
            | scorers_info(corpus)
        )

    def articles(request: Request) -> JSONResponse:
        lang = request.query_params.get("lang", "")
        rows = []
        for (lg, aid), art in corpus.articles.items():
            if lg != lang:
                continue
            st = journal.state(lg, aid)
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
        return JSONResponse(rows) if rows else JSONResponse({"error": f"no language {lang!r}"}, 404)

    def article(request: Request) -> JSONResponse:
        try:
            art = find(request)
        except LookupError:
            return JSONResponse({"error": "no such article"}, 404)
        return JSONResponse(article_view(corpus, journal, art))

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
            return JSONResponse({"error": "side is complex or simple, idx a sentence of it"}, 400)
        k = max(1, min(k, 1000))
        try:  # per scorer, and their combination with scorers=a,b (multimsd.studio.scorers)
            more = candidates_view(corpus, art, side, idx, k, request.query_params.get("scorers"))
        except ValueError as e:
            return JSONResponse({"error": str(e)}, 400)
        ranked = corpus.candidates(art, side, idx, k)
        return JSONResponse({"side": side, "idx": idx, "candidates": ranked} | more)

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
        kind = body.get("action")
        extra = {}
        try:
            if kind in ("accept", "link", "reject"):
                items = [
                    item_from_json(it, len(art.complex), len(art.simple), "item") for it in body["items"]
                ]
                if not items:
                    raise MultimsdError("no items")
            elif kind == "accept_above":
                theta = float(body["theta"])
                # The items are fixed now, in the record: replaying never depends on the corpus of the day.
                _, rejected = journal.state(art.lang, art.article_id).gold_and_rejected()
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
        except (MultimsdError, KeyError, TypeError, ValueError) as e:
            return JSONResponse({"error": f"bad action: {e}"}, 400)

        def commit() -> dict:
            with lock:  # the journal is fsync-ed (and the gold file rebuilt) before the answer goes out
                rec = journal.act(kind, art.lang, art.article_id, items, **extra)
                return {"seq": rec["seq"], "article": article_view(corpus, journal, art)}

        from starlette.concurrency import run_in_threadpool

        return JSONResponse(await run_in_threadpool(commit))

    routes = [
        Route("/", index),
        Route("/static/{name:path}", static),
        Route("/api/info", info),
        Route("/api/articles", articles),
        Route("/api/article", article),
        Route("/api/candidates", candidates),
        Route("/api/action", action, methods=["POST"]),
    ]
    routes += theta_routes(corpus, journal)  # /api/theta, /api/agreement
    if review is not None:
        from multimsd.studio.review import routes as review_routes

        routes += review_routes(review)
    app = Starlette(routes=routes)
    if token:
        app.add_middleware(TokenGate, token=token)
    if check_host:
        app.add_middleware(LoopbackHostGate)
    return app


__all__ = ["create_app"]

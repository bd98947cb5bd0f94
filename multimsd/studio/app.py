"""The studio's web app: the page, its static files, ``/api/info``, and the routes of every registered view
(:mod:`multimsd.studio.registry`): the page's view buttons and ``<script>`` tags, the static table and
``/api/info``'s entries are made from the registry, so a new view needs no change here.

Nothing a request names is ever turned into a path: articles are looked up by (language, id) in the corpus,
static files in a fixed table (the page's own files and the registered views' scripts). So ``../../etc/passwd`` in any parameter is
a 404, not a file. Behind a non-loopback address every request needs the token printed at start-up (as
``?token=``, the ``X-Studio-Token`` header, or the cookie the page sets), else 403.

On loopback, where there is no token, two things keep other web pages in the same browser out: a request whose
``Host`` is not a loopback name is refused (a DNS-rebinding page reaches the port under its own name), and an
action must be sent as ``application/json``, which another origin cannot do without a CORS preflight this app
never grants (a plain form or ``text/plain`` POST is refused with 415).

Every answer under ``/api/`` that is an error is JSON, ``{"error": "…"}`` with the reason, whoever gives it: a
view, the gates (403), a route that is not there (404: a view not available here says why; any other path
too), a method the route does not take (405), a failure of the server (500). The page shows ``error``.
"""

from __future__ import annotations

import hmac
import html
from importlib import resources
from urllib.parse import parse_qs

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Receive, Scope, Send

from multimsd.studio.registry import CORE_FILES, NOTHING_TO_SHOW, Studio, View
from multimsd.studio.views import all_views

TYPES = {".html": "text/html", ".css": "text/css", ".js": "text/javascript"}
COOKIE = "multimsd_studio_token"
API = "/api/"


def static_text(name: str) -> str:
    return (resources.files("multimsd.studio") / "static" / name).read_text(encoding="utf-8")


def error(path: str, text: str, status: int, headers: dict | None = None) -> Response:
    """An error answer: JSON ``{"error": text}`` under ``/api/`` (what the page and a script read), the plain
    text elsewhere."""
    if path.startswith(API):
        return JSONResponse({"error": text}, status, headers=headers)
    return Response(text, status, headers=headers)


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
            text = "forbidden: this studio needs its token (see the URL it printed)"
            await error(scope.get("path", ""), text, 403)(scope, receive, send)
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
                await error(scope.get("path", ""), "forbidden: not a loopback host name", 403)(
                    scope, receive, send
                )
                return
        await self.app(scope, receive, send)


def numbered() -> list[tuple[View, str]]:
    """The registered views with their number keys ("1", "2", …: the registry's order). A view with nothing to
    show here (its state None) keeps its place and its key; its button says why."""
    return [(v, str(k)) for k, v in enumerate(all_views(), 1)]


def why_unavailable(studio: Studio, view: View) -> str:
    """Why ``view`` has nothing to show here; "" when it has."""
    if studio.states.get(view.name) is not None:
        return ""
    return studio.unavailable.get(view.name) or NOTHING_TO_SHOW


def index_html(studio: Studio, views: list[tuple[View, str]]) -> str:
    """``static/index.html`` with the views' buttons and ``<script>`` tags filled in from the registry. The
    button of a view with nothing to show here is greyed and carries the reason (``data-why``, on hover)."""
    buttons, scripts = [], []
    for view, key in views:
        title, extra = key, ""
        if why := why_unavailable(studio, view):
            title = f"{key}: not available here: {why}"
            extra = f' class="unavailable" aria-disabled="true" data-why="{html.escape(why)}"'
        buttons.append(
            f'<button data-view="{html.escape(view.name)}" data-key="{key}" title="{html.escape(title)}"{extra}>'
            f"{html.escape(view.title)}</button>"
        )
        scripts.append(f'<script src="static/{html.escape(view.script)}"></script>')
    page = static_text("index.html")
    return page.replace("<!-- views: buttons -->", "\n    ".join(buttons)).replace(
        "<!-- views: scripts -->", "\n".join(scripts)
    )


def unavailable_routes(view: View, why: str) -> list[BaseRoute]:
    """The routes of a view with nothing to show here, each answering why (404, JSON). Their paths are those
    ``view.routes`` builds (with no state: it only builds them); a view whose ``routes`` needs its state has
    none here, its paths get the plain "no such route" answer."""
    try:
        paths = [r.path for r in view.routes(None) if isinstance(getattr(r, "path", None), str)]
    except (AttributeError, TypeError):  # routes that read their state while being built
        return []

    async def answer(request: Request) -> Response:
        return JSONResponse({"error": f"the {view.title} view is not available here: {why}"}, 404)

    methods = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]
    return [Route(path, answer, methods=methods) for path in dict.fromkeys(paths)]


async def http_error(request: Request, exc: Exception) -> Response:
    """Starlette's own errors (no such route: 404, a method the route does not take: 405), JSON under /api/."""
    assert isinstance(exc, HTTPException)
    path, text = request.url.path, str(exc.detail)
    if path.startswith(API) and exc.status_code == 404:
        text = f"no such route: {request.method} {path}"
    elif path.startswith(API) and exc.status_code == 405:
        allowed = (exc.headers or {}).get("Allow", "another method")
        text = f"{request.method} {path}: not allowed, use {allowed}"
    return error(path, text, exc.status_code, exc.headers)


async def server_error(request: Request, exc: Exception) -> Response:
    """A failure of the server itself (a bug): the reason, one line, JSON under /api/."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return error(request.url.path, f"internal error: {type(exc).__name__}: {first}", 500)


def create_app(studio: Studio, token: str | None = None, check_host: bool = False) -> Starlette:
    """The Starlette app over a prepared :class:`~multimsd.studio.registry.Studio`: the page, the static files
    and ``/api/info`` here, every other route from the registered views (those with something to show; the
    routes of the others answer why). With ``token`` every request must carry it, with ``check_host`` (the
    command sets it on loopback) its ``Host`` must be a loopback name."""
    corpus, journal, cfg = studio.corpus, studio.journal, studio.corpus.cfg
    views = numbered()  # the views registered now: the page, the files and the routes all follow these
    scripts = {view.script: view for view, _ in views}

    async def index(request: Request) -> Response:
        resp = Response(index_html(studio, views), media_type="text/html")
        if token:  # the page's own requests (CSS, JS, API) then carry the token without it in every URL
            resp.set_cookie(COOKIE, token, httponly=True, samesite="strict")
        return resp

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name in CORE_FILES:
            text = static_text(name)
        elif name in scripts:
            text = scripts[name].script_text()
        else:
            return Response("not found", 404)
        return Response(text, media_type=TYPES.get(name[name.rfind(".") :], "text/plain"))

    def info(request: Request) -> JSONResponse:
        langs = []
        for lang in corpus.languages:
            keys = [k for k in corpus.articles if k[0] == lang]
            done = sum(journal.state(*k).touched for k in keys)
            langs.append({"lang": lang, "articles": len(keys), "annotated": done})
        out = {  # registry.INFO_KEYS: no view is named like one of these
            "annotator": journal.annotator,
            "align_dir": str(corpus.align_dir),
            "aligner": {"method": cfg.aligner.method, "threshold": cfg.aligner.threshold},
            "embedder": cfg.embedder.name,
            "gold_file": str(journal.gold_path),
            "languages": langs,
            "sentences_encoded": corpus.n_encoded,
            "views": [],
        }
        for view, key in views:  # each view's own entry under its name (None: nothing to show here, and why)
            state, why = studio.states.get(view.name), why_unavailable(studio, view)
            entry = {"name": view.name, "title": view.title, "key": key, "available": not why, "why": why}
            out["views"].append(entry)
            out[view.name] = (view.info(state) if view.info else {}) if not why else None
        return JSONResponse(out)

    routes = [
        Route("/", index),
        Route("/static/{name:path}", static),
        Route("/api/info", info),
    ]
    for view, _ in views:
        if why := why_unavailable(studio, view):
            routes += unavailable_routes(view, why)
        else:
            routes += view.routes(studio.states[view.name])
    app = Starlette(routes=routes, exception_handlers={HTTPException: http_error, Exception: server_error})
    if token:
        app.add_middleware(TokenGate, token=token)
    if check_host:
        app.add_middleware(LoopbackHostGate)
    return app


__all__ = ["create_app", "index_html"]

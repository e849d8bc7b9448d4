"""The console's pages and JSON: Starlette (ASGI) with Jinja2 templates; every gRPC call made
with the signed-in user's own token over one channel to the server (``services.api.client``).

Safe by default: the session id is the only cookie (HttpOnly, SameSite=Strict, Secure over
TLS); every form carries the session's CSRF token; a strict Content-Security-Policy (scripts
and styles from this origin only, no inline script); every page view is logged with the
session's user; no token, unrevealed seed or face-down card is put in a page (the API does not
give them to a caller not entitled, and the console adds nothing of its own)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import grpc
import structlog
from google.protobuf.json_format import MessageToDict
from google.protobuf.message import Message
from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send
from starlette.types import Message as Message_

from domain.currency import format_minor
from services.api.client import Client
from services.api.gen.sabot.v1 import events_pb2, regulator_pb2, reports_pb2, table_pb2
from services.web.sessions import COOKIE, Session, Sessions, csrf_ok

HERE = Path(__file__).parent
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
       "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Cache-Control": "no-store",
}

log = structlog.get_logger("sabot.web")


def plain(message: Message) -> dict[str, Any]:
    """A message as a dict with the proto's field names (int64 as text, as JSON has it)."""
    return MessageToDict(message, preserving_proto_field_name=True)


class Console:
    """The console's state: the sessions and the channel to the server."""

    def __init__(self, target: str, channel: grpc.Channel, *, secure: bool,
                 checkpoint_public_key: str = "") -> None:
        self.target = target
        self.channel = channel
        self.secure = secure
        self.checkpoint_public_key = checkpoint_public_key
        self.sessions = Sessions()
        self.templates = Environment(loader=FileSystemLoader(HERE / "templates"),
                                     autoescape=select_autoescape(("html",)))
        self.templates.filters["money"] = _money

    @contextmanager
    def client(self, session: Session) -> Iterator[Client]:
        client = Client(self.target, session.token, channel=self.channel, timeout=15)
        try:
            yield client
        finally:
            client.close()  # the channel is the console's: not closed here


def _money(value: Any, currency: str = "") -> str:
    if isinstance(value, dict):
        return format_minor(int(value.get("amount_minor", 0) or 0),
                            str(value.get("currency_code") or currency))
    return format_minor(int(value or 0), currency) if currency else str(value)


Handler = Callable[[Request, Console, Session], Awaitable[Response]]


def _session(console: Console, request: Request) -> Session | None:
    return console.sessions.get(request.cookies.get(COOKIE))


def _page(console: Console, request: Request, template: str, session: Session | None,
          status: int = 200, **context: Any) -> HTMLResponse:
    html = console.templates.get_template(template).render(
        session=session, csrf=session.csrf if session else "", **context)
    return HTMLResponse(html, status_code=status)


def signed_in(handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A page for a signed-in user: others go to the sign-in page; the view is logged with the
    user's label (never the token); an API refusal is shown as a page, not an error."""
    async def endpoint(request: Request) -> Response:
        console: Console = request.app.state.console
        session = _session(console, request)
        if session is None or not session.signed_in:
            return RedirectResponse("/signin", status_code=303)
        log.info("page view", path=request.url.path, user=session.label)
        try:
            return await handler(request, console, session)
        except grpc.RpcError as exc:
            code = exc.code()
            status = {grpc.StatusCode.PERMISSION_DENIED: 403,
                      grpc.StatusCode.UNAUTHENTICATED: 401,
                      grpc.StatusCode.NOT_FOUND: 404,
                      grpc.StatusCode.INVALID_ARGUMENT: 400}.get(code, 502)
            if request.url.path.startswith("/api/"):
                return JSONResponse({"error": code.name, "message": exc.details()},
                                    status_code=status)
            return _page(console, request, "refused.html", session, status=status,
                         code=code.name, message=exc.details())
    return endpoint


async def signin_page(request: Request) -> Response:
    console: Console = request.app.state.console
    session = _session(console, request) or console.sessions.new()
    response = _page(console, request, "signin.html", session)
    _set_cookie(console, response, session)
    return response


async def signin(request: Request) -> Response:
    console: Console = request.app.state.console
    session = _session(console, request)
    form = await request.form()
    if session is None or not csrf_ok(session, str(form.get("csrf", ""))):
        return PlainTextResponse("the form has expired: sign in again", status_code=403)
    token = str(form.get("token", "")).strip()
    account = str(form.get("account", "")).strip()
    probe = Session(sid="", csrf="", token=token)
    try:
        with console.client(probe) as client:
            await run_in_threadpool(client.tables.ListTables,
                                    table_pb2.ListTablesRequest(page_size=1))
    except grpc.RpcError as exc:
        if exc.code() is not grpc.StatusCode.PERMISSION_DENIED:  # a cashier reads no table
            log.warning("sign-in refused", reason=exc.code().name)
            return _page(console, request, "signin.html", session, status=401,
                         error="this credential is not accepted by the server")
    console.sessions.drop(session.sid)  # a new id once signed in (no session fixation)
    fresh = console.sessions.new()
    fresh.token, fresh.account = token, account
    fresh.label = f"account {account}" if account else f"credential …{_digest(token)}"
    log.info("signed in", user=fresh.label)
    response = RedirectResponse("/", status_code=303)
    _set_cookie(console, response, fresh)
    return response


def _digest(token: str) -> str:
    import hashlib

    return hashlib.sha256(token.encode()).hexdigest()[:8]


async def signout(request: Request) -> Response:
    console: Console = request.app.state.console
    session = _session(console, request)
    form = await request.form()
    if session is not None and csrf_ok(session, str(form.get("csrf", ""))):
        console.sessions.drop(session.sid)
        log.info("signed out", user=session.label)
    response = RedirectResponse("/signin", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


def _set_cookie(console: Console, response: Response, session: Session) -> None:
    response.set_cookie(COOKIE, session.sid, httponly=True, samesite="strict",
                        secure=console.secure, path="/")


@signed_in
async def home(request: Request, console: Console, session: Session) -> Response:
    return _page(console, request, "home.html", session)


@signed_in
async def tables(request: Request, console: Console, session: Session) -> Response:
    with console.client(session) as client:
        found = await run_in_threadpool(client.tables.ListTables,
                                        table_pb2.ListTablesRequest(page_size=200))
    return _page(console, request, "tables.html", session,
                 tables=[plain(t) for t in found.tables])


async def game_table(request: Request, console: Console, session: Session,
                     shown: dict[str, Any]) -> Response:
    from services.web import games  # it imports this module

    return await games.game_table(request, console, session, shown)


GAMES = ("treinta-y-una", "cuarenta")


@signed_in
async def table(request: Request, console: Console, session: Session) -> Response:
    name = f"tables/{request.path_params['table']}"
    with console.client(session) as client:
        shown = await run_in_threadpool(client.tables.GetTable,
                                        table_pb2.GetTableRequest(name=name))
        if shown.game in GAMES:  # Treinta y Una's rounds, Cuarenta's matches
            return await game_table(request, console, session, plain(shown))
        coups = await _recalled(client, name, request.query_params.get("page", ""))
    for c in coups["coups"]:  # the signed-in player's own coups, marked
        c["mine"] = bool(session.account) and any(
            session.account in (d.get("account_id"), d.get("player"))
            for d in (json.loads(s.get("data_json") or "{}") for s in c.get("steps", [])))
    return _page(console, request, "table.html", session, table=plain(shown),
                 coups=coups["coups"], next_page=coups["next"])


async def _recalled(client: Client, table_name: str, page: str, size: int = 10
                    ) -> dict[str, Any]:
    found = await run_in_threadpool(client.recall.ListRecalledCoups,
                                    events_pb2.ListRecalledCoupsRequest(
                                        parent=table_name, page_size=size, page_token=page))
    return {"coups": [plain(c) for c in found.coups], "next": found.next_page_token}


@signed_in
async def table_live(request: Request, console: Console, session: Session) -> Response:
    """The table's latest coup as JSON, for the live view's polling (paused by the page)."""
    name = f"tables/{request.path_params['table']}"
    with console.client(session) as client:
        shown = await run_in_threadpool(client.tables.GetTable,
                                        table_pb2.GetTableRequest(name=name))
        latest = await _recalled(client, name, "", size=1)
    return JSONResponse({"table": plain(shown), "coup": (latest["coups"] or [None])[0]})


@signed_in
async def coup(request: Request, console: Console, session: Session) -> Response:
    name = request.path_params["name"]
    table_name = "/".join(name.split("/")[:2])
    with console.client(session) as client:
        shown = await run_in_threadpool(client.tables.GetCoup,
                                        table_pb2.GetCoupRequest(name=name))
        shoe = await run_in_threadpool(client.tables.GetShoe, table_pb2.GetShoeRequest(
            name="/".join(name.split("/")[:4])))
        steps = await _coup_steps(client, table_name, name)
    return _page(console, request, "coup.html", session, coup=plain(shown), shoe=plain(shoe),
                 steps=steps, mine=session.account)


async def _coup_steps(client: Client, table_name: str, coup_name: str) -> list[dict[str, Any]]:
    """The coup's recorded steps in order (the table's recall, newest first, paged)."""
    page = ""
    for _ in range(20):
        found = await _recalled(client, table_name, page, size=50)
        for c in found["coups"]:
            if c["coup"]["name"] == coup_name:
                steps: list[dict[str, Any]] = c.get("steps", [])
                for s in steps:
                    s["data"] = json.loads(s.get("data_json") or "{}")
                return steps
        page = found["next"]
        if not page:
            break
    return []


@signed_in
async def coup_facts(request: Request, console: Console, session: Session) -> Response:
    """What the in-browser check needs, as recorded: the shoe (the seed only once revealed:
    the API gives nothing before), the coup's cards, and where the caller may read them the
    latest signed checkpoint and the inclusion proofs of the coup's events. The page computes
    every verdict itself."""
    name = request.path_params["name"]
    table_name = "/".join(name.split("/")[:2])
    with console.client(session) as client:
        shown = plain(await run_in_threadpool(client.tables.GetCoup,
                                              table_pb2.GetCoupRequest(name=name)))
        shoe = plain(await run_in_threadpool(client.tables.GetShoe, table_pb2.GetShoeRequest(
            name="/".join(name.split("/")[:4]))))
        steps = await _coup_steps(client, table_name, name)
        evidence = await _evidence(client, [int(s["position"]) for s in steps])
    return JSONResponse({
        "shoe": {k: shoe.get(k) for k in ("name", "algorithm", "deck_kind", "decks",
                                           "commitment", "cut_position", "seed",
                                           "order_digest", "closed")},
        "shoe_id": shoe["name"].rsplit("/", 1)[-1],
        "cards": shown.get("cards", []),
        "evidence": evidence,
        "checkpoint_public_key": console.checkpoint_public_key,
    })


async def _evidence(client: Client, positions: list[int]) -> dict[str, Any] | None:
    """The latest signed checkpoint and an inclusion proof per position under it (None: the
    caller's role may not read them, or nothing is signed yet)."""
    try:
        cp = await run_in_threadpool(client.regulator.GetLatestCheckpoint,
                                     regulator_pb2.GetLatestCheckpointRequest())
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.NOT_FOUND,
                          grpc.StatusCode.FAILED_PRECONDITION):
            return None
        raise
    checkpoint = {"origin": cp.origin, "size": cp.tree_size, "root": cp.root_hash.hex(),
                  "position": cp.position if cp.HasField("position") else None,
                  "coup": cp.coup_id or None, "key_id": cp.key_id,
                  "signature": cp.signature.hex()}
    proofs: list[dict[str, Any]] = []
    for position in positions:
        if checkpoint["position"] is None or position > checkpoint["position"]:
            proofs.append({"position": position, "after_checkpoint": True})
            continue
        try:
            p = await run_in_threadpool(client.regulator.GetInclusionProof,
                                        regulator_pb2.GetInclusionProofRequest(
                                            position=position, tree_size=cp.tree_size))
        except grpc.RpcError as exc:
            if exc.code() is grpc.StatusCode.PERMISSION_DENIED:
                return {"checkpoint": checkpoint, "proofs": None}
            raise
        proofs.append({"position": position, "leaf_index": p.leaf_index,
                       "leaf_hash": p.leaf_hash.hex(), "tree_size": p.tree_size,
                       "root": p.root_hash.hex(), "path": [h.hex() for h in p.hashes]})
    return {"checkpoint": checkpoint, "proofs": proofs}


@signed_in
async def day_report(request: Request, console: Console, session: Session) -> Response:
    day = request.query_params.get("day", "")
    report: dict[str, Any] | None = None
    if day:
        with console.client(session) as client:
            found = await run_in_threadpool(
                client.read_models.GetGamingDayReport,
                reports_pb2.GetGamingDayReportRequest(gaming_day=day))
        report = plain(found)
    return _page(console, request, "day.html", session, day=day, report=report)


def build(console: Console) -> Starlette:
    from services.web.games import ROUTES as GAME_ROUTES
    routes = [
        Route("/signin", signin_page, methods=["GET"]),
        Route("/signin", signin, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/", home),
        Route("/tables", tables),
        Route("/tables/{table}", table),
        Route("/api/tables/{table}", table_live),
        Route("/coup/{name:path}", coup),
        Route("/api/coup/{name:path}", coup_facts),
        Route("/reports/day", day_report),
        # Treinta y Una's rounds and Cuarenta's matches (services/web/games.py)
        *(Route(path, endpoint) for path, endpoint in GAME_ROUTES),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    extra = dict(HEADERS)
    if console.secure:
        extra["Strict-Transport-Security"] = "max-age=31536000"
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders, headers=extra)])
    app.state.console = console
    return app


class SecurityHeaders:
    """Pure ASGI middleware: every response carries the console's security headers."""

    def __init__(self, app: ASGIApp, headers: dict[str, str]) -> None:
        self.app = app
        self.headers = [(k.lower().encode(), v.encode()) for k, v in headers.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message_) -> None:
            if message["type"] == "http.response.start":
                given = {k.lower() for k, _ in message.get("headers", [])}
                message["headers"] = [*message.get("headers", []),
                                      *((k, v) for k, v in self.headers if k not in given)]
            await send(message)

        await self.app(scope, receive, sending)

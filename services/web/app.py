"""The console's pages and JSON: Starlette (ASGI) with Jinja2 templates; every gRPC call made
with the signed-in user's own token over one channel to the server (``services.api.client``).

Safe by default: the session id is the only cookie (HttpOnly, SameSite=Strict, Secure over
TLS); every form carries the session's CSRF token; a strict Content-Security-Policy (scripts
and styles from this origin only, no inline script); every page view is logged with the
session's user; no token, unrevealed seed or face-down card is put in a page (the API does not
give them to a caller not entitled, and the console adds nothing of its own)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
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

from domain.currency import format_minor, minor_unit
from services.api.client import Client
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as tyu_pb2
from services.api.gen.sabot.v1 import (
    common_pb2,
    events_pb2,
    regulator_pb2,
    reports_pb2,
    table_pb2,
)
from services.regulator.canonical import canonical_json
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
        self.templates.filters["fact"] = fact

    @contextmanager
    def client(self, session: Session) -> Iterator[Client]:
        client = Client(self.target, session.token, channel=self.channel, timeout=15)
        try:
            yield client
        finally:
            client.close()  # the channel is the console's: not closed here


def fact(value: Any) -> str:
    """A recorded value as a page shows it: a text as itself, anything else as canonical JSON
    (what the check in the browser compares with the event's stored bytes)."""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _money(value: Any, currency: str = "") -> str:
    if isinstance(value, dict):
        return format_minor(int(value.get("amount_minor", 0) or 0),
                            str(value.get("currency_code") or currency))
    return format_minor(int(value or 0), currency) if currency else str(value)


Handler = Callable[[Request, Console, Session], Awaitable[Response]]
Handler_ = Callable[[Request], Awaitable[Response]]  # a route's endpoint


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


# A game's own table page (services/web/games.py: Treinta y Una's rounds, Cuarenta's matches)
# and its live view (the template and what it shows of the table's unit in play), handed to
# ``build`` by whoever composes the console (services/cli/web.py).
GamePage = Callable[[Request, "Console", Session, dict[str, Any]], Awaitable[Response]]
GameLive = Callable[[Client, dict[str, Any]], Awaitable[dict[str, Any]]]


async def _table_of(client: Client, request: Request) -> tuple[str, table_pb2.Table]:
    """The table a path names (``/…/{table}``): its name and the API's answer."""
    name = f"tables/{request.path_params['table']}"
    shown: table_pb2.Table = await run_in_threadpool(client.tables.GetTable,
                                                     table_pb2.GetTableRequest(name=name))
    return name, shown


@signed_in
async def table(request: Request, console: Console, session: Session) -> Response:
    with console.client(session) as client:
        name, shown = await _table_of(client, request)
        pages: Mapping[str, GamePage] = request.app.state.game_pages
        page = pages.get(shown.game)
        if page is not None:  # Treinta y Una's rounds, Cuarenta's matches
            return await page(request, console, session, plain(shown))
        older = request.query_params.get("page", "")
        try:
            coups = await _recalled(client, name, older)
            latest = ((await _recalled(client, name, "", size=1))["coups"] if older
                      else coups["coups"])
        except grpc.RpcError as exc:
            refused = _evidence_broken(exc)
            if refused is None:
                raise
            coups, latest = {"coups": [], "next": ""}, []
        else:
            refused = None
    for c in coups["coups"]:  # the signed-in player's own coups, marked
        c["mine"] = bool(session.account) and mine_in_steps(session.account, c.get("steps", []))
    return _page(console, request, "table.html", session, table=plain(shown),
                 coups=coups["coups"], next_page=coups["next"], refused=refused,
                 **_coup_live(latest))


def _evidence_broken(exc: grpc.RpcError) -> str | None:
    """The ledger's refusal of a read whose stored events are not what its evidence chain
    covers (FAILED_PRECONDITION: an event edited, inserted or deleted in the store; the
    message names its position), to be shown as the failure it is; None for any other."""
    if exc.code() is not grpc.StatusCode.FAILED_PRECONDITION:
        return None
    details = str(exc.details() or "")
    return details if "evidence chain" in details else None


def _coup_live(latest: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The live view's template and what it shows: the table's latest coup, its rows as dealt."""
    return {"live_template": "_live_coup.html", "live_unit": "coup",
            "coup": latest[0] if latest else None}


@signed_in
async def table_now(request: Request, console: Console, session: Session) -> Response:
    """The live view of a table (``live.js`` asks it every 2 s until paused), as HTML: the
    latest coup, round or match as the API shows it to the user now (a card face down is a
    back until its showdown)."""
    with console.client(session) as client:
        name, shown = await _table_of(client, request)
        lives: Mapping[str, GameLive] = request.app.state.game_live
        live = lives.get(shown.game)
        if live is not None:
            context = await live(client, plain(shown))
        else:
            try:
                context = _coup_live((await _recalled(client, name, "", size=1))["coups"])
            except grpc.RpcError as exc:
                refused = _evidence_broken(exc)
                if refused is None:
                    raise
                context = {**_coup_live([]), "refused": refused}
    template = console.templates.get_template(context["live_template"])
    return HTMLResponse(template.render(**context))


def mine_in_steps(account: str, steps: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``account`` had a step (a stake, a movement, a stake carried over to the coup:
    its ``stake.player``) among a coup's recalled steps, as the read models' search counts them
    and as the recall shows them to the user (a player reads other players' accounts blank)."""
    def names(d: Mapping[str, Any]) -> bool:
        stake = d.get("stake")
        carried = stake.get("player") if isinstance(stake, Mapping) else None
        return account in (d.get("account_id"), d.get("player"), carried)

    return any(names(json.loads(s.get("data_json") or "{}")) for s in steps)


async def _recalled(client: Client, table_name: str, page: str, size: int = 10
                    ) -> dict[str, Any]:
    found = await run_in_threadpool(client.recall.ListRecalledCoups,
                                    events_pb2.ListRecalledCoupsRequest(
                                        parent=table_name, page_size=size, page_token=page))
    return {"coups": [plain(c) for c in found.coups], "next": found.next_page_token}


@signed_in
async def table_live(request: Request, console: Console, session: Session) -> Response:
    """The table's latest coup as JSON, for the live view's polling (paused by the page)."""
    with console.client(session) as client:
        name, shown = await _table_of(client, request)
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
        steps, refused = await _coup_steps_or_refusal(client, table_name, name)
    return _page(console, request, "coup.html", session, coup=plain(shown), shoe=plain(shoe),
                 steps=steps, mine=session.account, refused=refused)


async def _coup_steps_or_refusal(client: Client, table_name: str, coup_name: str
                                 ) -> tuple[list[dict[str, Any]], str | None]:
    """The coup's recorded steps, or none and the ledger's refusal when the evidence chain
    does not cover what the store holds (the page shows it failing)."""
    try:
        return await _coup_steps(client, table_name, coup_name), None
    except grpc.RpcError as exc:
        refused = _evidence_broken(exc)
        if refused is None:
            raise
        return [], refused


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
    the API gives nothing before), the coup's cards, each recorded card event (its card, its
    shoe position and its log position, as the recall reads it from the store), and where the
    caller may read them the latest signed checkpoint and the inclusion proofs of the coup's
    events. The page computes every verdict itself."""
    name = request.path_params["name"]
    table_name = "/".join(name.split("/")[:2])
    with console.client(session) as client:
        shown = plain(await run_in_threadpool(client.tables.GetCoup,
                                              table_pb2.GetCoupRequest(name=name)))
        shoe = plain(await run_in_threadpool(client.tables.GetShoe, table_pb2.GetShoeRequest(
            name="/".join(name.split("/")[:4]))))
        steps, refused = await _coup_steps_or_refusal(client, table_name, name)
        evidence = await _evidence(client, [int(s["position"]) for s in steps],
                                   [shoe["name"]], [name.rsplit("/", 1)[-1]])
    return JSONResponse({
        "shoe": {k: shoe.get(k) for k in ("name", "algorithm", "deck_kind", "decks",
                                           "commitment", "cut_position", "seed",
                                           "order_digest", "closed")},
        "shoe_id": shoe["name"].rsplit("/", 1)[-1],
        "cards": shown.get("cards", []),
        "dealt": [{"event": int(st["position"]), "position": int(st["data"].get("position", 0)),
                   "card": str(st["data"].get("code", ""))}
                  for st in steps if str(st.get("type", "")).endswith(":Coup.CardDealt")],
        "evidence": evidence,
        "refused": refused,
        "checkpoint_public_key": console.checkpoint_public_key,
    })


async def _evidence(client: Client, positions: list[int], shoes: Sequence[str] = (),
                    originators: Sequence[str] = ()) -> dict[str, Any] | None:
    """The latest signed checkpoint and an inclusion proof per position under it (None: the
    caller's role may not read them, or nothing is signed yet). ``shoes``: the shoes whose
    canonical export (``ExportEvents``, SABOT-EXPORT-1) holds the events: each proof then
    carries its event's stored bytes (the canonical content the Merkle log hashes into the
    leaf), and the checkpoint is the export's anchor, so the browser computes each leaf from
    the event itself; without shoes (no shoe dealt yet) the notary's leaf hash is given, as
    the notary recorded it. ``originators``: aggregates (a
    coup) every event of which in the export is given too, whether the page shows it or not
    (a recall refused shows none)."""
    try:
        cp = await run_in_threadpool(client.regulator.GetLatestCheckpoint,
                                     regulator_pb2.GetLatestCheckpointRequest())
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.NOT_FOUND,
                          grpc.StatusCode.FAILED_PRECONDITION):
            return None
        raise
    position: int | None = cp.position if cp.HasField("position") else None
    checkpoint = {"origin": cp.origin, "size": cp.tree_size, "root": cp.root_hash.hex(),
                  "position": position,
                  "coup": cp.coup_id or None, "key_id": cp.key_id,
                  "signature": cp.signature.hex()}
    if shoes and (positions or originators):
        try:
            return await _exported(client, positions, shoes, originators)
        except grpc.RpcError as exc:
            if exc.code() is not grpc.StatusCode.PERMISSION_DENIED:
                raise
            return {"checkpoint": checkpoint, "proofs": None, "unproven": UNPROVEN}
    signed = [p for p in positions if position is not None and p <= position]
    if positions and not signed:
        return {"checkpoint": checkpoint,
                "proofs": [{"position": p, "after_checkpoint": True} for p in positions]}
    try:
        found = await _proofs(client, signed, cp.tree_size)
    except grpc.RpcError as exc:
        if exc.code() is grpc.StatusCode.PERMISSION_DENIED:
            return {"checkpoint": checkpoint, "proofs": None, "unproven": UNPROVEN}
        raise
    proofs: list[dict[str, Any]] = [
        found.get(p, {"position": p, "after_checkpoint": True}) for p in positions]
    return {"checkpoint": checkpoint, "proofs": proofs}


UNPROVEN = ("the inclusion of the coup's events in the signed log is the regulator's to check "
            "(their inclusion proofs are the regulator's to read): not checked here")


async def _exported(client: Client, positions: list[int], shoes: Sequence[str],
                    originators: Sequence[str] = ()) -> dict[str, Any]:
    """The events at ``positions`` as the regulator's export of ``shoes`` gives them: each
    with its leaf's bytes (the canonical JSON of its stored content, ``null`` when the event
    is gone from the store), the notary's leaf hash, its leaf index and its inclusion proof
    in the export's anchor, the checkpoint the server signs for the export."""
    def read() -> list[str]:
        request = regulator_pb2.ExportEventsRequest(shoes=list(dict.fromkeys(shoes)),
                                                    proof_in_each_event=True)
        return [line for answer in client.regulator.ExportEvents(request)
                for line in answer.lines]

    wanted, of = set(positions), set(originators)
    records: dict[int, dict[str, Any]] = {}
    anchor_size, checkpoints = -1, {}
    for line in await run_in_threadpool(read):
        record = json.loads(line)
        kind = record.get("kind")
        if kind == "header":
            anchor_size = int(record.get("anchor", -1))
        elif kind == "event" and (record.get("position") in wanted or (
                of and (record.get("event") or {}).get("originator_id") in of)):
            records[int(record["position"])] = record
        elif kind == "checkpoint":
            checkpoints[int(record["size"])] = record
    anchor = checkpoints.get(anchor_size)
    if anchor is None:
        raise ValueError("the export names no anchor checkpoint")
    checkpoint = {k: anchor.get(k) for k in ("origin", "size", "root", "position", "coup",
                                             "key_id", "signature")}
    proofs: list[dict[str, Any]] = []
    for p in sorted(wanted | set(records)):
        rec = records.get(p)
        if rec is None:
            after = anchor.get("position") is not None and p > int(anchor["position"])
            proofs.append({"position": p, "after_checkpoint": True} if after else
                          {"position": p, "leaf": None, "unexported": True})
            continue
        event = rec.get("event")
        proofs.append({"position": p, "leaf_index": rec["index"], "tree_size": anchor["size"],
                       "leaf": canonical_json(event, strict=False).decode("utf-8")
                       if event is not None else None,
                       "notarised": rec["leaf_hash"], "path": rec["proof"]})
    return {"checkpoint": checkpoint, "proofs": proofs, "bound": True}


PROOFS_AT_ONCE = 8  # inclusion proofs asked at the same time (a match has hundreds of events)


async def _proofs(client: Client, positions: list[int], size: int) -> dict[int, dict[str, Any]]:
    """The inclusion proof of each position in the tree of ``size`` leaves: the first alone
    (a role that may not read them is refused once), then ``PROOFS_AT_ONCE`` at a time."""
    gate = asyncio.Semaphore(PROOFS_AT_ONCE)

    async def one(position: int) -> dict[str, Any]:
        async with gate:
            p = await run_in_threadpool(client.regulator.GetInclusionProof,
                                        regulator_pb2.GetInclusionProofRequest(
                                            position=position, tree_size=size))
        return {"position": position, "leaf_index": p.leaf_index,
                "leaf_hash": p.leaf_hash.hex(), "tree_size": p.tree_size,
                "root": p.root_hash.hex(), "path": [h.hex() for h in p.hashes]}

    if not positions:
        return {}
    first = await one(positions[0])
    rest = await asyncio.gather(*(one(p) for p in positions[1:]))
    return {q["position"]: q for q in (first, *rest)}


# --- The back office (issue 24, item 6): the floor's gaming day as tables with totals and a
# chart, its CSV, statements and reconciliation. Routes: BACK_OFFICE_ROUTES. ---

DAY_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
UNIT_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # a cause
LAYOUTS = {"floor": reports_pb2.GAMING_DAY_LAYOUT_FLOOR,
           "chances": reports_pb2.GAMING_DAY_LAYOUT_CHANCES}


def _decimal_minor(text: str, currency: str) -> str:
    """A decimal amount of minor units as text (e.g. "1234.56") in major units with the
    currency; "" when the API gives none."""
    if not text:
        return ""
    try:
        value = Decimal(text)
    except InvalidOperation:
        return text
    digits = minor_unit(currency)
    if digits is None:
        return f"{text} minor {currency}".strip()
    major = value.scaleb(-digits).quantize(Decimal(1).scaleb(-digits))
    return f"{major} {currency}"


def _floor_view(row: reports_pb2.FloorRow) -> dict[str, Any]:
    c = row.currency_code
    return {"game": row.game, "table": row.table.split("/", 1)[-1] if row.table else "",
            "shift": row.shift or "day", "units": row.units,
            "handle": format_minor(row.handle_minor, c),
            "house_win": format_minor(row.house_win_minor, c),
            "hold": f"{row.hold_percent} %" if row.hold_percent else "",
            "edge": row.edge, "theoretical": _decimal_minor(row.theoretical_win, c),
            "low": _decimal_minor(row.interval_low, c),
            "high": _decimal_minor(row.interval_high, c),
            "flag": row.flag, "reconciled": row.reconciled, "currency": c}


def _chart(report: reports_pb2.GamingDayReport, width: int = 640) -> dict[str, Any]:
    """Per table's whole day (shift 0): the theoretical win's 95 % interval as a bar, the
    theoretical win as a tick, the actual win as a dot (marked when outside the interval), on
    one scale of major units that takes in every mark and zero; coordinates computed here so
    the page needs no script and no inline style."""
    rows: list[dict[str, Any]] = []
    for section in report.sections:
        for r in section.rows:
            if r.shift != 0 or not r.table:
                continue
            digits = minor_unit(r.currency_code) or 0
            scale = Decimal(1).scaleb(-digits)

            def major(text: str, scale: Decimal = scale) -> Decimal | None:
                try:
                    return (Decimal(text) * scale).quantize(scale) if text else None
                except InvalidOperation:
                    return None

            rows.append({"table": r.table.split("/", 1)[-1], "game": section.game,
                         "currency": r.currency_code,
                         "win": (Decimal(r.house_win_minor) * scale).quantize(scale),
                         "theo": major(r.theoretical_win), "low": major(r.interval_low),
                         "high": major(r.interval_high), "outside": r.flag == "OUTSIDE_95"})
    values = [Decimal(0)] + [v for r in rows for v in (r["win"], r["theo"], r["low"], r["high"])
                             if v is not None]
    lo, hi = min(values), max(values)
    span = (hi - lo) or Decimal(1)
    left, plot, row_h = 170, width - 190, 32

    def x(v: Decimal) -> int:
        return left + int((v - lo) / span * plot)

    for i, mark in enumerate(rows):
        mark["y"] = 20 + i * row_h
        mark["x_win"] = x(mark["win"])
        mark["x_theo"] = x(mark["theo"]) if mark["theo"] is not None else None
        if mark["low"] is not None and mark["high"] is not None:
            mark["x_low"], mark["x_high"] = x(mark["low"]), x(mark["high"])
            mark["bar_width"] = max(mark["x_high"] - mark["x_low"], 2)
        else:
            mark["x_low"] = None
    return {"rows": rows, "width": width, "height": 50 + len(rows) * row_h, "x_zero": x(
        Decimal(0)), "axis_y": 24 + len(rows) * row_h, "low": lo, "high": hi,
        "left": left, "right": left + plot}


async def _gaming_day(
        client: Client, day: str,
        fmt: reports_pb2.ExportFormat.ValueType = reports_pb2.EXPORT_FORMAT_UNSPECIFIED,
        layout: reports_pb2.GamingDayLayout.ValueType = reports_pb2.GAMING_DAY_LAYOUT_FLOOR
) -> reports_pb2.GamingDayReport:
    found: reports_pb2.GamingDayReport = await run_in_threadpool(
        client.read_models.GetGamingDayReport,
        reports_pb2.GetGamingDayReportRequest(gaming_day=day, format=fmt, layout=layout))
    return found


def _bad_day(console: Console, request: Request, session: Session, day: str) -> Response | None:
    if DAY_RE.fullmatch(day):
        return None
    return _page(console, request, "refused.html", session, status=400,
                 code="INVALID_ARGUMENT", message="the day is YYYY-MM-DD")


@signed_in
async def day_report(request: Request, console: Console, session: Session) -> Response:
    """The floor's gaming day: a section per game (tables and shifts), the totals per game and
    across games, the cage, the chart of the win against the theoretical win."""
    day = request.query_params.get("day", "")
    if not day:
        return _page(console, request, "day.html", session, day=day, report=None)
    refused = _bad_day(console, request, session, day)
    if refused is not None:
        return refused
    with console.client(session) as client:
        found = await _gaming_day(client, day)
    sections = [{"game": s.game, "title": s.title, "unit_name": s.unit_name,
                 "rows": [_floor_view(r) for r in s.rows],
                 "totals": [_floor_view(r) for r in s.totals]} for s in found.sections]
    cage = [{"cage": c.cage, "deposits": format_minor(c.deposits_minor, c.currency_code),
             "withdrawals": format_minor(c.withdrawals_minor, c.currency_code)}
            for c in found.cage]
    return _page(console, request, "day.html", session, day=day, report=found,
                 sections=sections, floor_totals=[_floor_view(r) for r in found.floor_totals],
                 cage=cage, chart=_chart(found))


def _download(body: bytes, media_type: str, filename: str) -> Response:
    return Response(body, media_type=media_type or "text/csv",
                    headers={"Content-Disposition": f'attachment; filename="{filename}"'})


@signed_in
async def day_report_csv(request: Request, console: Console, session: Session) -> Response:
    """The API's own CSV export of the day (layout floor, or chances: Trente et Quarante's by
    chance), byte for byte, as a download."""
    day = request.query_params.get("day", "")
    name = request.query_params.get("layout", "floor")
    refused = _bad_day(console, request, session, day)
    if refused is not None:
        return refused
    if name not in LAYOUTS:
        return _page(console, request, "refused.html", session, status=400,
                     code="INVALID_ARGUMENT", message="the layout is floor or chances")
    with console.client(session) as client:
        found = await _gaming_day(client, day, reports_pb2.EXPORT_FORMAT_CSV, LAYOUTS[name])
    return _download(found.export, found.export_media_type,
                     f"sabot-gaming-day-{day}-{name}.csv")


def _statement_request(
        request: Request, session: Session,
        fmt: reports_pb2.ExportFormat.ValueType = reports_pb2.EXPORT_FORMAT_UNSPECIFIED,
) -> reports_pb2.GetPlayerStatementRequest | None:
    account = request.query_params.get("account", "").strip() or session.account
    if not account:
        return None
    if not account.startswith("accounts/"):
        account = f"accounts/{account}"
    return reports_pb2.GetPlayerStatementRequest(
        account=account, page_size=100, format=fmt,
        page_token=request.query_params.get("page", ""))


@signed_in
async def statement(request: Request, console: Console, session: Session) -> Response:
    """An account's statement (the back office and the cashier any account, a player its own:
    the API decides), a page of 100 entries."""
    asked = _statement_request(request, session)
    if asked is None:
        return _page(console, request, "statement.html", session, account="", found=None)
    with console.client(session) as client:
        found: reports_pb2.PlayerStatement = await run_in_threadpool(
            client.read_models.GetPlayerStatement, asked)
    c = found.currency_code
    lines = [{"number": ln.number, "time": ln.time.ToDatetime().isoformat(" ", "seconds")
              if ln.HasField("time") else "", "kind": ln.kind, "cause": ln.cause,
              "found": bool(UNIT_ID.fullmatch(ln.cause)) and not ln.kind.startswith("cash"),
              "counter": ln.counter_account, "amount": format_minor(ln.amount_minor, c),
              "balance": format_minor(ln.balance_after_minor, c)} for ln in found.lines]
    return _page(console, request, "statement.html", session,
                 account=asked.account.split("/", 1)[1], found=found, lines=lines,
                 page=asked.page_token,
                 opening=format_minor(found.opening_balance_minor, c),
                 closing=format_minor(found.closing_balance_minor, c),
                 now=format_minor(found.balance_now_minor, c))


@signed_in
async def statement_csv(request: Request, console: Console, session: Session) -> Response:
    asked = _statement_request(request, session, reports_pb2.EXPORT_FORMAT_CSV)
    if asked is None:
        return _page(console, request, "refused.html", session, status=400,
                     code="INVALID_ARGUMENT", message="which account?")
    with console.client(session) as client:
        found: reports_pb2.PlayerStatement = await run_in_threadpool(
            client.read_models.GetPlayerStatement, asked)
    account = re.sub(r"[^A-Za-z0-9_.:-]", "_", asked.account.split("/", 1)[1])
    return _download(found.export, found.export_media_type, f"sabot-statement-{account}.csv")


def _money_of(m: common_pb2.Money) -> str:
    return format_minor(m.amount_minor, m.currency_code)


@signed_in
async def reconciliation(request: Request, console: Console, session: Session) -> Response:
    """Every account's balance in the read model against the write side's, and for each
    Treinta y Una and Cuarenta table its reconciliation by gaming day (the day asked, or every
    day)."""
    day = request.query_params.get("day", "")
    if day:
        refused = _bad_day(console, request, session, day)
        if refused is not None:
            return refused
    games: list[dict[str, Any]] = []
    with console.client(session) as client:
        balances: reports_pb2.ReconcileResponse = await run_in_threadpool(
            client.read_models.Reconcile, reports_pb2.ReconcileRequest())
        listed = await run_in_threadpool(client.tables.ListTables,
                                         table_pb2.ListTablesRequest(page_size=200))
        for t in listed.tables:
            if t.game == "treinta-y-una":
                tyu = await run_in_threadpool(
                    client.treinta_y_una.GetReconciliation,
                    tyu_pb2.GetReconciliationRequest(table=t.name, gaming_day=day))
                games.append({"table": t.name, "game": t.game, "balanced": tyu.balanced,
                              "unit": "rounds", "days": [
                                  {"day": d.gaming_day, "units": d.rounds,
                                   "stakes": _money_of(d.stakes),
                                   "commission": _money_of(d.commission),
                                   "players_net": _money_of(d.players_net),
                                   "balanced": d.balanced} for d in tyu.days]})
            elif t.game == "cuarenta":
                cua = await run_in_threadpool(
                    client.cuarenta.GetReconciliation,
                    cuarenta_pb2.GetReconciliationRequest(table=t.name, gaming_day=day))
                games.append({"table": t.name, "game": t.game, "balanced": cua.balanced,
                              "unit": "matches", "days": [
                                  {"day": d.gaming_day, "units": d.matches,
                                   "stakes": _money_of(d.stakes),
                                   "commission": _money_of(d.commission),
                                   "players_net": _money_of(d.players_net),
                                   "balanced": d.balanced} for d in cua.days]})
    differences = [{"account": d.account_id,
                    "read": format_minor(d.read_model_minor, d.currency_code)
                    if d.HasField("read_model_minor") else "missing",
                    "write": format_minor(d.write_side_minor, d.currency_code)
                    if d.HasField("write_side_minor") else "missing"}
                   for d in balances.differences]
    return _page(console, request, "reconcile.html", session, day=day, balances=balances,
                 differences=differences, games=games)


BACK_OFFICE_ROUTES = [
    Route("/reports/day", day_report),
    Route("/reports/day.csv", day_report_csv),
    Route("/statements", statement),
    Route("/statements.csv", statement_csv),
    Route("/reconciliation", reconciliation),
]


def build(console: Console, game_routes: Sequence[tuple[str, Handler_]] = (),
          game_pages: Mapping[str, GamePage] | None = None,
          game_live: Mapping[str, GameLive] | None = None) -> Starlette:
    """The console's app; ``game_routes``, ``game_pages`` and ``game_live``: the games' own
    pages and live views (the composition hands them in, so this module names no game)."""
    routes = [
        Route("/signin", signin_page, methods=["GET"]),
        Route("/signin", signin, methods=["POST"]),
        Route("/signout", signout, methods=["POST"]),
        Route("/", home),
        Route("/tables", tables),
        Route("/tables/{table}", table),
        Route("/api/tables/{table}", table_live),
        Route("/live/{table}", table_now),
        Route("/coup/{name:path}", coup),
        Route("/api/coup/{name:path}", coup_facts),
        *BACK_OFFICE_ROUTES,
        # Treinta y Una's rounds and Cuarenta's matches (services/web/games.py)
        *(Route(path, endpoint) for path, endpoint in game_routes),
        Mount("/static", app=StaticFiles(directory=HERE / "static"), name="static"),
    ]
    extra = dict(HEADERS)
    if console.secure:
        extra["Strict-Transport-Security"] = "max-age=31536000"
    app = Starlette(routes=routes, middleware=[Middleware(SecurityHeaders, headers=extra)])
    app.state.console = console
    app.state.game_pages = dict(game_pages or {})
    app.state.game_live = dict(game_live or {})
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

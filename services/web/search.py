"""Find a coup, a round or a match across the three games (issue 24, item 1): by table, shoe,
id, player, time range or log position, a page at a time; and a player's own ("Yours").

Each game is asked with the user's own token, through what the API lets that role see:

- Trente et Quarante's coups: ``RecallCoups`` (the back office and the regulator: every filter
  on the server); for the other roles (and a shoe or coup named by its bare id, which
  RecallCoups cannot take) the tables' recall (``ListRecalledCoups``, newest first) read back
  ``SCAN_PAGES`` pages of ``SCAN_SIZE`` coups per table at most and filtered here, on what the
  recall shows that user (a player reads other players' accounts blank, so it finds its own);
- Treinta y Una's rounds and Cuarenta's matches: ``ListRounds``/``ListMatches`` with their
  filters (player, time range, log position, newest first; ``tables/-`` for every table); a
  round's or match's bare id is looked up at each table of its game; a shoe is matched here.

A page is a cursor of the console's own (the API's page token, how far into its page): what a
filter here drops never shifts the next page."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import grpc
from google.protobuf.timestamp_pb2 import Timestamp
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from services.api.client import Client
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as tyu_pb2
from services.api.gen.sabot.v1 import events_pb2, reports_pb2, table_pb2
from services.web.app import Console, _money, _page, mine_in_steps, plain, signed_in
from services.web.sessions import Session

TRENTE, TREINTA, CUARENTA = "trente-et-quarante", "treinta-y-una", "cuarenta"
GAMES = {TRENTE: "coups", TREINTA: "rounds", CUARENTA: "matches"}
TITLES = {TRENTE: "Trente et Quarante: coups", TREINTA: "Treinta y Una: rounds",
          CUARENTA: "Cuarenta: matches"}
PAGE = 20  # results a page, per game
SCAN_SIZE = 50  # an API page read for a filter applied here
SCAN_PAGES = 20  # ... and at most this many of them per table and search
ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
NAME = re.compile(r"tables/[a-z0-9][a-z0-9-]{0,63}(/[a-z]+/[0-9a-f-]{36})+")
Item = dict[str, Any]


@dataclass(frozen=True)
class Query:
    """What the user asked (every field optional; all given must match)."""

    game: str = ""
    table: str = ""  # a table id
    shoe: str = ""  # tables/{t}/shoes/{s}, or a shoe's bare id
    ident: str = ""  # a coup's, round's or match's name, or its bare id
    player: str = ""  # an account id
    since: datetime | None = None
    until: datetime | None = None
    position: int = 0
    size: int = PAGE  # results a page, per game

    @property
    def asked(self) -> bool:
        return any((self.table, self.shoe, self.ident, self.player, self.since, self.until,
                    self.position, self.game))

    def games(self) -> list[str]:
        return [self.game] if self.game else list(GAMES)

    def fields(self) -> dict[str, str]:
        """The query as the form's fields (for the page and its links)."""
        return {"game": self.game, "table": self.table, "shoe": self.shoe, "id": self.ident,
                "player": self.player, "from": _local(self.since), "to": _local(self.until),
                "position": str(self.position or ""),
                "size": str(self.size) if self.size != PAGE else ""}


class Refused(ValueError):
    """A field the user gave cannot be searched: its name and why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


def _local(at: datetime | None) -> str:
    return at.strftime("%Y-%m-%dT%H:%M") if at else ""


def _time(field: str, text: str) -> datetime | None:
    if not text:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError:
        raise Refused(field, "a time is YYYY-MM-DDTHH:MM (UTC)") from None
    return at.replace(tzinfo=UTC) if at.tzinfo is None else at.astimezone(UTC)


def parse(params: Mapping[str, str]) -> Query:
    """The query of a search's URL (Refused: a field that cannot be searched)."""
    get = {k: str(params.get(k, "")).strip() for k in
           ("game", "table", "shoe", "id", "player", "from", "to", "position", "size")}
    if get["game"] and get["game"] not in GAMES:
        raise Refused("game", "one of " + ", ".join(GAMES))
    table = get["table"].removeprefix("tables/")
    if table and not ID.fullmatch(table):
        raise Refused("table", "a table id: [a-z0-9-]")
    player = get["player"].removeprefix("accounts/")
    if player and not ID.fullmatch(player):
        raise Refused("player", "an account id: [a-z0-9-]")
    for field in ("shoe", "id"):
        value = get[field]
        if value and not (UUID.fullmatch(value) or NAME.fullmatch(value)):
            raise Refused(field, "a name as the console shows it (tables/…) or a bare id")
    if NAME.fullmatch(get["shoe"]) and "/shoes/" not in get["shoe"]:
        raise Refused("shoe", "tables/{table}/shoes/{shoe}")
    position = get["position"]
    if position and (not position.isdigit() or int(position) < 1 or len(position) > 18):
        raise Refused("position", "a log position: a whole number from 1")
    since, until = _time("from", get["from"]), _time("to", get["to"])
    if since and until and until <= since:
        raise Refused("to", "must be after from")
    size = get["size"]
    if size and not (size.isdigit() and 1 <= int(size) <= 100):
        raise Refused("size", "results a page: 1 to 100")
    return Query(get["game"], table, get["shoe"], get["id"], player, since, until,
                 int(position or 0), int(size or PAGE))


# --- paging: a cursor over the API's pages, with a filter applied here ---------------------

Fetch = Callable[[str], Awaitable[tuple[list[Any], str]]]  # an API page: items, next token
Keep = Callable[[Any], Awaitable[bool]]


def _cursor(state: dict[str, Any] | None) -> str:
    if state is None:
        return ""
    return base64.urlsafe_b64encode(json.dumps(state, separators=(",", ":")).encode()).decode()


def _uncursor(text: str) -> dict[str, Any]:
    if not text:
        return {"s": 0, "t": "", "k": 0, "n": 0}
    try:
        state = json.loads(base64.urlsafe_b64decode(text.encode()))
        if not (isinstance(state, dict) and isinstance(state.get("s"), int)
                and isinstance(state.get("t"), str) and isinstance(state.get("k"), int)):
            raise ValueError(text)
        return state
    except ValueError:
        raise Refused("page", "not a page this console gave") from None


async def scan(sources: list[Fetch], keep: Keep, page: str, want: int = PAGE,
               limit: int = SCAN_PAGES) -> tuple[list[Any], str, bool]:
    """Up to ``want`` items that ``keep`` keeps, from the sources in turn, each read a page at
    a time (at most ``limit`` pages each) from where ``page`` left off: (items, the next
    page's cursor or "", whether a source was left unread past its limit)."""
    state = _uncursor(page)
    found: list[Any] = []
    cut = False
    s, token, skip, pages = state["s"], state["t"], state["k"], int(state.get("n", 0))
    while s < len(sources):
        if pages >= limit:
            cut, s, token, skip, pages = True, s + 1, "", 0, 0
            continue
        items, after = await sources[s](token)
        for k in range(skip, len(items)):
            if len(found) == want:
                return found, _cursor({"s": s, "t": token, "k": k, "n": pages}), cut
            if await keep(items[k]):
                found.append(items[k])
        pages += 1
        if after:
            token, skip = after, 0
        else:
            s, token, skip, pages = s + 1, "", 0, 0
    return found, "", cut


async def _always(_: Any) -> bool:
    return True


def _stamp(at: datetime | None) -> Timestamp | None:
    if at is None:
        return None
    stamp = Timestamp()
    stamp.FromDatetime(at)
    return stamp


def _when(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _in_time(q: Query, at: datetime | None) -> bool:
    if q.since is None and q.until is None:
        return True
    return at is not None and (q.since is None or at >= q.since) and (
        q.until is None or at < q.until)


async def _call(fn: Callable[..., Any], request: Any) -> Any:
    return await run_in_threadpool(fn, request)


async def _plays(client: Client, q: Query, game: str) -> bool:
    """Whether the query's table (if it names one) plays ``game``: no section of another game
    is asked of it."""
    if not q.table:
        return True
    try:
        found = await _call(client.tables.GetTable, table_pb2.GetTableRequest(
            name=f"tables/{q.table}"))
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT):
            return False
        raise
    return (found.game or TRENTE) == game


async def _tables(client: Client, q: Query, game: str) -> list[str]:
    """The tables of ``game`` the query names (the one given, else every one listed)."""
    if q.table:
        return [f"tables/{q.table}"] if await _plays(client, q, game) else []
    names: list[str] = []
    token = ""
    for _ in range(50):
        found = await _call(client.tables.ListTables,
                            table_pb2.ListTablesRequest(page_size=1000, page_token=token))
        names += [t.name for t in found.tables if (t.game or TRENTE) == game]
        token = found.next_page_token
        if not token:
            break
    return names


def _shoe_of(name: str) -> str:
    """tables/{t}/shoes/{s} of a coup's name."""
    return "/".join(name.split("/")[:4])


def _matches_id(q: Query, name: str) -> bool:
    return not q.ident or q.ident in (name, name.rsplit("/", 1)[-1])


def _matches_shoe(q: Query, shoe: str) -> bool:
    return not q.shoe or q.shoe in (shoe, shoe.rsplit("/", 1)[-1])


# --- the games ------------------------------------------------------------------------------

@dataclass
class Section:
    game: str
    items: list[Item]
    next_page: str = ""
    notes: tuple[str, ...] = ()

    @property
    def title(self) -> str:
        return TITLES[self.game]


def _coup_item(name: str, number: Any, opened: str | None, phase: str, result: str,
               announcement: str, mine: bool) -> Item:
    return {"game": TRENTE, "kind": "coup", "name": name, "table": name.split("/")[1],
            "number": number, "opened": (opened or "")[:19].replace("T", " "), "phase": phase,
            "summary": " · ".join(x for x in (result, announcement) if x), "mine": mine,
            "href": f"/coup/{name}"}


def _recall_request(q: Query) -> reports_pb2.RecallCoupsRequest | None:
    """RecallCoups's request for the query (None: a filter it cannot take, a bare id)."""
    if (q.shoe and not NAME.fullmatch(q.shoe)) or (q.ident and not NAME.fullmatch(q.ident)):
        return None
    request = reports_pb2.RecallCoupsRequest(
        table=f"tables/{q.table}" if q.table else "", shoe=q.shoe, coup=q.ident,
        player=f"accounts/{q.player}" if q.player else "", position=q.position,
        page_size=q.size)
    for field, at in (("start_time", q.since), ("end_time", q.until)):
        stamp = _stamp(at)
        if stamp is not None:
            getattr(request, field).CopyFrom(stamp)
    return request


async def find_coups(client: Client, session: Session, q: Query, page: str) -> Section:
    if q.ident and NAME.fullmatch(q.ident) and "/coups/" not in q.ident:
        return Section(TRENTE, [])  # the id names a round or a match
    if not await _plays(client, q, TRENTE):
        return Section(TRENTE, [])
    asked = _recall_request(q)
    if asked is not None and not page.startswith("scan:"):
        asked.page_token = page
        try:
            found = await _call(client.read_models.RecallCoups, asked)
        except grpc.RpcError as exc:
            if exc.code() is not grpc.StatusCode.PERMISSION_DENIED:
                return Section(TRENTE, [], notes=(f"{exc.code().name}: {exc.details()}",))
        else:
            return Section(TRENTE, [
                _coup_item(c.coup, c.number, c.open_time.ToJsonString() if c.HasField(
                    "open_time") else "", c.phase, c.result, c.announcement,
                    bool(session.account) and any(s.account_id == session.account
                                                  for s in c.steps))
                for c in found.coups], found.next_page_token)
    return await _scan_coups(client, session, q, page.removeprefix("scan:"))


async def _scan_coups(client: Client, session: Session, q: Query, page: str) -> Section:
    """The tables' recall read back and filtered here (see the module)."""
    tables = await _tables(client, q, TRENTE)

    def source(table: str) -> Fetch:
        async def fetch(token: str) -> tuple[list[Any], str]:
            found = await _call(client.recall.ListRecalledCoups,
                                events_pb2.ListRecalledCoupsRequest(
                                    parent=table, page_size=SCAN_SIZE, page_token=token))
            return [plain(c) for c in found.coups], found.next_page_token
        return fetch

    async def keep(c: Item) -> bool:
        name = c["coup"]["name"]
        steps = c.get("steps", [])
        return (_matches_id(q, name) and _matches_shoe(q, _shoe_of(name))
                and _in_time(q, _when(c["coup"].get("create_time")))
                and (not q.position or any(int(s.get("position", 0)) == q.position
                                           for s in steps))
                and (not q.player or mine_in_steps(q.player, steps)))

    try:
        coups, after, cut = await scan([source(t) for t in tables], keep, page, q.size)
    except grpc.RpcError as exc:
        return Section(TRENTE, [], notes=(f"{exc.code().name}: {exc.details()}",))
    notes = (f"read from each table's recall, its last {SCAN_PAGES * SCAN_SIZE} coups at "
             "most" + (" (some tables have older coups, not read)" if cut else ""),)
    return Section(TRENTE, [
        _coup_item(c["coup"]["name"], c["coup"].get("number"), c["coup"].get("create_time"),
                   c["coup"].get("phase", ""), c["coup"].get("result", ""),
                   c["coup"].get("announcement", ""),
                   bool(session.account) and mine_in_steps(session.account, c.get("steps", [])))
        for c in coups], f"scan:{after}" if after else "", notes)


def _seated(session: Session, seats: list[str]) -> bool:
    return bool(session.account) and (f"accounts/{session.account}" in seats
                                      or session.account in seats)


def _round_item(session: Session, r: Item) -> Item:
    banker = str(r.get("banker", "")).rsplit("/", 1)[-1] or "a player"
    return {"game": TREINTA, "kind": "round", "name": r["name"], "table": r["name"].split("/")[1],
            "number": r.get("number"), "opened": "", "phase": r.get("phase", ""),
            "summary": f"banker {banker}, bank {_money(r.get('bank', {}))}",
            "mine": _seated(session, r.get("seats", [])), "href": f"/round/{r['name']}"}


def _match_item(session: Session, m: Item) -> Item:
    points = m.get("points", [0, 0]) or [0, 0]
    won = (f", side {m.get('winner', 0)} won ({m.get('end_reason', '')})"
           if m.get("phase") == "over" else "")
    return {"game": CUARENTA, "kind": "match", "name": m["name"], "table": m["name"].split("/")[1],
            "number": m["name"].rsplit("/", 1)[-1][:8], "opened": "", "phase": m.get("phase", ""),
            "summary": f"{'–'.join(str(p) for p in points)}{won}",
            "mine": _seated(session, m.get("seats", [])), "href": f"/match/{m['name']}"}


@dataclass(frozen=True)
class UnitGame:
    """Treinta y Una's or Cuarenta's calls: its list RPC, its get RPC, the collection's name
    in a unit's name (rounds, matches), how a unit is shown, and its shoes (a round's one, a
    match's every hand's)."""

    game: str
    collection: str
    list_rpc: Callable[[Client], Any]
    list_request: Any  # the request class (ListRoundsRequest, ListMatchesRequest)
    answer_items: str  # the answer's repeated field
    get: Callable[[Client, str], Any]
    item: Callable[[Session, Item], Item]
    shoes: Callable[[Client, Item], Awaitable[set[str]]]


async def _round_shoes(client: Client, r: Item) -> set[str]:
    return {str(r.get("shoe", ""))}


async def _match_shoes(client: Client, m: Item) -> set[str]:
    moves = await _call(client.cuarenta.ListMoves, cuarenta_pb2.ListMovesRequest(match=m["name"]))
    return {mv.shoe for mv in moves.moves if mv.shoe}


ROUNDS = UnitGame(TREINTA, "rounds", lambda c: c.treinta_y_una.ListRounds,
                  tyu_pb2.ListRoundsRequest, "rounds",
                  lambda c, n: c.treinta_y_una.GetRound(tyu_pb2.GetRoundRequest(name=n)),
                  _round_item, _round_shoes)
MATCHES = UnitGame(CUARENTA, "matches", lambda c: c.cuarenta.ListMatches,
                   cuarenta_pb2.ListMatchesRequest, "matches",
                   lambda c, n: c.cuarenta.GetMatch(cuarenta_pb2.GetMatchRequest(name=n)),
                   _match_item, _match_shoes)


async def _by_id(client: Client, g: UnitGame, q: Query) -> list[Item]:
    """The unit the query's id names: its name, or its bare id at each table of the game."""
    if NAME.fullmatch(q.ident):
        if f"/{g.collection}/" not in q.ident or (
                q.table and q.ident.split("/")[1] != q.table):
            return []
        names = [q.ident]
    else:
        names = [f"{t}/{g.collection}/{q.ident}" for t in await _tables(client, q, g.game)]
    for name in names:
        try:
            return [plain(await run_in_threadpool(g.get, client, name))]
        except grpc.RpcError as exc:
            if exc.code() not in (grpc.StatusCode.NOT_FOUND, grpc.StatusCode.INVALID_ARGUMENT):
                raise
    return []


async def find_units(g: UnitGame, client: Client, session: Session, q: Query,
                     page: str) -> Section:
    try:
        if not await _plays(client, q, g.game):
            return Section(g.game, [])
        if q.ident and not (q.player or q.since or q.until or q.position):
            items = await _by_id(client, g, q)  # by its name, or its id at each table
            shown = [x for x in items if not q.shoe or q.shoe in {
                s2 for s in await g.shoes(client, x) for s2 in (s, s.rsplit("/", 1)[-1])}]
            return Section(g.game, [g.item(session, x) for x in shown])
        asked = g.list_request(parent=f"tables/{q.table}" if q.table else "tables/-",
                               player=f"accounts/{q.player}" if q.player else "",
                               position=q.position, newest_first=True, page_size=SCAN_SIZE)
        for field, at in (("start_time", q.since), ("end_time", q.until)):
            stamp = _stamp(at)
            if stamp is not None:
                getattr(asked, field).CopyFrom(stamp)

        async def fetch(token: str) -> tuple[list[Any], str]:
            request = g.list_request()
            request.CopyFrom(asked)
            request.page_token = token
            found = await _call(g.list_rpc(client), request)
            return [plain(x) for x in getattr(found, g.answer_items)], found.next_page_token

        async def keep(x: Item) -> bool:
            return _matches_id(q, x["name"]) and (
                not q.shoe or any(_matches_shoe(q, s) for s in await g.shoes(client, x)))

        items, after, cut = await scan([fetch], keep if q.shoe or q.ident else _always, page,
                                       q.size)
    except grpc.RpcError as exc:
        if exc.code() in (grpc.StatusCode.PERMISSION_DENIED, grpc.StatusCode.INVALID_ARGUMENT,
                          grpc.StatusCode.NOT_FOUND):
            return Section(g.game, [], notes=(f"{exc.code().name}: {exc.details()}",))
        raise
    notes = ((f"a shoe or an id with other filters is matched here: {SCAN_PAGES * SCAN_SIZE} "
              f"{g.collection} read at most" + (" (older ones not read)" if cut else ""),)
             if q.shoe or q.ident else ())
    return Section(g.game, [g.item(session, x) for x in items], after, notes)


FINDERS: dict[str, Callable[[Client, Session, Query, str], Awaitable[Section]]] = {
    TRENTE: find_coups,
    TREINTA: lambda c, s, q, p: find_units(ROUNDS, c, s, q, p),
    CUARENTA: lambda c, s, q, p: find_units(MATCHES, c, s, q, p),
}


async def sections(client: Client, session: Session, q: Query,
                   page: str = "") -> AsyncIterator[Section]:
    for game in q.games():
        yield await FINDERS[game](client, session, q, page if q.game == game else "")


async def _results(console: Console, request: Request, session: Session, q: Query,
                   template_args: dict[str, Any]) -> Response:
    page = request.query_params.get("page", "")
    with console.client(session) as client:
        found = [s async for s in sections(client, session, q, page)] if q.asked else []
    for s in found:
        if s.next_page:
            s.next_page = "?" + "&".join(
                f"{k}={_quote(v)}" for k, v in {**q.fields(), "game": s.game,
                                                "page": s.next_page}.items() if v)
    return _page(console, request, "search.html", session, query=q.fields(), sections=found,
                 games=GAMES, titles=TITLES, **template_args)


def _quote(text: str) -> str:
    from urllib.parse import quote

    return quote(text, safe="")


def _refused(console: Console, request: Request, session: Session, refused: Refused,
             mine_page: bool) -> Response:
    return _page(console, request, "search.html", session, status=400,
                 query=dict(request.query_params), sections=[], games=GAMES, titles=TITLES,
                 error=str(refused), mine_page=mine_page)


@signed_in
async def search(request: Request, console: Console, session: Session) -> Response:
    """The search form and, once asked, a section of results per game."""
    try:
        return await _results(console, request, session, parse(request.query_params),
                              {"mine_page": False})
    except Refused as refused:
        return _refused(console, request, session, refused, False)


@signed_in
async def mine(request: Request, console: Console, session: Session) -> Response:
    """A player's own coups, rounds and matches (the account given at sign-in; the API
    decides what that token may read). Other roles: the search."""
    if not session.account:
        return RedirectResponse("/search", status_code=303)
    try:
        q = replace(parse(request.query_params), player=session.account)
        return await _results(console, request, session, q, {"mine_page": True})
    except Refused as refused:
        return _refused(console, request, session, refused, True)


ROUTES = (
    ("/search", search),
    ("/mine", mine),
)

"""The console's Treinta y Una and Cuarenta pages: a table's rounds or matches, a round's or a
match's replay in RECALL MODE, and the facts the in-browser check reads (``gamecheck.js``).

Every fact is the API's answer to the signed-in user's own token, shown as given: a face-down
card is shown once the record shows it (the API gives its face to nobody else before), a seed
once its shoe is closed; the console computes no verdict and adds no secret."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import grpc
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from services.api.client import Client, Replay
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2 as tyu_pb2
from services.api.gen.sabot.v1 import table_pb2
from services.web.app import Console, _evidence, _page, plain, signed_in
from services.web.sessions import Session

TREINTA_Y_UNA = "treinta-y-una"
CUARENTA = "cuarenta"
GAMES = (TREINTA_Y_UNA, CUARENTA)
SHOE_FIELDS = ("name", "algorithm", "deck_kind", "decks", "commitment", "cut_position", "seed",
               "order_digest", "closed")


async def game_table(request: Request, console: Console, session: Session,
                     table: dict[str, Any]) -> Response:
    """A Treinta y Una table's rounds or a Cuarenta table's matches, a page at a time."""
    page = request.query_params.get("page", "")
    with console.client(session) as client:
        if table.get("game") == TREINTA_Y_UNA:
            rounds = await run_in_threadpool(client.rounds.list, table["name"], 20, page)
            items, next_page = [plain(r) for r in rounds.rounds], rounds.next_page_token
        else:
            matches = await run_in_threadpool(client.matches.list, table["name"], 20, page)
            items, next_page = [plain(m) for m in matches.matches], matches.next_page_token
        live = await game_live(client, table)
    mine = f"accounts/{session.account}" if session.account else ""
    for item in items:
        seats = item.get("seats", [])
        item["mine"] = bool(mine) and (mine in seats or session.account in seats)
    return _page(console, request, "game_table.html", session, table=table, items=items,
                 next_page=next_page, **live)


async def game_live(client: Client, table: dict[str, Any]) -> dict[str, Any]:
    """The live view of a Treinta y Una or Cuarenta table: its latest round (each hand's cards
    as the API shows them to the caller: a face-down card is a back until its showdown), or its
    latest match (each seat's hand as backs, the table's cards, the score)."""
    if table.get("game") == TREINTA_Y_UNA:
        try:
            latest: dict[str, Any] | None = plain(await run_in_threadpool(
                client.treinta_y_una.GetLatestRound,
                tyu_pb2.GetLatestRoundRequest(parent=table["name"])))
        except grpc.RpcError as exc:
            if exc.code() is not grpc.StatusCode.NOT_FOUND:
                raise
            latest = None
        return {"live_template": "_live_round.html", "live_unit": "round", "round": latest,
                "red_suits": "OC"}
    found = await run_in_threadpool(client.cuarenta.ListMatches, cuarenta_pb2.ListMatchesRequest(
        parent=table["name"], newest_first=True, page_size=1))
    return {"live_template": "_live_match.html", "live_unit": "match",
            "match": plain(found.matches[0]) if found.matches else None, "red_suits": "HD"}


def _steps(raw: Any) -> list[dict[str, Any]]:
    steps = [plain(s) for s in raw]
    for s in steps:
        s["data"] = json.loads(s.get("data_json") or "{}")
        s["kind"] = str(s.get("event", "")).rsplit(".", 1)[-1]
    return steps


def _who(name: str) -> str:
    return name.rsplit("/", 1)[-1] if name else "a player"


def round_frames(shown: dict[str, Any], steps: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each hand as it grew, step by step, from the recorded steps alone: a card dealt face
    down is a back until a step shows it; the hands are told apart by their cards' positions
    (a player reads other players' names blank)."""
    owner: dict[int, int] = {}
    hands = shown.get("hands", [])
    for i, hand in enumerate(hands):
        for card in hand.get("cards", []):
            owner[int(card.get("position", 0))] = i
    held: dict[int, list[dict[str, Any]]] = {i: [] for i in range(len(hands))}
    frames: list[dict[str, Any]] = []
    for s in steps:
        d = s["data"]
        changed: int | None = None
        if s["kind"] in ("CardDealt", "CardDrawn"):
            position = int(d.get("position", 0))
            changed = owner.get(position)
            if changed is None:
                continue
            held[changed].append({"position": position, "face_down": s["kind"] == "CardDealt",
                                  "code": d.get("code") or ""})
        elif s["kind"] == "HandShown":
            faces = {int(c.get("position", 0)): str(c.get("code", ""))
                     for c in d.get("shown", [])}
            for position, code in faces.items():
                changed = owner.get(position, changed)
                for card in held.get(owner.get(position, -1), []):
                    if card["position"] == position:
                        card["code"] = code
        if changed is None:
            continue
        frames.append({"version": s.get("version"), "kind": s["kind"],
                       "player": _who(str(hands[changed].get("player", ""))),
                       "cards": [dict(c) for c in held[changed]]})
    return frames


@signed_in
async def round_page(request: Request, console: Console, session: Session) -> Response:
    name = request.path_params["name"]
    with console.client(session) as client:
        recall = await run_in_threadpool(client.rounds.recall, name)
    shown, steps = plain(recall.round), _steps(recall.steps)
    moved = [s["data"] for s in steps if s["kind"] == "MoneyMoved"]
    opened: dict[str, Any] = next((s["data"] for s in steps if s["kind"] == "Opened"), {})
    currency = str(opened.get("currency", ""))
    return _page(console, request, "round.html", session, round=shown, steps=steps,
                 frames=round_frames(shown, steps), moved=moved, currency=currency,
                 bank_put_up=int(opened.get("bank", 0) or 0),
                 red_suits="OC",
                 table_name="/".join(name.split("/")[:2]))


async def _shoe(client: Client, name: str) -> dict[str, Any]:
    shoe = plain(await run_in_threadpool(client.tables.GetShoe,
                                         table_pb2.GetShoeRequest(name=name)))
    facts = {k: shoe.get(k) for k in SHOE_FIELDS}
    facts["shoe_id"] = name.rsplit("/", 1)[-1]
    return facts


@signed_in
async def round_facts(request: Request, console: Console, session: Session) -> Response:
    """What the check needs for a round: its shoe (the seed only once the round is over and
    the shoe closed), the commitment the round published, every card the record shows at its
    position, each face-down card's SABOT-HIDDEN-1 commitment with, once shown, its salt, and
    the banker's lot as recorded (its nonce, the seats, the index drawn) when it drew one."""
    name = request.path_params["name"]
    with console.client(session) as client:
        recall = await run_in_threadpool(client.rounds.recall, name)
        shoe = await _shoe(client, recall.round.shoe)
        evidence = await _replayed_evidence(client, client.rounds.replay, name,
                                            [recall.round.shoe])
    shown, steps = plain(recall.round), _steps(recall.steps)
    salts = {int(c.get("position", 0)): str(c.get("salt", "")) for s in steps
             if s["kind"] == "HandShown" for c in s["data"].get("shown", [])}
    cards: list[dict[str, Any]] = []
    hidden: list[dict[str, Any]] = []
    for hand in shown.get("hands", []):
        who = _who(str(hand.get("player", "")))
        for card in hand.get("cards", []):
            position = int(card.get("position", 0))
            if card.get("code"):
                cards.append({"position": position, "card": card["code"], "where": who})
            if card.get("face_down"):
                hidden.append({"position": position, "card": card.get("code", ""),
                               "commitment": card.get("commitment", ""),
                               "salt": salts.get(position, ""), "where": who})
    lot = next((s["data"].get("lot") for s in steps if s["kind"] == "Opened"), None)
    return JSONResponse({"kind": "round", "name": name, "shoes": [{
        **shoe, "published": shown.get("commitment", ""), "label": f"round {shown.get('number')}",
        "cards": cards, "hidden": hidden, "unplaced": [],
        "lot": {**lot, "banker": _who(str(shown.get("banker", "")))} if lot else None}],
        "evidence": evidence, "checkpoint_public_key": console.checkpoint_public_key})


def match_rows(moves: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The moves in order, each with the cards on the table after it and both sides' points."""
    table: list[str] = []
    points = [0, 0]
    for mv in moves:
        kind = mv.get("kind", "")
        if kind == "hand_begun":
            table = []
        elif kind == "played":
            table.append(str(mv.get("card", "")))
        elif kind == "captured":
            gone = set(mv.get("taken", [])) | {str(mv.get("card", ""))}
            table = [c for c in table if c not in gone]
        elif kind == "hand_scored":
            table = []
        if kind in ("captured", "ronda"):  # the side's points after it (0 is left unsaid)
            points[int(mv.get("side", 0))] = int(mv.get("total", 0))
        totals = mv.get("totals", [])
        if len(totals) == 2:
            points = [int(totals[0]), int(totals[1])]
        mv["table_after"] = list(table)
        mv["points_after"] = list(points)
    return moves


@signed_in
async def match_page(request: Request, console: Console, session: Session) -> Response:
    name = request.path_params["name"]
    with console.client(session) as client:
        shown = plain(await run_in_threadpool(client.matches.get, name))
        moves = [plain(m) for m in await run_in_threadpool(client.matches.moves, name)]
    return _page(console, request, "match.html", session, match=shown,
                 moves=match_rows(moves), red_suits="HD",
                 money=[m for m in moves if m.get("kind") == "money"],
                 table_name="/".join(name.split("/")[:2]))


@signed_in
async def match_facts(request: Request, console: Console, session: Session) -> Response:
    """What the check needs for a match: each hand's shoe (its seed once closed), the
    commitment the hand published before its deal, and every card played at its position;
    the cards dealt but never played are counted (their faces are in no record). The export
    of the hands' shoes holds every event of the match (its ranges, widened to whole batches
    of the evidence chain, run from the command that opened the match and shuffled the first
    hand's shoe to the one that closed the last and paid the stakes): each event's stored
    bytes come with its proof, for the page to compare every move it shows with them."""
    name = request.path_params["name"]
    with console.client(session) as client:
        moves = [plain(m) for m in await run_in_threadpool(client.matches.moves, name)]
        hands: list[dict[str, Any]] = []
        for mv in moves:
            kind = mv.get("kind", "")
            if kind == "hand_begun":
                hands.append({**await _shoe(client, str(mv.get("shoe", ""))),
                              "published": mv.get("commitment", ""),
                              "label": f"hand {mv.get('hand', 0)}", "cards": [], "hidden": [],
                              "dealt": 0})
            elif hands and kind == "dealt":
                hands[-1]["dealt"] += sum(int(n) for n in mv.get("cards", []))
            elif hands and kind == "played":
                hands[-1]["cards"].append({
                    "position": int(mv.get("position", 0)), "card": mv.get("card", ""),
                    "where": f"move {mv.get('number')}, seat {mv.get('seat', 0)}"})
        evidence = await _replayed_evidence(client, client.matches.replay, name,
                                            [str(h["name"]) for h in hands])
    for hand in hands:
        unplayed = hand.pop("dealt") - len(hand["cards"])
        hand["unplaced"] = ([f"{unplayed} cards dealt in {hand['label']} were never played: "
                             "their faces are in no record, so they are not compared"]
                            if unplayed > 0 else [])
    return JSONResponse({"kind": "match", "name": name, "shoes": hands, "evidence": evidence,
                         "checkpoint_public_key": console.checkpoint_public_key})


async def _replayed_evidence(client: Client, replay: Callable[[str], Replay],
                             name: str, shoes: Sequence[str] = ()) -> dict[str, Any] | None:
    """The latest signed checkpoint and the inclusion proofs of the events of a round or match
    (their log positions from the regulator's replay: a recall carries none), each with its
    event's stored bytes when ``shoes`` (a round's own shoe, a match's hands' shoes) delimit
    its events. A role that may
    not replay but may read the checkpoint (the back office) gets the checkpoint alone, its
    signature to check: the inclusion proofs are the regulator's (GetInclusionProof), and so
    are the events' positions; None for a role that may read neither."""
    try:
        replayed = await run_in_threadpool(replay, name)
    except grpc.RpcError as exc:
        if exc.code() is not grpc.StatusCode.PERMISSION_DENIED:
            raise
        signed = await _evidence(client, [])
        if signed is not None:
            signed["proofs"] = None
            signed["unproven"] = (
                "the inclusion of its events in the signed log is the regulator's to check "
                "(their inclusion proofs and their log positions are the regulator's to read): "
                "not checked here")
        return signed
    positions = sorted({s.position for s in replayed.steps if s.HasField("position")})
    return await _evidence(client, positions, shoes)


ROUTES = (
    ("/round/{name:path}", round_page),
    ("/api/round/{name:path}", round_facts),
    ("/match/{name:path}", match_page),
    ("/api/match/{name:path}", match_facts),
)

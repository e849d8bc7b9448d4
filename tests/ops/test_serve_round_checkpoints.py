"""Issue 21's acceptance for the notary, as an operator runs it: ``sabot serve`` (its ledger
process, its notary from the checkpoint key) playing Treinta y Una and Cuarenta alone (no Trente
et Quarante coup at all) for ``SECONDS`` through the gRPC API, on SQLite and PostgreSQL; then a
signed checkpoint is counted after every round and every match: one each, naming it, in the
order they ended, each signed by the site's checkpoint key and ending at its round's last event.

``SABOT_ROUND_CHECKPOINT_SECONDS`` sets how long the games are played (default 4 s, at least one
round and one match whatever the load; the issue's acceptance run is 60 s). The players' tokens
are the credentials file's (a player reads its own hand only)."""

from __future__ import annotations

import hashlib
import os
import secrets
import time
from pathlib import Path

from services.api.client import Client
from services.regulator.checkpoint import verify_checkpoint
from services.regulator.notary import Notary
from services.regulator.source import Database, EventTable

from .support import ADMIN_TOKEN, Keys, Served, clean_env

SECONDS = float(os.environ.get("SABOT_ROUND_CHECKPOINT_SECONDS", "4"))
TYU_PLAYERS = ("ana", "beto", "caro")
CU_PLAYERS = ("eva", "fede")


def _credentials(folder: Path) -> tuple[Path, dict[str, str]]:
    """A credentials file naming each player (bound to its account): its path and the tokens."""
    tokens = {p: secrets.token_hex(32) for p in (*TYU_PLAYERS, *CU_PLAYERS)}
    path = folder / "credentials.toml"
    path.write_text("".join(
        f'[[credential]]\nid = "k-{secrets.token_hex(4)}"\nprincipal = "{p}"\nrole = "player"\n'
        f'sha256 = "{hashlib.sha256(t.encode()).hexdigest()}"\n'
        f"issued = 2026-12-01T08:00:00Z\n\n" for p, t in tokens.items()))
    return path, tokens


def _fund(admin: Client, account: str) -> None:
    from services.api.gen.sabot.v1 import cashier_pb2, common_pb2

    admin.cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
        request_id=f"open-{account}", account_id=account, currency_code="EUR"))
    admin.cashier.Deposit(cashier_pb2.DepositRequest(
        request_id=f"fund-{account}", name=f"accounts/{account}",
        amount=common_pb2.Money(amount_minor=10**8, currency_code="EUR")))


def _round(admin: Client, own: dict[str, Client], table: str) -> str:
    """A Treinta y Una round played to its settlement: its id."""
    r = admin.rounds.open_round(table, list(TYU_PLAYERS), 20_000, "EUR")
    for p in TYU_PLAYERS:
        if p != r.banker.removeprefix("accounts/"):
            r = own[p].rounds.place_stake(r.name, p, 1_000, "EUR")
    r = admin.rounds.deal(r.name)
    while r.phase == "playing":
        who = r.whose_turn.removeprefix("accounts/")
        me = own[who].rounds
        r = me.carta(r.name, who) if me.my_hand(r.name, who).total < 21 else me.me_planto(
            r.name, who)
    assert admin.rounds.settle(r.name).phase == "settled"
    return r.name.rsplit("/", 1)[1]


def _match(admin: Client, own: dict[str, Client], table: str) -> str:
    """A Cuarenta match played to its end: its id."""
    m = admin.matches.open(table, list(CU_PLAYERS), 5_000, "EUR").match
    while m.phase != "over":
        if m.phase == "awaiting_deal":
            m = admin.matches.deal(m.name).match
            continue
        me = own[m.seats[m.to_act].removeprefix("accounts/")].matches
        legal = me.hand(m.name, m.to_act).legal
        best = max(legal, key=lambda p: (p.points, len(p.capture)))
        if not best.capture:
            best = min(legal, key=lambda p: (len(p.capture) > 0, p.card))
        m = me.play(m.name, m.to_act, best.card, list(best.capture),
                    leave_on_table=not best.capture).match
    return m.name.rsplit("/", 1)[1]


def _play(served: Served, tokens: dict[str, str]) -> tuple[list[str], int, int]:
    """The two games in turn for ``SECONDS`` (a round and a match at least): the ids of the
    rounds and matches in the order they ended, and how many of each."""
    admin = Client(served.target, served.admin_token(), timeout=60)
    own = {p: Client(served.target, t, timeout=60) for p, t in tokens.items()}
    try:
        for p in tokens:
            _fund(admin, p)
        tyu = admin.rounds.open_table("tyu-acceptance").name
        cu = admin.matches.open_table("cu-acceptance", overrides={"commission_rate": "5%"}).name
        ended: list[str] = []
        rounds = matches = 0
        until = time.monotonic() + SECONDS
        while not (rounds and matches) or time.monotonic() < until:
            ended.append(_round(admin, own, tyu))
            rounds += 1
            ended.append(_match(admin, own, cu))
            matches += 1
        return ended, rounds, matches
    finally:
        for client in (admin, *own.values()):
            client.close()


def test_sabot_serve_signs_a_checkpoint_after_every_round_and_match(
        store: str, tmp_path: Path) -> None:
    keys = Keys(tmp_path)
    credentials, tokens = _credentials(tmp_path)
    served = Served(store, keys, tmp_path,
                    env=clean_env(SABOT_CREDENTIALS=str(credentials)))
    try:
        served.wait_listening()
        assert served.admin_token() == ADMIN_TOKEN
        ended, rounds, matches = _play(served, tokens)
    finally:
        assert served.stop() == 0  # the notary's last sync: every round's end signed
    db = Database(store)
    try:
        events = list(EventTable(db).iterate())
        cps = Notary(db, EventTable(db), None, create=False).checkpoints()
    finally:
        db.close()
    public = bytes.fromhex(keys.checkpoint_public)
    by_round = [c for c in cps if c.coup is not None]
    assert rounds >= 1 and matches >= 1
    assert [c.coup for c in by_round] == ended  # one each, in the order they ended
    last_of = {e.originator_id: e.position for e in events}  # the aggregate's last event
    for cp in by_round:
        verify_checkpoint(cp, public)
        assert cp.coup is not None and cp.position == last_of[cp.coup]
    print(f"{SECONDS:.0f} s: {rounds} rounds, {matches} matches, {len(events)} events, "
          f"{len(by_round)} checkpoints naming them, {len(cps)} in all")

"""Every game for every role from the CLI alone (issue 22 item 1): a Treinta y Una round and a
Cuarenta match played with ``sabot round …`` and ``sabot match …``, the croupier and each player
with its own token, then replayed by the regulator (``sabot round|match replay``, ``sabot
regulator replay-round|replay-match``), against a real server on both stores (the ``api``
fixture, tests/conftest.py)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

import services.cli as cli
from tests.api.support import Api

MAX_PLAYS = 20  # then the side to play abandons (a whole match is ~150 CLI calls)


class Sabot:
    """``sabot`` as one caller of the ``api`` server (its token), in this process."""

    def __init__(self, api: Api, capsys: pytest.CaptureFixture[str]) -> None:
        self.api = api
        self.capsys = capsys

    def run(self, who: str, *argv: str) -> tuple[int, str, str]:
        token = self.api.tokens.get(who) or self.api.player_tokens[who]
        self.capsys.readouterr()
        try:
            code = cli.main([*argv, "--target", self.api.target, "--token", token])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out, err = self.capsys.readouterr()
        return code, out, err

    def json(self, who: str, *argv: str) -> Any:
        code, out, err = self.run(who, *argv, "--format", "json")
        assert code == 0, (argv, err)
        return json.loads(out)


def _table(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_a_treinta_y_una_round_from_the_cli(api: Api, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    s = Sabot(api, capsys)
    table = _table("tyu-cli")
    opened = s.json("croupier", "table", "open", table, "--game", "treinta-y-una")
    assert opened["name"] == f"tables/{table}"
    seats = ["anne", "bruno", "chiara"]
    r = s.json("croupier", "round", "open", table, *[f"--seat={p}" for p in seats],
               "--bank", "200.00")
    name, banker = r["name"], r["banker"]
    assert r["phase"] == "betting" and banker in seats
    code, _, err = s.run("anne", "round", "deal", name)  # a player may not deal
    assert code == 4 and err.startswith("sabot: error: PERMISSION_DENIED"), err
    for p in seats:
        if p != banker:
            r = s.json(p, "round", "stake", name, "--player", p, "--amount", "10.00")
    r = s.json("croupier", "round", "deal", name)
    assert r["phase"] == "playing"
    assert all(c["code"] == "" for h in r["hands"] for c in h["cards"])  # face down
    said = []
    while r["phase"] == "playing":
        who = r["whose_turn"]
        hand = s.json(who, "round", "hand", name, "--player", who)
        assert all(c["code"] for c in hand["cards"])  # its own faces, shown to it
        if hand["total"] < (25 if who == banker else 21):
            r = s.json(who, "round", "carta", name, "--player", who)
            said.append(f"{who}: carta")
        else:
            r = s.json(who, "round", "planto", name, "--player", who)
            said.append(f"{who}: me planto")
    assert said
    r = s.json("croupier", "round", "settle", name)
    assert r["phase"] == "settled" and r["results"]
    assert s.json("croupier", "round", "get", name)["phase"] == "settled"
    assert s.json("croupier", "round", "latest", table)["name"] == name
    listed = s.json("anne", "round", "list", table)
    assert [x["name"] for x in listed["rounds"]] == [name]
    recall = s.json("croupier", "round", "recall", name)
    assert recall["round"]["name"] == name and len(recall["steps"]) > 5
    code, out, err = s.run("croupier", "round", "watch", name, "--format", "json")
    assert code == 0, err
    events = [json.loads(line)["event"] for line in out.splitlines()]
    assert events[0].endswith("Opened") and events[-1].endswith("Settled")
    # the regulator replays it, online: every step identical
    code, out, err = s.run("regulator", "round", "replay", name, "--all", "-q")
    assert code == 0, err
    assert out.splitlines()[-1].startswith("verdict: identical")
    assert "≠" not in out
    code, out, err = s.run("regulator", "regulator", "replay-round", name, "-q",
                           "--format", "json")
    assert code == 0 and json.loads(out.splitlines()[-1])["identical"] is True, err
    code, _, err = s.run("anne", "round", "replay", name, "-q")  # a player may not
    assert code == 4 and "PERMISSION_DENIED" in err, err


def _best(legal: list[dict[str, Any]]) -> dict[str, Any]:
    best = max(legal, key=lambda p: (p["points"], len(p["capture"])))
    if not best["capture"]:
        best = min(legal, key=lambda p: (len(p["capture"]) > 0, p["card"]))
    return best


def test_a_cuarenta_match_from_the_cli(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    s = Sabot(api, capsys)
    table = _table("cu-cli")
    s.json("croupier", "table", "open", table, "--game", "cuarenta",
           "--option", "commission_rate=5%")
    seats = ["bruno", "chiara"]
    step = s.json("croupier", "match", "open", table, "--seat", seats[0], "--seat", seats[1],
                  "--stake", "10.00")
    m = step["match"]
    name = m["name"]
    assert m["phase"] == "awaiting_deal" and m["seats"] == [f"accounts/{p}" for p in seats]
    code, _, err = s.run("croupier", "match", "hand", name, "--seat", "0")  # not the croupier's
    assert code == 4 and "PERMISSION_DENIED" in err, err
    plays = 0
    while m["phase"] != "over":
        if m["phase"] == "awaiting_deal":
            m = s.json("croupier", "match", "deal", name)["match"]
            continue
        seat = m["to_act"]
        who = seats[seat % 2]
        if plays >= MAX_PLAYS:  # a long match: the side to play abandons it
            m = s.json(who, "match", "forfeit", name, "--seat", str(seat))["match"]
            break
        hand = s.json(who, "match", "hand", name, "--seat", str(seat))
        assert hand["to_act"] is True and hand["legal"]
        best = _best(hand["legal"])
        argv = ["match", "play", name, "--seat", str(seat), "--card", best["card"]]
        argv += [f"--capture={c}" for c in best["capture"]] or ["--leave"]
        m = s.json(who, *argv)["match"]
        plays += 1
    assert m["phase"] == "over" and m["winner"] in (0, 1), m
    assert s.json("croupier", "match", "get", name)["phase"] == "over"
    assert [x["name"] for x in s.json("bruno", "match", "list", table)["matches"]] == [name]
    moves = s.json("croupier", "match", "moves", name)["moves"]
    assert moves[0]["kind"] == "opened" and any(mv["kind"] == "won" for mv in moves)
    code, out, err = s.run("croupier", "match", "watch", name, "--format", "json")
    assert code == 0 and len(out.splitlines()) == len(moves), err
    code, out, err = s.run("regulator", "match", "replay", name, "-q")
    assert code == 0 and out.splitlines()[-1].startswith("verdict: identical"), (out, err)
    code, out, err = s.run("regulator", "regulator", "replay-match", name, "--all", "-q")
    assert code == 0 and "≠" not in out, out


def test_an_unknown_outcome_names_the_request_id_to_retry_with(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A call that may or may not have been done (here: no server) says the request id the CLI
    made, in its one error line; a given --request-id is not repeated."""
    argv = ["round", "deal", f"tables/t/rounds/{uuid.uuid4()}", "--target", "127.0.0.1:1",
            "--token", "x" * 40]
    assert cli.main(argv) == 5  # unavailable: retry
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "UNAVAILABLE" in err and "retry with --request-id" in err
    rid = err.rsplit("--request-id ", 1)[1].strip().rstrip(")")
    assert uuid.UUID(rid)
    assert cli.main([*argv, "--request-id", "mine-1"]) == 5
    assert "retry with" not in capsys.readouterr().err


def test_the_cuarenta_demo_with_an_admin_token_alone_opens_nothing(
        api: Api, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 22: ``sabot demo --game cuarenta`` with an admin token only opened a match, held
    the stakes and stopped at the first hand it could not see. It now says which tokens it
    needs and refuses before opening anything; given two player tokens it plays to the end."""
    from services.api.gen.sabot.v1 import table_pb2

    monkeypatch.delenv("SABOT_TOKENS", raising=False)
    monkeypatch.delenv("SABOT_CREDENTIALS", raising=False)
    s = Sabot(api, capsys)
    tables = api.as_("admin").tables

    def count() -> int:
        return len(tables.ListTables(table_pb2.ListTablesRequest(page_size=1000)).tables)

    before = count()
    code, out, err = s.run("admin", "demo", "--game", "cuarenta")
    assert code == 2 and err.count("\n") == 1 and "two player tokens" in err, err
    assert count() == before  # nothing opened, no money held
    monkeypatch.setenv("SABOT_TOKENS", f"{api.player_tokens['anne']}:player:anne,"
                                       f"{api.player_tokens['bruno']}:player:bruno")
    code, out, err = s.run("admin", "demo", "--game", "cuarenta")
    assert code == 0, err
    assert "wins the match" in out and count() == before + 1

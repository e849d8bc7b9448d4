"""RegulatorService against a real server on 127.0.0.1 whose notary signs at every coup end, and
whose ledger escrows every seed to the regulator, on both stores: a shoe played through the API
replays identical over gRPC; the latest checkpoint verifies with the operator's public key;
inclusion and consistency proofs fetched over gRPC verify with ``sabot_verify.proofs`` (forged
ones do not); the export over gRPC verifies with ``sabot-verify``; a shoe still in play is
replayed offline by the regulator from the escrowed seed with its own key (no seal key)."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pytest
import structlog
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from google.protobuf.timestamp_pb2 import Timestamp
from sabot_verify.__main__ import run as verify_export
from sabot_verify.proofs import Bad, check_checkpoint, check_consistency, check_inclusion

from services.api import logs, server
from services.api.client import Client, new_request_id
from services.api.config import Config, parse_tokens
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    regulator_pb2,
    regulator_pb2_grpc,
    table_pb2,
)
from services.bootstrap import LEDGER_GAMES, REGULATOR_GAMES, ROLE_TABLE, SERVED
from services.ledger.api import Ledger, LedgerConfig
from services.regulator.checkpoint import public_key_bytes
from services.regulator.replay import Replayer, verdict
from services.regulator.source import Database, EventTable
from tests.conftest import PG_HOST, PG_PORT, PG_USER

from .conftest import KEY, SEED, LogBuffer, _drop, _pg_database
from .support import Api, failure, fresh, money

CHECKPOINT_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32, 64)))
OPERATOR_PUBLIC = public_key_bytes(CHECKPOINT_KEY.public_key())
CHAIN_KEY = bytes([0x4E]) * 32  # the evidence chain's signing key, pinned by the verifier
CHAIN_PUBLIC = Ed25519PrivateKey.from_private_bytes(CHAIN_KEY).public_key().public_bytes_raw()
REGULATOR = X25519PrivateKey.from_private_bytes(b"\x17" * 32)
REGULATOR_PEM = REGULATOR.private_bytes(
    serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
)
PLAYERS = ("anne", "bruno", "chiara")
STAKES = {"anne": common_pb2.CHANCE_NOIR, "bruno": common_pb2.CHANCE_ROUGE,
          "chiara": common_pb2.CHANCE_COULEUR}
ROLES = ("croupier", "cashier", "back_office", "regulator", "admin")


class Authed:
    """A RegulatorService stub whose calls carry one bearer token."""

    def __init__(self, channel: grpc.Channel, token: str) -> None:
        self._stub = regulator_pb2_grpc.RegulatorServiceStub(channel)
        self._metadata = (("authorization", f"Bearer {token}"),)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._stub, name)

        def call(request: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("metadata", self._metadata)
            kwargs.setdefault("timeout", 60)
            return method(request, **kwargs)

        return call


@dataclass
class Scene:
    store: str
    url: str
    running: Any
    clients: dict[str, Client]
    table: str = ""
    shoe: str = ""  # closed
    coups: list[str] = field(default_factory=list)
    open_shoe: str = ""  # in play
    open_coups: list[str] = field(default_factory=list)

    def reg(self, role: str = "regulator") -> Authed:
        client = self.clients[role]
        assert client.token is not None
        return Authed(client.channel, client.token)


def _play_coup(scene: Scene, shoe: str) -> tuple[str, bool]:
    croupier = scene.clients["croupier"].tables
    coup = croupier.OpenCoup(table_pb2.OpenCoupRequest(request_id=new_request_id(), parent=shoe))
    for player, chance in STAKES.items():
        if any(s.account == f"accounts/{player}" for s in coup.layout):
            continue  # a prisoner of this player is still on the layout
        placed = scene.clients[player].betting.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account=f"accounts/{player}",
            chance=chance, amount=money(100 * (1 + coup.number_in_shoe % 7))))
        if player == "chiara" and coup.number_in_shoe % 3 == 0:
            scene.clients[player].betting.InsureStake(betting_pb2.InsureStakeRequest(
                request_id=new_request_id(), name=placed.stake.name, coup=coup.name))
    dealt = croupier.DealCoup(table_pb2.DealCoupRequest(request_id=new_request_id(),
                                                        name=coup.name))
    croupier.SettleCoup(table_pb2.SettleCoupRequest(request_id=new_request_id(), name=coup.name))
    return coup.name, dealt.cut_card_reached


def _play(scene: Scene) -> None:
    """A whole shoe, closed; then a new shoe with three coups, left in play."""
    croupier = scene.clients["croupier"].tables
    table = croupier.OpenTable(table_pb2.OpenTableRequest(
        request_id=new_request_id(), table_id=fresh("reg"), preset="italiana"))
    scene.table = table.name

    def new_shoe(cut: int) -> str:
        shoe = croupier.OpenShoe(table_pb2.OpenShoeRequest(request_id=new_request_id(),
                                                           parent=table.name))
        croupier.CutShoe(table_pb2.CutShoeRequest(request_id=new_request_id(), name=shoe.name,
                                                  cut_position=cut, cut_by="anne"))
        name: str = shoe.name
        return name

    scene.shoe = new_shoe(150)
    for _ in range(200):
        name, end = _play_coup(scene, scene.shoe)
        scene.coups.append(name)
        if end:
            break
    croupier.CloseShoe(table_pb2.CloseShoeRequest(request_id=new_request_id(), name=scene.shoe))
    scene.open_shoe = new_shoe(40)
    scene.open_coups = [_play_coup(scene, scene.open_shoe)[0] for _ in range(3)]


def _start(url: str, store: str) -> tuple[Any, dict[str, str]]:
    tokens = {r: f"tok-{r}-{uuid.uuid4().hex[:8]}" for r in ROLES}
    tokens.update({p: f"tok-player-{p}-{uuid.uuid4().hex[:8]}" for p in PLAYERS})
    spec = ",".join(f"{t}:{r}" if r in ROLES else f"{t}:player:{r}" for r, t in tokens.items())
    pub = REGULATOR.public_key().public_bytes_raw()
    ledger = Ledger(LedgerConfig(store_url=url, seal_key=KEY, new_seed=lambda: SEED,
                                 pool_size=6, regulator_key=pub, chain_key=CHAIN_KEY),
                    batching=True, games=LEDGER_GAMES)
    config = Config(listen="127.0.0.1:0", store=url, tokens=parse_tokens(spec), seal_key=KEY,
                    workers=8, checkpoint_key=CHECKPOINT_KEY.private_bytes_raw(),
                    regulator_key=pub)
    return server.start(config, ledger, games=SERVED), tokens


@pytest.fixture(
    scope="module",
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def scene(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
          ) -> Iterator[Scene]:
    database = None
    if request.param == "sqlite":
        url = f"sqlite:///{Path(tmp_path_factory.mktemp('regulator')) / 'sabot.db'}"
    else:
        database = _pg_database()
        url = f"postgresql://{PG_USER}@{PG_HOST}:{PG_PORT}/{database}"
    if not structlog.is_configured():  # alone, without the shared fixture's log buffer
        logs.configure(stream=LogBuffer())
    running, tokens = _start(url, request.param)
    target = f"127.0.0.1:{running.port}"
    clients = {who: Client(target, token) for who, token in tokens.items()}
    result = Scene(request.param, url, running, clients)
    try:
        for p in PLAYERS:
            clients["cashier"].cashier.OpenAccount(cashier_pb2.OpenAccountRequest(
                request_id=new_request_id(), account_id=p, currency_code="EUR"))
            clients["cashier"].cashier.Deposit(cashier_pb2.DepositRequest(
                request_id=new_request_id(), name=f"accounts/{p}", amount=money(10_000_000)))
        _play(result)
        yield result
    finally:
        for c in clients.values():
            c.close()
        running.stop(grace=1)
        assert running.notary is not None and not running.notary._thread.is_alive()
        if database:
            _drop(database)


def _replay(stub: Authed, method: str, name: str, **kw: Any
            ) -> tuple[list[regulator_pb2.ReplayStep], regulator_pb2.ReplayVerdict]:
    steps: list[regulator_pb2.ReplayStep] = []
    final = None
    for message in getattr(stub, method)(getattr(regulator_pb2, f"{method}Request")(
            name=name, **kw)):
        assert final is None, "the verdict is the last message"
        steps.extend(message.steps)
        if message.HasField("verdict"):
            final = message.verdict
    assert final is not None
    return steps, final


def _export(stub: Authed, **kw: Any) -> list[str]:
    lines: list[str] = []
    for message in stub.ExportEvents(regulator_pb2.ExportEventsRequest(**kw)):
        lines.extend(message.lines)
    return lines


def _verify(lines: list[str], **kw: Any) -> tuple[int, str]:
    import io

    out = io.StringIO()
    kw.setdefault("chain_keys", [CHAIN_PUBLIC])  # the operator's keys, pinned
    code = verify_export(lines, checkpoint_key=OPERATOR_PUBLIC, out=out, **kw)
    return code, out.getvalue()


def _flip(h: bytes) -> bytes:
    return bytes([h[0] ^ 1]) + h[1:]


# --- replays ------------------------------------------------------------------------------


def test_every_coup_replays_identical_over_grpc(scene: Scene) -> None:
    stub = scene.reg()
    steps, final = _replay(stub, "ReplayShoe", scene.shoe)
    assert final.identical and final.steps == len(steps) > 50 * len(scene.coups) // 10
    assert all(s.same for s in steps)
    whats = {s.what for s in steps}
    assert {"commitment", "card dealt", "outcome result"} <= whats
    for coup in scene.coups:
        steps, final = _replay(stub, "ReplayCoup", coup, differences_only=True)
        assert final.identical and final.steps > 10 and steps == [], coup
    # the coups of the shoe in play replay too (the server opens the operator's sealed seed)
    for coup in scene.open_coups:
        assert _replay(stub, "ReplayCoup", coup)[1].identical


def test_replay_errors_name_the_field(scene: Scene) -> None:
    stub = scene.reg()
    unknown = scene.coups[0].rsplit("/", 1)[0] + f"/{uuid.uuid4()}"
    for name, code in ((unknown, grpc.StatusCode.NOT_FOUND),
                       ("coups/x", grpc.StatusCode.INVALID_ARGUMENT),
                       ("", grpc.StatusCode.INVALID_ARGUMENT)):
        got, where, _ = failure(lambda n=name: list(stub.ReplayCoup(
            regulator_pb2.ReplayCoupRequest(name=n))))
        assert (got, where) == (code, "name"), name
    other_shoe = scene.shoe.rsplit("/", 1)[0] + f"/{uuid.uuid4()}"
    got, where, _ = failure(lambda: list(stub.ReplayShoe(
        regulator_pb2.ReplayShoeRequest(name=other_shoe))))
    assert (got, where) == (grpc.StatusCode.NOT_FOUND, "name")


# --- checkpoints and proofs ---------------------------------------------------------------


def _latest(stub: Authed, at_least: int = 1) -> regulator_pb2.Checkpoint:
    deadline = time.monotonic() + 10
    while True:
        cp: regulator_pb2.Checkpoint = stub.GetLatestCheckpoint(
            regulator_pb2.GetLatestCheckpointRequest())
        if cp.tree_size >= at_least or time.monotonic() > deadline:
            return cp
        time.sleep(0.1)


def _as_dict(cp: regulator_pb2.Checkpoint) -> dict[str, Any]:
    return {"origin": cp.origin, "size": cp.tree_size, "root": cp.root_hash.hex(),
            "position": cp.position if cp.HasField("position") else None,
            "coup": cp.coup_id or None, "key_id": cp.key_id, "signature": cp.signature.hex()}


def test_the_latest_checkpoint_verifies_with_the_operators_key(scene: Scene) -> None:
    cp = _latest(scene.reg())
    assert cp.tree_size > 0 and len(cp.root_hash) == 32
    check_checkpoint(_as_dict(cp), OPERATOR_PUBLIC)
    forged = _as_dict(cp)
    forged["size"] += 1
    with pytest.raises(Bad):
        check_checkpoint(forged, OPERATOR_PUBLIC)
    other = public_key_bytes(Ed25519PrivateKey.generate().public_key())
    with pytest.raises(Bad):
        check_checkpoint(_as_dict(cp), other)
    # the back office may read it too
    assert scene.reg("back_office").GetLatestCheckpoint(
        regulator_pb2.GetLatestCheckpointRequest()).tree_size >= cp.tree_size


def test_proofs_over_grpc_verify_and_forged_ones_fail(scene: Scene) -> None:
    stub = scene.reg()
    cp = _latest(stub)
    check_checkpoint(_as_dict(cp), OPERATOR_PUBLIC)
    lines = _export(stub, shoes=[scene.shoe])
    events = [json.loads(x) for x in lines if '"kind":"event"' in x]
    anchor = json.loads(lines[0])["anchor"]
    cp = _latest(stub, anchor)  # the export signed a checkpoint of the whole log
    for rec in (events[0], events[len(events) // 2], events[-1]):
        proof = stub.GetInclusionProof(regulator_pb2.GetInclusionProofRequest(
            position=rec["position"]))
        assert proof.tree_size == cp.tree_size and proof.root_hash == cp.root_hash
        assert proof.leaf_index == rec["index"] and proof.leaf_hash.hex() == rec["leaf_hash"]
        check_inclusion(proof.leaf_hash, proof.leaf_index, proof.tree_size, list(proof.hashes),
                        cp.root_hash)
        if proof.hashes:
            forged = [_flip(proof.hashes[0]), *proof.hashes[1:]]
            with pytest.raises(Bad):
                check_inclusion(proof.leaf_hash, proof.leaf_index, proof.tree_size, forged,
                                cp.root_hash)
        with pytest.raises(Bad):
            check_inclusion(_flip(proof.leaf_hash), proof.leaf_index, proof.tree_size,
                            list(proof.hashes), cp.root_hash)
    # consistency from every checkpoint of the export to the latest signed one
    sizes = [json.loads(x) for x in lines if '"kind":"checkpoint"' in x]
    assert len(sizes) >= len(scene.coups)  # a checkpoint at every coup end, and the anchor
    for old in (sizes[0], sizes[len(sizes) // 2]):
        check_checkpoint(old, OPERATOR_PUBLIC)
        c = stub.GetConsistencyProof(regulator_pb2.GetConsistencyProofRequest(
            first_size=old["size"]))
        assert c.second_size == cp.tree_size and c.second_root_hash == cp.root_hash
        assert c.first_root_hash.hex() == old["root"]
        check_consistency(c.first_size, c.second_size, bytes.fromhex(old["root"]),
                          cp.root_hash, list(c.hashes))
        with pytest.raises(Bad):
            check_consistency(c.first_size, c.second_size, bytes.fromhex(old["root"]),
                              cp.root_hash, [_flip(c.hashes[0]), *c.hashes[1:]])
        with pytest.raises(Bad):
            check_consistency(c.first_size, c.second_size, _flip(bytes.fromhex(old["root"])),
                              cp.root_hash, list(c.hashes))


def test_proof_arguments_are_checked(scene: Scene) -> None:
    stub = scene.reg()
    size = _latest(stub).tree_size
    inc, con = stub.GetInclusionProof, stub.GetConsistencyProof
    cases = [
        (inc, regulator_pb2.GetInclusionProofRequest(position=0), "INVALID_ARGUMENT", "position"),
        (inc, regulator_pb2.GetInclusionProofRequest(position=1, tree_size=-1),
         "INVALID_ARGUMENT", "tree_size"),
        (inc, regulator_pb2.GetInclusionProofRequest(position=1, tree_size=10**9),
         "INVALID_ARGUMENT", "tree_size"),
        (inc, regulator_pb2.GetInclusionProofRequest(position=10**9), "NOT_FOUND", "position"),
        (con, regulator_pb2.GetConsistencyProofRequest(first_size=0), "INVALID_ARGUMENT",
         "first_size"),
        (con, regulator_pb2.GetConsistencyProofRequest(first_size=size + 1, second_size=size),
         "INVALID_ARGUMENT", "first_size"),
        (con, regulator_pb2.GetConsistencyProofRequest(first_size=1, second_size=10**9),
         "INVALID_ARGUMENT", "second_size"),
    ]
    for call, req, code, where in cases:
        got, field_, _ = failure(call, req)
        assert (got.name, field_) == (code, where), req


# --- export -------------------------------------------------------------------------------


def test_export_over_grpc_verifies_with_sabot_verify(scene: Scene, tmp_path: Path) -> None:
    stub = scene.reg()
    lines = _export(stub, shoes=[scene.shoe])
    assert json.loads(lines[0])["kind"] == "header" and json.loads(lines[-1])["kind"] == "end"
    for line in lines[:20]:
        assert line == json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"),
                                  ensure_ascii=False)
    code, text = _verify(lines)
    assert code == 0, text
    assert text.count("OK   coup") == len(scene.coups)
    # the console script on a file, as a regulator runs it
    import subprocess
    import sys

    path = tmp_path / "export.jsonl"
    path.write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    beside = Path(sys.executable).parent / "sabot-verify"  # the venv's console script
    done = subprocess.run([str(beside) if beside.exists() else "sabot-verify", str(path),
                           "--checkpoint-public-key", OPERATOR_PUBLIC.hex(),
                           "--chain-public-key", CHAIN_PUBLIC.hex()],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "VERIFIED" in done.stdout, done.stdout + done.stderr
    # a time range covering the play exports the closed shoe whole, and verifies
    start, end = Timestamp(), Timestamp()
    start.FromSeconds(int(time.time()) - 3600)
    end.FromSeconds(int(time.time()) + 3600)
    ranged = _export(stub, start_time=start, end_time=end)
    assert json.loads(ranged[0])["selection"]["shoes"] == [scene.shoe.rsplit("/", 1)[1]]
    code, text = _verify(ranged)
    assert code == 0, text


def test_export_arguments_are_checked(scene: Scene) -> None:
    stub = scene.reg()
    start = Timestamp(seconds=100)
    cases = [
        ({"shoes": ["shoes/x"]}, "INVALID_ARGUMENT", "shoes[0]"),
        ({"shoes": [scene.shoe.rsplit("/", 1)[0] + f"/{uuid.uuid4()}"]}, "NOT_FOUND", "shoes[0]"),
        ({"shoes": [scene.shoe], "start_time": start}, "INVALID_ARGUMENT", "shoes"),
        ({"start_time": start, "end_time": start}, "INVALID_ARGUMENT", "end_time"),
    ]
    for kw, code, where in cases:
        got, field_, _ = failure(lambda k=kw: _export(stub, **k))
        assert (got.name, field_) == (code, where), kw


def test_a_shoe_in_play_is_replayed_offline_from_the_escrow(scene: Scene) -> None:
    stub = scene.reg()
    lines = _export(stub, shoes=[scene.open_shoe])
    code, text = _verify(lines)
    # no reveal yet, no regulator key: VERIFIED, the shoe pending (docs/export-format.md)
    assert code == 0 and "seed not revealed" in text and "1 shoe(s) pending" in text, text
    assert "PENDING shoe " in text and "OK   coup" not in text
    code, text = _verify(lines, regulator_key=REGULATOR_PEM)
    assert code == 0, text
    assert text.count("OK   coup") == len(scene.open_coups)
    # the regulator's own replay, from the store, with its key and without the seal key
    db = Database(scene.url)
    try:
        replayer = Replayer(EventTable(db), regulator_key=REGULATOR, games=REGULATOR_GAMES)
        shoe_id = scene.open_shoe.rsplit("/", 1)[1]
        v = verdict(replayer.shoe(shoe_id))
        assert v.identical and v.steps > 30, str(v)
    finally:
        db.close()


# --- roles --------------------------------------------------------------------------------

RPCS: dict[str, tuple[set[str], Any]] = {
    "ReplayCoup": ({"regulator", "admin"}, lambda s: regulator_pb2.ReplayCoupRequest(
        name=s.coups[0], differences_only=True)),
    "ReplayShoe": ({"regulator", "admin"}, lambda s: regulator_pb2.ReplayShoeRequest(
        name=s.open_shoe, differences_only=True)),
    "GetLatestCheckpoint": ({"regulator", "admin", "back_office"},
                            lambda s: regulator_pb2.GetLatestCheckpointRequest()),
    "GetInclusionProof": ({"regulator", "admin"},
                          lambda s: regulator_pb2.GetInclusionProofRequest(position=1)),
    "GetConsistencyProof": ({"regulator", "admin"},
                            lambda s: regulator_pb2.GetConsistencyProofRequest(first_size=1)),
    "ExportEvents": ({"regulator", "admin"}, lambda s: regulator_pb2.ExportEventsRequest(
        shoes=[s.open_shoe])),
    "ReplayRound": ({"regulator", "admin"}, lambda s: regulator_pb2.ReplayRoundRequest(
        name=_game_unit(s, "round"), differences_only=True)),
    "ReplayMatch": ({"regulator", "admin"}, lambda s: regulator_pb2.ReplayMatchRequest(
        name=_game_unit(s, "match"), differences_only=True)),
}

_UNITS: dict[tuple[str, str], str] = {}


def _game_unit(scene: Scene, kind: str) -> str:
    """A Treinta y Una round (``round``) or a Cuarenta match (``match``) open on the scene's
    server, made once (issue 22's replays: their roles)."""
    key = (scene.url, kind)
    if key not in _UNITS:
        admin = scene.clients["admin"]
        if kind == "round":
            table = admin.rounds.open_table(fresh("tyu-roles")).name
            _UNITS[key] = admin.rounds.open_round(table, PLAYERS[:2], 1_000).name
        else:
            table = admin.matches.open_table(fresh("cu-roles")).name
            _UNITS[key] = admin.matches.open(table, PLAYERS[:2], 100).match.name
    return _UNITS[key]


@pytest.mark.parametrize("method", list(RPCS))
def test_roles(scene: Scene, method: str) -> None:
    allowed, build = RPCS[method]
    for role in (*ROLES, "anne"):
        call = getattr(scene.reg(role), method)
        try:
            answer = call(build(scene))
            if not hasattr(answer, "ByteSize"):
                list(answer)
            code = grpc.StatusCode.OK
        except grpc.RpcError as exc:
            code = exc.code()
        if role in allowed:
            assert code is grpc.StatusCode.OK, (role, code)
        else:
            assert code is grpc.StatusCode.PERMISSION_DENIED, (role, code)


def test_every_regulator_rpc_is_in_the_roles_table() -> None:
    RPC_ROLES = ROLE_TABLE.rows  # the server's role table

    service = regulator_pb2.DESCRIPTOR.services_by_name["RegulatorService"]
    assert {f"/sabot.v1.RegulatorService/{m.name}" for m in service.methods} == {
        k for k in RPC_ROLES if k.startswith("/sabot.v1.RegulatorService/")}
    assert set(RPCS) == {m.name for m in service.methods}


# --- a server without a checkpoint key (the shared fixture) -------------------------------


def test_without_a_checkpoint_key_there_is_no_checkpoint(api: Api) -> None:
    client = api.as_("regulator")
    assert client.token is not None
    stub = Authed(client.channel, client.token)
    code, _, reason = failure(stub.GetLatestCheckpoint, regulator_pb2.GetLatestCheckpointRequest())
    assert code == grpc.StatusCode.FAILED_PRECONDITION and reason == "NO_CHECKPOINT"
    code, _, reason = failure(lambda: _export(stub))
    assert code == grpc.StatusCode.FAILED_PRECONDITION and reason == "NO_CHECKPOINT_KEY"
    assert api.running.notary is None


# --- the client commands ------------------------------------------------------------------


def test_client_commands(scene: Scene, tmp_path: Path, capsys: pytest.CaptureFixture[str]
                         ) -> None:
    from services.cli import main

    with logs.muted():  # the server's RPC lines stay off the captured output
        time.sleep(0.2)  # the log writer's last batch (it writes every 50 ms)
        capsys.readouterr()
        _client_commands(scene, tmp_path, capsys, main)


def _client_commands(scene: Scene, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                     main: Any) -> None:
    common = ["--target", f"127.0.0.1:{scene.running.port}",
              "--token", scene.clients["regulator"].token or ""]
    assert main(["regulator", "replay-coup", scene.coups[1], *common]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("verdict: identical")
    assert main(["regulator", "replay-shoe", scene.open_shoe, "--all", *common]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) > 30 and out[-1].startswith("verdict: identical")
    assert main(["regulator", "checkpoint", "--format", "json", *common]) == 0
    cp = json.loads(capsys.readouterr().out)
    check_checkpoint({"origin": cp["origin"], "size": int(cp["tree_size"]),
                      "root": cp["root_hash"], "position": int(cp["position"]),
                      "coup": cp["coup_id"] or None, "key_id": cp["key_id"],
                      "signature": cp["signature"]}, OPERATOR_PUBLIC)  # hashes in hex
    assert main(["regulator", "inclusion-proof", "--position", "3", "--format", "json",
                 *common]) == 0
    assert json.loads(capsys.readouterr().out)["position"] == "3"
    assert main(["regulator", "consistency-proof", "--first-size", "2", *common]) == 0
    assert "second_root_hash" in capsys.readouterr().out
    path = tmp_path / "cli-export.jsonl"
    assert main(["regulator", "export", "--shoe", scene.shoe, "-o", str(path), *common]) == 0
    code, text = _verify(path.read_text(encoding="utf-8").splitlines())
    assert code == 0, text
    assert main(["regulator", "export", "--since", "2026-01-01", *common]) == 2  # usage
    assert main(["regulator", "replay-coup", scene.coups[0] + "0", *common]) == 3  # refused
    assert "INVALID_ARGUMENT" in capsys.readouterr().err
    common[-1] = scene.clients["croupier"].token or ""
    assert main(["regulator", "checkpoint", *common]) == 4  # not permitted
    assert "PERMISSION_DENIED" in capsys.readouterr().err


# --- settings -----------------------------------------------------------------------------


def test_key_settings(tmp_path: Path) -> None:
    from services.api.config import ConfigError
    from services.settings import Settings

    pem = CHECKPOINT_KEY.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption())
    (tmp_path / "op.key").write_bytes(pem)
    reg_pub = REGULATOR.public_key().public_bytes_raw()
    (tmp_path / "reg.pub").write_text(reg_pub.hex() + "\n")
    raw = CHECKPOINT_KEY.private_bytes_raw()
    for checkpoint in (raw.hex(), str(tmp_path / "op.key")):
        for regulator in (reg_pub.hex(), str(tmp_path / "reg.pub")):
            cfg = Settings.load(env={"SABOT_CHECKPOINT_KEY": checkpoint,
                                     "SABOT_REGULATOR_KEY": regulator}, env_file=None)
            assert (cfg.checkpoint_key, cfg.regulator_public_key) == (raw, reg_pub)
    assert Settings.load(env={}, env_file=None).checkpoint_key is None
    (tmp_path / "x25519.key").write_bytes(REGULATOR_PEM)
    for name, value in (("SABOT_CHECKPOINT_KEY", "abc"), ("SABOT_CHECKPOINT_KEY", "00" * 31),
                        ("SABOT_CHECKPOINT_KEY", str(tmp_path / "x25519.key")),
                        ("SABOT_REGULATOR_KEY", "zz" * 32), ("SABOT_REGULATOR_KEY", "/nope")):
        with pytest.raises(ConfigError, match=name):
            Settings.load(env={name: value}, env_file=None)


def test_client_commands_report_progress_on_stderr(
        scene: Scene, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """replay-shoe and export over gRPC: a line per update on stderr (not a terminal), the
    answer alone on stdout; nothing with --quiet."""
    from services.cli import main
    from services.cli import progress as progress_module

    monkeypatch.setattr(progress_module, "LINE_SECONDS", 0.0)
    common = ["--target", f"127.0.0.1:{scene.running.port}",
              "--token", scene.clients["regulator"].token or ""]
    with logs.muted():
        time.sleep(0.2)  # the log writer's last batch
        capsys.readouterr()
        assert main(["regulator", "replay-shoe", scene.shoe, *common]) == 0
        out, err = capsys.readouterr()
        assert out.strip().splitlines() == [out.strip()] and out.startswith("verdict: identical")
        assert err.splitlines()[-1].startswith("replay: ") and " steps in " in err
        path = tmp_path / "progress.jsonl"
        assert main(["regulator", "export", "--shoe", scene.shoe, "-o", str(path),
                     *common]) == 0
        lines = len(path.read_text(encoding="utf-8").splitlines())
        assert capsys.readouterr().err.splitlines()[-1].startswith(f"export: {lines:,} lines")
        assert main(["regulator", "replay-shoe", scene.shoe, "--quiet", *common]) == 0
        assert capsys.readouterr().err == ""

"""The rules of issue 12 through gRPC, on every store of the test server: the table maximum per
player and chance, insurance refused where a 31 returns the stake, CloseTable settling the
prisoners, a moved prisoner on a second 31; and ``sabot table open --option`` / ``table close``."""

from __future__ import annotations

import json

import grpc
import pytest

import services.cli as cli
from domain.trente_et_quarante.rules import house_rules
from services.api.client import new_request_id
from services.api.gen.sabot.v1 import betting_pb2, common_pb2, table_pb2
from services.trente_et_quarante import demo

from .scenes import API_FIRST_31, API_TWIN_31, Scene
from .support import Api, balance, failure, money, new_account, open_coup, open_shoe, open_table

NOIR, ROUGE = common_pb2.CHANCE_NOIR, common_pb2.CHANCE_ROUGE
COULEUR, INVERSE = common_pb2.CHANCE_COULEUR, common_pb2.CHANCE_INVERSE
DEPOSIT = 100_000


def place(api: Api, coup: str, account: str, chance: int, amount: int) -> betting_pb2.StakeResult:
    result: betting_pb2.StakeResult = api.as_("admin").betting.PlaceStake(
        betting_pb2.PlaceStakeRequest(request_id=new_request_id(), coup=coup,
                                      account=f"accounts/{account}", chance=chance,  # type: ignore[arg-type]
                                      amount=money(amount)))
    return result


def scene_table(api: Api, scene: Scene, preset: str, options: dict[str, str] | None = None,
                ) -> tuple[table_pb2.Table, table_pb2.Shoe]:
    table = open_table(api, preset, {"decks": str(scene.decks), "cut_card": scene.cut_card.value,
                                     **(options or {})})
    return table, open_shoe(api, table.name, scene.cut, str(scene.shoe_id))


def step(api: Api, method: str, request_type: type, name: str) -> table_pb2.Coup:
    coup: table_pb2.Coup = getattr(api.as_("croupier").tables, method)(
        request_type(request_id=new_request_id(), name=name))
    return coup


def test_the_maximum_is_per_player_and_chance(api: Api) -> None:
    table = open_table(api, "francaise", {"max_stake": "5000"})
    coup = open_coup(api, open_shoe(api, table.name).name).name
    anne, bruno = new_account(api, DEPOSIT), new_account(api, DEPOSIT)
    first = place(api, coup, anne, NOIR, 3000)
    code, field, reason = failure(place, api, coup, anne, NOIR, 3000)  # 6000 on noir
    assert (code, field, reason) == (
        grpc.StatusCode.FAILED_PRECONDITION, "amount.amount_minor", "ABOVE_MAXIMUM")
    place(api, coup, anne, NOIR, 2000)
    raise_ = betting_pb2.RaiseStakeRequest(
        request_id=new_request_id(), name=first.stake.name, coup=coup, amount=money(1))
    code, field, reason = failure(api.as_("admin").betting.RaiseStake, raise_)
    assert (code, field, reason) == (
        grpc.StatusCode.FAILED_PRECONDITION, "amount.amount_minor", "ABOVE_MAXIMUM")
    place(api, coup, bruno, NOIR, 5000)
    place(api, coup, anne, COULEUR, 5000)
    code, field, _ = failure(place, api, coup, anne, ROUGE, 5001)  # one stake above: bad input
    assert (code, field) == (grpc.StatusCode.INVALID_ARGUMENT, "amount.amount_minor")
    assert balance(api, anne) == DEPOSIT - 10_000


def test_insurance_where_a_31_returns_the_stake_is_refused(api: Api) -> None:
    table = open_table(api, "francaise")
    coup = open_coup(api, open_shoe(api, table.name).name).name
    anne = new_account(api, DEPOSIT)
    stake = place(api, coup, anne, COULEUR, 1000).stake
    code, field, reason = failure(api.as_("admin").betting.InsureStake,
                                  betting_pb2.InsureStakeRequest(
                                      request_id=new_request_id(), name=stake.name, coup=coup))
    assert (code, field, reason) == (
        grpc.StatusCode.FAILED_PRECONDITION, "name", "NOTHING_TO_INSURE")
    assert balance(api, anne) == DEPOSIT - 1000


def test_close_table_settles_the_prisoners(api: Api, capsys: pytest.CaptureFixture[str]) -> None:
    assert API_FIRST_31.pattern().startswith("A")
    croupier = api.as_("croupier").tables
    table, shoe = scene_table(api, API_FIRST_31, "italiana")
    anne, bruno = new_account(api, DEPOSIT), new_account(api, DEPOSIT)
    coup = open_coup(api, shoe.name).name
    place(api, coup, anne, NOIR, 1001)
    place(api, coup, bruno, COULEUR, 400)
    assert step(api, "DealCoup", table_pb2.DealCoupRequest, coup).refait_total == 31
    settled = step(api, "SettleCoup", table_pb2.SettleCoupRequest, coup)
    assert {f.fate for f in settled.fates} == {"imprisoned"}
    close = table_pb2.CloseTableRequest(request_id=new_request_id(), name=table.name)
    assert failure(croupier.CloseTable, close) == (
        grpc.StatusCode.FAILED_PRECONDITION, "name", "SHOE_OPEN")
    croupier.CloseShoe(table_pb2.CloseShoeRequest(request_id=new_request_id(), name=shoe.name))
    code, _, _ = failure(api.as_("anne").tables.CloseTable, table_pb2.CloseTableRequest(
        request_id=new_request_id(), name=table.name))
    assert code == grpc.StatusCode.PERMISSION_DENIED
    closed = croupier.CloseTable(close)
    assert closed.closed and closed.close_time.seconds > 0 and not closed.layout
    assert [(m.kind, m.account, m.amount.amount_minor) for m in closed.settled] == [
        ("partage", f"accounts/{bruno}", 200), ("partage", f"accounts/{anne}", 500),
        ("return", f"accounts/{bruno}", 200), ("return", f"accounts/{anne}", 501)]
    assert croupier.CloseTable(close) == closed  # a retry: the first answer, no second effect
    assert balance(api, anne) == DEPOSIT - 500 and balance(api, bruno) == DEPOSIT - 200
    got = croupier.GetTable(table_pb2.GetTableRequest(name=table.name))
    assert got.closed and got.close_time == closed.close_time and not got.settled
    assert failure(croupier.OpenShoe, table_pb2.OpenShoeRequest(
        request_id=new_request_id(), parent=table.name)) == (
        grpc.StatusCode.FAILED_PRECONDITION, "parent", "TABLE_CLOSED")
    common = ["--target", api.target, "--token", api.tokens["croupier"]]
    assert cli.main(["table", "close", table.name, *common]) == 3  # refused by the server
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "FAILED_PRECONDITION" in lines[0] and "closed" in lines[0]


def test_sabot_table_open_option_and_close(api: Api, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "COMMAND_MODULES", ("services.cli.client",))
    common = ["--target", api.target, "--token", api.tokens["croupier"], "--format", "json"]
    name = f"cli-{new_request_id()[:8]}"
    assert cli.main(["table", "open", name, "--preset", "italiana", "--option",
                     "prisoners_at_close=returned", "--option", "max_stake=2000", *common]) == 0
    opened = json.loads(capsys.readouterr().out)
    assert opened["options"]["prisoners_at_close"] == "returned"
    assert opened["options"]["max_stake"] == "2000"
    old = f"cli-{new_request_id()[:8]}"  # --set: the old name, a hidden alias
    assert cli.main(["table", "open", old, "--set", "decks=2", *common]) == 0
    assert json.loads(capsys.readouterr().out)["options"]["decks"] == "2"
    assert cli.main(["table", "close", name, *common]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["closed"] is True and shown["settled"] == []
    with pytest.raises(SystemExit):
        cli.main(["table", "open", "--help"])
    text = capsys.readouterr().out
    assert "--option" in text and "--set" not in text
    assert "per stake" in text and "one chance in one coup" in text


def test_a_moved_prisoner_on_a_second_31(api: Api) -> None:
    """A prisoner follows prison_refait31 whatever chance it lies on: moved onto Couleur at a
    table where a 31 returns free Couleur/Inverse stakes, a second 31 puts it in second
    prison; a free Couleur stake beside it is returned."""
    assert API_TWIN_31.pattern().startswith("AA")
    _, shoe = scene_table(api, API_TWIN_31, "italiana", {"couleur_inverse_on_refait31": "returned"})
    anne, bruno = new_account(api, DEPOSIT), new_account(api, DEPOSIT)
    coup = open_coup(api, shoe.name).name
    jailed = place(api, coup, anne, NOIR, 1000).stake
    step(api, "DealCoup", table_pb2.DealCoupRequest, coup)
    step(api, "SettleCoup", table_pb2.SettleCoupRequest, coup)
    coup = open_coup(api, shoe.name).name
    moved = api.as_("admin").betting.MoveStake(betting_pb2.MoveStakeRequest(
        request_id=new_request_id(), name=jailed.name, coup=coup, chance=COULEUR))
    assert (moved.stake.chance, moved.stake.amount.amount_minor, moved.stake.status) == (
        COULEUR, 500, "prison")
    free = place(api, coup, bruno, COULEUR, 700).stake
    assert step(api, "DealCoup", table_pb2.DealCoupRequest, coup).refait_total == 31
    fates = {f.stake: (f.fate, f.status_after) for f in
             step(api, "SettleCoup", table_pb2.SettleCoupRequest, coup).fates}
    assert fates[jailed.name] == ("second_prison", "second_prison")
    assert fates[free.name][0] == "returned"
    assert balance(api, bruno) == DEPOSIT and balance(api, anne) == DEPOSIT - 1000


def test_the_demo_buys_insurance_only_where_it_insures() -> None:
    """The demo's third player insures her stakes; under ``francaise`` (a 31 returns a free
    Couleur or Inverse stake) she no longer tries on those (it would be refused)."""
    francaise, espanola = house_rules("francaise"), house_rules("espanola")
    assert not demo._insurable(francaise, INVERSE, "free")
    assert not demo._insurable(francaise, COULEUR, "free")
    assert demo._insurable(francaise, NOIR, "free")
    assert demo._insurable(francaise, INVERSE, "prison")  # a prisoner: the prison rule applies
    assert demo._insurable(espanola, INVERSE, "free")
    assert not demo._insurable(house_rules("espanola", {"insurance_rate": "0"}), NOIR, "free")

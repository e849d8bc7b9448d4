"""Trente et Quarante's demo, played through the API: a table, three players, a whole shoe to
its cut card with stakes on all four chances and insurance, the croupier's words, the shoe
closed, the seed shown (``sabot demo``, ``sabot serve --demo``; what every game's demo shares:
``services/api/demo.py``)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from uuid import UUID

import grpc

from domain.shuffle import commitment, parse_seed
from domain.trente_et_quarante.chances import Chance
from domain.trente_et_quarante.layout import Stake, StakeStatus, returned_on_refait31
from domain.trente_et_quarante.rules import HouseRules
from services.api.client import Client, new_request_id
from services.api.convert import CHANCE_NAMES
from services.api.demo import DEPOSIT, Cast, euros, fund
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    table_pb2,
)

MAX_COUPS = 120

# Each player keeps to two chances that are not opposed, so all four chances are covered.
STYLE = {
    0: (common_pb2.CHANCE_NOIR, common_pb2.CHANCE_COULEUR),
    1: (common_pb2.CHANCE_ROUGE, common_pb2.CHANCE_INVERSE),
    2: (common_pb2.CHANCE_NOIR, common_pb2.CHANCE_INVERSE),
}


def play(target: str, cast: Cast, preset: str = "francaise",
         say: Callable[[str], None] = print, cut: int | None = None,
         channel: grpc.Channel | None = None) -> dict[str, int]:
    """Play one shoe; return the players' final balances (minor units). ``channel``: one to
    use (a TLS channel; closed here), else a plaintext one to ``target``."""
    base = Client(target, channel=channel)
    try:
        return _play(base, cast, preset, say, cut)
    finally:
        base.close()
        if channel is not None:
            channel.close()


def _play(base: Client, cast: Cast, preset: str, say: Callable[[str], None],
          cut: int | None) -> dict[str, int]:
    croupier = base.as_(cast.croupier)
    cashier = base.as_(cast.cashier)
    players = [(base.as_(token), account) for token, account in cast.players]
    table_id = f"demo-{secrets.token_hex(3)}"

    table = croupier.tables.OpenTable(
        table_pb2.OpenTableRequest(request_id=new_request_id(), table_id=table_id, preset=preset)
    )
    currency = table.currency_code
    rules = HouseRules.from_options(dict(table.options))
    say(f"Table {table_id} opens ({preset}: refait31 {table.options.get('refait31', '?')}, "
        f"insurance {table.options.get('insurance_rate', '?')}, "
        f"stakes {euros(int(table.options.get('min_stake', '0')), currency)} to "
        f"{euros(int(table.options.get('max_stake', '0')), currency)}).")
    for _, account in players:
        acc = fund(cashier, account, currency)
        say(f"  {account} changes {euros(acc.balance.amount_minor, currency)} at the cage.")

    shoe = croupier.tables.OpenShoe(
        table_pb2.OpenShoeRequest(request_id=new_request_id(), parent=table.name)
    )
    say(f"Shoe {shoe.name.rsplit('/', 1)[-1]}: {shoe.decks} decks, {shoe.algorithm}, "
        f"commitment {shoe.commitment}.")
    cutter = players[0][1]
    position = cut if cut is not None else 40 + secrets.randbelow(200)
    shoe = croupier.tables.CutShoe(table_pb2.CutShoeRequest(
        request_id=new_request_id(), name=shoe.name, cut_position=position, cut_by=cutter))
    say(f"{cutter} cuts at {shoe.cut_position}. Messieurs, faites vos jeux.")

    coups = 0
    while coups < MAX_COUPS:
        coups += 1
        if _coup(croupier, players, shoe.name, currency, say, rules):
            say("  The cut card is out: last coup of the shoe.")
            break

    closed = croupier.tables.CloseShoe(
        table_pb2.CloseShoeRequest(request_id=new_request_id(), name=shoe.name))
    for m in closed.returned:
        who = m.account.rsplit("/", 1)[-1]
        say(f"  returned to {who}: {euros(m.amount.amount_minor, currency)}")
    shoe_id = UUID(shoe.name.rsplit("/", 1)[-1])
    check = commitment(parse_seed(closed.seed, "seed"), shoe_id)
    verdict = "matches" if check == closed.commitment else "DOES NOT MATCH"
    say(f"\nShoe closed after {coups} coups. Seed revealed: {closed.seed}")
    say(f"  commitment recomputed from the seed {verdict} the one published before the cut.")
    balances: dict[str, int] = {}
    for client, account in players:
        acc = client.cashier.GetAccount(cashier_pb2.GetAccountRequest(name=f"accounts/{account}"))
        balances[account] = acc.balance.amount_minor
        say(f"  {account}: {euros(acc.balance.amount_minor, currency)} "
            f"(from {euros(DEPOSIT, currency)})")
    return balances



def _coup(croupier: Client, players: list[tuple[Client, str]], shoe: str, currency: str,
          say: Callable[[str], None], rules: HouseRules) -> bool:
    """One coup of the shoe, told: the stakes, the deal, the settlement, the balances; whether
    the cut card came out."""
    coup = croupier.tables.OpenCoup(
        table_pb2.OpenCoupRequest(request_id=new_request_id(), parent=shoe)
    )
    say(f"\nCoup {coup.number_in_shoe}.")
    for index, (client, account) in enumerate(players):
        _bet(client, account, index, coup, currency, say, rules)
    croupier.tables.CloseBetting(
        table_pb2.CloseBettingRequest(request_id=new_request_id(), name=coup.name))
    say("  Rien ne va plus.")
    dealt = croupier.tables.DealCoup(
        table_pb2.DealCoupRequest(request_id=new_request_id(), name=coup.name))
    noir = " ".join(c.card for c in dealt.cards if c.row == "noir")
    rouge = " ".join(c.card for c in dealt.cards if c.row == "rouge")
    say(f"  Noir: {noir} ({dealt.noir_total or '-'})  Rouge: {rouge} "
        f"({dealt.rouge_total or '-'})")
    say(f"  « {dealt.announcement} »")
    settled = croupier.tables.SettleCoup(
        table_pb2.SettleCoupRequest(request_id=new_request_id(), name=coup.name))
    for m in settled.movements:
        say("    " + _words(m, currency))
    for f in settled.fates:
        if f.fate in FATE_WORDS:
            who = f.account.rsplit("/", 1)[-1]
            say(f"    {who}'s {euros(f.amount_after_minor or f.amount_before_minor, currency)}"
                f" on {CHANCE_NAMES.get(f.chance, '?')} {FATE_WORDS[f.fate]}")
    standing = []
    for client, account in players:
        acc = client.cashier.GetAccount(
            cashier_pb2.GetAccountRequest(name=f"accounts/{account}"))
        standing.append(f"{account} {euros(acc.balance.amount_minor, currency)}")
    say("    balances: " + ", ".join(standing))
    return bool(dealt.cut_card_reached)


FATE_WORDS = {
    "imprisoned": "goes to prison",
    "second_prison": "goes to the second prison",
    "released": "is released from prison",
    "back_to_prison": "comes back to the first prison",
    "void": "stays on the layout (coup nul for it)",
}


def _words(m: common_pb2.Movement, currency: str) -> str:
    """A settlement movement as the croupier says it."""
    who = m.account.rsplit("/", 1)[-1]
    chance = CHANCE_NAMES.get(m.chance, "?")
    amount = euros(m.amount.amount_minor, currency)
    return {
        "collection": f"{chance}: the house collects {amount} from {who}",
        "payment": f"{chance}: pays {who} {amount}",
        "return": f"{chance}: {who} takes back the stake of {amount}",
        "partage": f"{chance}: partage, the house takes {amount} of {who}'s stake",
        "prison_loss": f"{chance}: {who}'s stake in prison is lost, {amount}",
    }.get(m.kind, f"{m.kind} {who} {chance} {amount}")


def _insurable(rules: HouseRules, chance: common_pb2.Chance.ValueType, status: str) -> bool:
    """Insurance is sold only on a stake a refait at 31 would touch (not on a free Couleur or
    Inverse stake that a 31 returns, RULES.md §1): the demo does not try to buy it elsewhere."""
    stake = Stake("", "", Chance(CHANCE_NAMES[chance]), 1, StakeStatus(status or "free"))
    return rules.insurance_rate > 0 and not returned_on_refait31(rules, stake)


def _bet(client: Client, account: str, index: int, coup: table_pb2.Coup, currency: str,
         say: Callable[[str], None], rules: HouseRules) -> None:
    mine = [s for s in coup.layout if s.account == f"accounts/{account}"]
    for stake in mine:
        if stake.awaiting_choice:
            choice = (common_pb2.REFAIT31_CHOICE_PARTAGE if index == 0
                      else common_pb2.REFAIT31_CHOICE_PRISON)
            client.betting.ChooseRefait31(betting_pb2.ChooseRefait31Request(
                request_id=new_request_id(), name=stake.name, coup=coup.name,
                refait31_choice=choice))
            say(f"  {account} chooses {'partage' if index == 0 else 'prison'} "
                f"for the stake on {CHANCE_NAMES.get(stake.chance)}.")
        elif index == 2 and not stake.insured and _insurable(rules, stake.chance, stake.status):
            client.betting.InsureStake(betting_pb2.InsureStakeRequest(
                request_id=new_request_id(), name=stake.name, coup=coup.name))
            say(f"  {account} insures the stake left on {CHANCE_NAMES.get(stake.chance)}")
    on = {s.chance for s in mine}
    amount = 1000 * (index + 1) + 500 * (coup.number_in_shoe % 3)
    for chance in STYLE[index]:
        if chance in on:
            continue
        result = client.betting.PlaceStake(betting_pb2.PlaceStakeRequest(
            request_id=new_request_id(), coup=coup.name, account=f"accounts/{account}",
            chance=chance, amount=common_pb2.Money(currency_code=currency, amount_minor=amount)))
        say(f"  {account} stakes {euros(amount, currency)} on {CHANCE_NAMES[chance]}")
        if index == 2 and result.stake.name and _insurable(rules, chance, "free"):
            client.betting.InsureStake(betting_pb2.InsureStakeRequest(
                request_id=new_request_id(), name=result.stake.name, coup=coup.name))
            say(f"  {account} insures it against the 31 après")

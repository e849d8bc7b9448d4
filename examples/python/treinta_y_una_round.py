"""One Treinta y Una round with the Python client (services.api.client.Client), each role with
its own token: the croupier opens a table and a round, each punter stakes, the croupier deals,
each player in turn looks at its own hand and says "carta" or "me planto", the croupier settles;
then the regulator replays the round beside its recorded events.

    python examples/python/treinta_y_una_round.py --target HOST:PORT --croupier T \\
        --regulator T --player anne=T --player bruno=T [--player chiara=T]
"""

from __future__ import annotations

import uuid

from _args import parse

from services.api.client import Client


def main() -> int:
    a = parse(__doc__ or "", "croupier", "regulator", players=2)
    croupier = Client(a.target, a.croupier)
    players = {account: croupier.as_(token) for account, token in a.players.items()}
    table = croupier.rounds.open_table(f"tyu-{uuid.uuid4().hex[:8]}").name
    r = croupier.rounds.open_round(table, list(players), bank=20_000)  # 200.00 of the banker's
    print(f"{r.name}: {r.banker} holds the bank ({r.banker_reason}); "
          f"request id {croupier.last_request_id}")
    for account, player in players.items():
        if account != r.banker:
            r = player.rounds.place_stake(r.name, account, 1_000)
    r = croupier.rounds.deal(r.name)
    while r.phase == "playing":
        who = r.whose_turn
        me = players[who].rounds
        hand = me.my_hand(r.name, who)  # its own faces: its own token only
        stands = 25 if who == r.banker else 21
        r = me.carta(r.name, who) if hand.total < stands else me.me_planto(r.name, who)
        print(f"  {who}: {'carta' if hand.total < stands else 'me planto'} ({hand.total})")
    r = croupier.rounds.settle(r.name)
    for x in r.results:
        print(f"  {x.player}: {x.outcome} {x.paid.amount_minor} {x.paid.currency_code}")
    replay = croupier.as_(a.regulator).rounds.replay(r.name)
    print(f"replay: {'identical' if replay.identical else 'DIFFERS'} "
          f"({replay.verdict.steps} steps)")
    croupier.close()
    return 0 if replay.identical else 1


if __name__ == "__main__":
    raise SystemExit(main())

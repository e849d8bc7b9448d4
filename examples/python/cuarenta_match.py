"""One Cuarenta match with the Python client, each role with its own token: the croupier opens
a Cuarenta table and a match between two players (each side's stake held on the table) and
deals; each player, with its own token, asks for its own hand and its legal plays and plays
(the capture worth most, else its lowest card left on the table), until the match is won; then
the regulator replays the match beside its recorded events.

    python examples/python/cuarenta_match.py --target HOST:PORT --croupier T --regulator T \\
        --player anne=T --player bruno=T

``MAX_PLAYS=N`` in the environment (default: none): after N plays the side to play abandons
(a forfeit).
"""

from __future__ import annotations

import os
import uuid

from _args import parse

from services.api.client import Client


def main() -> int:
    a = parse(__doc__ or "", "croupier", "regulator", players=2)
    max_plays = int(os.environ.get("MAX_PLAYS", "0"))
    croupier = Client(a.target, a.croupier)
    accounts = list(a.players)[:2]
    seats = [croupier.as_(a.players[account]) for account in accounts]
    table = croupier.matches.open_table(f"cu-{uuid.uuid4().hex[:8]}",
                                        overrides={"commission_rate": "5%"}).name
    m = croupier.matches.open(table, accounts, stake=1_000).match
    print(f"{m.name}: {accounts[0]} against {accounts[1]}, 10.00 each")
    plays = 0
    while m.phase != "over":
        if m.phase == "awaiting_deal":
            m = croupier.matches.deal(m.name).match
            continue
        me = seats[m.to_act % 2].matches
        if max_plays and plays >= max_plays:
            m = me.forfeit(m.name, m.to_act).match
            break
        hand = me.hand(m.name, m.to_act)  # its own cards and legal plays: its own token only
        best = max(hand.legal, key=lambda p: (p.points, len(p.capture)))
        if not best.capture:
            best = min(hand.legal, key=lambda p: (len(p.capture) > 0, p.card))
        m = me.play(m.name, m.to_act, best.card, best.capture,
                    leave_on_table=not best.capture).match
        plays += 1
    print(f"over ({m.end_reason}): side {m.winner} wins, {m.points[0]}-{m.points[1]}")
    replay = croupier.as_(a.regulator).matches.replay(m.name)
    print(f"replay: {'identical' if replay.identical else 'DIFFERS'} "
          f"({replay.verdict.steps} steps)")
    croupier.close()
    return 0 if replay.identical else 1


if __name__ == "__main__":
    raise SystemExit(main())

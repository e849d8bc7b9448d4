"""Fair streams: how many server streams (WatchTable, the back-office feed, the regulator's
replays and exports) each principal may hold at once.

A stream holds a worker thread for as long as it lasts, and the server streams on at most
``total`` of them (half its workers). Without a share per caller, one player holding 40
``WatchTable`` streams takes them all, and every other watcher and the back office's feed get
RESOURCE_EXHAUSTED. So:

- each principal holds at most ``per_principal`` streams (``SABOT_STREAMS_PER_PRINCIPAL``,
  default 4), whatever number of credentials it uses;
- players together hold at most ``total - reserve`` of them: ``reserve`` (a quarter, at least
  one) stays for the staff (croupiers, cashiers, the back office, the regulator, admins).

The streams that need no token (health Watch, reflection) count per peer host, as players.
The caller over its share gets RESOURCE_EXHAUSTED (logged at warning); the others are served.
"""

from __future__ import annotations

import threading

from services.api.roles import Principal, Role

DEFAULT_PER_PRINCIPAL = 4


class StreamQuota:
    """Counts the streams open per principal; ``enter`` before streaming, ``leave`` after."""

    def __init__(self, per_principal: int = DEFAULT_PER_PRINCIPAL, total: int | None = None
                 ) -> None:
        if per_principal < 1:
            raise ValueError("per_principal must be at least 1")
        self.per_principal = per_principal
        self.total = total
        self.reserve = 0 if total is None else max(1, total // 4)
        self._lock = threading.Lock()
        self._open: dict[tuple[str, str], int] = {}
        self._players = 0
        self._all = 0

    def enter(self, who: Principal) -> str | None:
        """Take a stream for ``who``: None, or why it is refused (the caller's share is used)."""
        key = (who.role.value, who.principal_id)
        player = who.role is Role.PLAYER
        with self._lock:
            held = self._open.get(key, 0)
            if held >= self.per_principal:
                return (f"{who.principal_id} holds {held} streams already (at most "
                        f"{self.per_principal} per principal); close one or retry later")
            if self.total is not None:
                if self._all >= self.total:
                    return "every stream slot is taken; retry later"
                if player and self._players >= self.total - self.reserve:
                    return ("the players' stream slots are taken (the rest is kept for the "
                            "staff); retry later")
            self._open[key] = held + 1
            self._all += 1
            if player:
                self._players += 1
        return None

    def leave(self, who: Principal) -> None:
        key = (who.role.value, who.principal_id)
        with self._lock:
            held = self._open.get(key, 0)
            if held <= 1:
                self._open.pop(key, None)
            else:
                self._open[key] = held - 1
            if held:
                self._all -= 1
                if who.role is Role.PLAYER:
                    self._players -= 1

    def held(self, who: Principal) -> int:
        with self._lock:
            return self._open.get((who.role.value, who.principal_id), 0)

"""Who caused a fact: the actor recorded with every stored command.

An actor is the authenticated principal that called (its id, such as ``c-0173``,
``cashier-12``, ``terminal-4`` or a player's account), its role, and the peer it called from (a
network address or a terminal's name). Every ``Request.Recorded`` carries the actor of its
command, and every event the command caused is listed in that request (``effects``), so every
fact in the log can be traced to a person or a device.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Actor:
    """The principal behind a command: id, role, peer (and for a player the account)."""

    principal: str
    role: str
    peer: str = ""
    account: str | None = None

    @property
    def is_player(self) -> bool:
        """A player's actor acts on its own account's stakes only (the ledger decides)."""
        return self.role == PLAYER

    @property
    def scope(self) -> str:
        """What scopes its request ids: its principal id; "" for the ledger's own actors
        (``SYSTEM``, ``UNRECORDED``), whose ids keep the unscoped derivation of old stores."""
        return "" if self.role in _UNSCOPED else self.principal

    def acts_for(self, account_id: str) -> bool:
        """Whether this actor may act on ``account_id``'s stakes: any actor but a player, and
        a player on its own account only."""
        return self.role != PLAYER or (self.account is not None and self.account == account_id)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"principal": self.principal, "role": self.role, "peer": self.peer}
        if self.account is not None:
            out["account"] = self.account
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Actor:
        return cls(
            principal=str(data.get("principal", "")),
            role=str(data.get("role", "")),
            peer=str(data.get("peer", "")),
            account=data.get("account"),
        )


PLAYER = "player"  # the role whose commands are bound to one account
_UNSCOPED = frozenset({"system", "unrecorded"})

# Commands run by the system itself (the ledger's own maintenance, tests without a caller).
SYSTEM = Actor("system", "system")
# What a request stored before actors were recorded (Request.Recorded version 1) says.
UNRECORDED = Actor("unrecorded", "unrecorded")

"""Browser sessions kept on the console's side: a random id in a cookie (HttpOnly, SameSite
Strict, Secure over TLS), the user's token and a CSRF token here, never in a page or a URL."""

from __future__ import annotations

import hmac
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

COOKIE = "sabot_session"
IDLE_SECONDS = 30 * 60  # a session unused this long is forgotten
MAX_SECONDS = 12 * 60 * 60  # and any session after a shift


@dataclass
class Session:
    sid: str
    csrf: str
    token: str = ""
    account: str = ""  # a player's own account, as the player gave it at sign-in
    label: str = ""  # what the pages call the user (never the token)
    started: float = 0.0
    seen: float = 0.0
    flags: dict[str, str] = field(default_factory=dict)

    @property
    def signed_in(self) -> bool:
        return bool(self.token)


class Sessions:
    """The live sessions, by id; thread-safe (the console answers on a thread pool)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._by_id: dict[str, Session] = {}
        self._lock = threading.Lock()

    def new(self) -> Session:
        now = self.clock()
        s = Session(sid=secrets.token_urlsafe(32), csrf=secrets.token_urlsafe(32), started=now,
                    seen=now)
        with self._lock:
            self._expire(now)
            self._by_id[s.sid] = s
        return s

    def get(self, sid: str | None) -> Session | None:
        if not sid:
            return None
        now = self.clock()
        with self._lock:
            self._expire(now)
            s = self._by_id.get(sid)
            if s is not None:
                s.seen = now
            return s

    def drop(self, sid: str) -> None:
        with self._lock:
            self._by_id.pop(sid, None)

    def _expire(self, now: float) -> None:
        for sid in [k for k, s in self._by_id.items()
                    if now - s.seen > IDLE_SECONDS or now - s.started > MAX_SECONDS]:
            del self._by_id[sid]


def csrf_ok(session: Session, given: str | None) -> bool:
    """The form's CSRF token is the session's (compared in constant time)."""
    return bool(given) and hmac.compare_digest(session.csrf, str(given))

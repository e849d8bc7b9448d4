"""The site's gaming day: when it starts (a local wall-clock time in an IANA zone) and how many
equal shifts it has. Settings ``SABOT_GAMING_DAY`` ("HH:MM ZONE", default "06:00 UTC") and
``SABOT_SHIFTS`` (default 3).

Gaming day ``D`` runs from the local wall-clock time ``start`` on ``D`` to ``start`` on the next
calendar date; shift ``k`` (1..n) starts at the wall-clock time ``start + (k-1) × 24 h / n``.
Boundaries are wall-clock times, so on a daylight-saving day the day is 23 or 25 hours long and
the shift holding the change is one hour shorter or longer; the others keep their length. A
boundary whose wall-clock time does not exist (spring forward) falls at the change itself; one
whose time occurs twice (fall back) falls at its first occurrence: a time belongs to the period
of the latest wall-clock time the site's clocks have shown, so days and shifts never go back.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from functools import partial
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from domain.errors import InvalidArgument

DAY_SETTING = "SABOT_GAMING_DAY"
SHIFTS_SETTING = "SABOT_SHIFTS"
MAX_SHIFTS = 24
_DAY = timedelta(days=1)
_SETTING = re.compile(r"(\d{1,2}):(\d{2})\s+(\S+)")


def _zone(name: str) -> tzinfo:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"unknown time zone {name!r} (an IANA name, e.g. Europe/Paris)") from None


@dataclass(frozen=True, slots=True)
class GamingDay:
    """When the site's gaming day starts (``hour``:``minute`` in ``zone``) and its shifts."""

    hour: int = 6
    minute: int = 0
    zone: str = "UTC"
    shifts: int = 3

    def __post_init__(self) -> None:
        # Checked here too so that a GamingDay is always usable (see ``parse``).
        if not (0 <= self.hour <= 23 and 0 <= self.minute <= 59):
            raise ValueError(f"no such time {self.hour:02d}:{self.minute:02d}")
        if not (1 <= self.shifts <= MAX_SHIFTS and (24 * 60) % self.shifts == 0):
            raise ValueError(f"{self.shifts} shifts do not divide the day into whole minutes")
        _zone(self.zone)

    @property
    def is_default(self) -> bool:
        return self == DEFAULT

    @property
    def text(self) -> str:
        """The ``SABOT_GAMING_DAY`` value, e.g. ``06:00 Europe/Paris``."""
        return f"{self.hour:02d}:{self.minute:02d} {self.zone}"

    def describe(self) -> str:
        """The shifts' wall-clock hours, e.g. ``shift 1 06:00-14:00, ... (Europe/Paris)``."""
        if self.is_default:
            return "shift 1 06-14, 2 14-22, 3 22-06 (UTC)"
        start = timedelta(hours=self.hour, minutes=self.minute)
        length = _DAY / self.shifts
        parts = [
            f"{'shift ' if k == 0 else ''}{k + 1} {_hhmm(start + k * length)}-"
            f"{_hhmm(start + (k + 1) * length)}"
            for k in range(self.shifts)
        ]
        return f"{', '.join(parts)} ({self.zone} local time)"

    def of(self, at: datetime) -> tuple[str, int]:
        """The gaming day (ISO date) and shift (1..n) of an instant (a naive time is UTC)."""
        if self.is_default:
            return _default(at)
        return _of(self, at)

    def resolver(self) -> Callable[[datetime], tuple[str, int]]:
        """``of`` as a plain function (the default's without the test for it)."""
        return _default if self.is_default else partial(_of, self)


DEFAULT = GamingDay()


def _default(at: datetime) -> tuple[str, int]:
    """06:00 UTC, three shifts of eight hours (a fixed offset: plain arithmetic)."""
    if at.tzinfo is not None and at.utcoffset():
        at = at.astimezone(UTC)
    shifted = at - timedelta(hours=6)
    return shifted.date().isoformat(), 1 + shifted.hour // 8


def _hhmm(delta: timedelta) -> str:
    minutes = int(delta.total_seconds() // 60) % (24 * 60)
    return f"{minutes // 60:02d}:{minutes % 60:02d}"


def _period(setting: GamingDay, wall: datetime) -> tuple[datetime, int]:
    """(the gaming day's date at midnight, the shift index 0..n-1) of a wall-clock time."""
    shifted = wall - timedelta(hours=setting.hour, minutes=setting.minute)
    midnight = shifted.replace(hour=0, minute=0, second=0, microsecond=0)
    return midnight, (shifted - midnight) // (_DAY / setting.shifts)


def _of(setting: GamingDay, at: datetime) -> tuple[str, int]:
    zone = _zone(setting.zone)
    instant = at if at.tzinfo is not None else at.replace(tzinfo=UTC)
    local = instant.astimezone(zone)
    wall = local.replace(tzinfo=None, fold=0)
    day, index = _period(setting, wall)
    if local.fold:
        # The second pass of a repeated hour: the boundaries that fell in the first pass were
        # already crossed. Move on while the next one's first occurrence is not later than now.
        start = timedelta(hours=setting.hour, minutes=setting.minute)
        length = _DAY / setting.shifts
        while True:
            nxt = day + start + (index + 1) * length
            # (compared in UTC: two times of one zone compare by wall clock, ignoring fold)
            if nxt.replace(tzinfo=zone, fold=0).astimezone(UTC) > instant:
                break
            day, index = _period(setting, nxt)
    return day.date().isoformat(), index + 1


_MARK = " gaming-day="


def schema_mark(setting: GamingDay) -> str:
    """What a view's schema digest ends with when built under ``setting`` (not the default)."""
    return f"{_MARK}{setting.text}/{setting.shifts}"


def in_schema(schema: str) -> GamingDay | None:
    """The setting written at the end of a schema digest (None: none written, the default)."""
    _, mark, text = schema.partition(_MARK)
    if not mark:
        return None
    try:
        day, _, shifts = text.rpartition("/")
        hhmm, _, zone = day.partition(" ")
        hour, _, minute = hhmm.partition(":")
        return GamingDay(int(hour), int(minute), zone, int(shifts))
    except ValueError:
        return None


def parse(day_text: str | None, shifts_text: str | None = None) -> GamingDay:
    """The setting from its two texts (None or blank: the default); InvalidArgument naming the
    variable (``SABOT_GAMING_DAY`` or ``SABOT_SHIFTS``) otherwise."""
    hour, minute, zone = DEFAULT.hour, DEFAULT.minute, DEFAULT.zone
    text = (day_text or "").strip()
    if text:
        m = _SETTING.fullmatch(text)
        if m is None:
            raise InvalidArgument(DAY_SETTING, "BAD_SETTING",
                                  f"HH:MM ZONE (e.g. 06:00 Europe/Paris), got {text[:60]!r}")
        hour, minute, zone = int(m[1]), int(m[2]), m[3]
        if hour > 23 or minute > 59:
            raise InvalidArgument(DAY_SETTING, "BAD_SETTING", f"no such time {m[1]}:{m[2]}")
        try:
            _zone(zone)
        except ValueError as exc:
            raise InvalidArgument(DAY_SETTING, "BAD_SETTING", str(exc)) from None
    shifts = DEFAULT.shifts
    count = (shifts_text or "").strip()
    if count:
        if not count.isdigit() or not 1 <= int(count) <= MAX_SHIFTS or 1440 % int(count):
            raise InvalidArgument(
                SHIFTS_SETTING, "BAD_SETTING",
                f"an integer 1..{MAX_SHIFTS} dividing the day into whole minutes "
                f"(1, 2, 3, 4, 6, 8, 12, ...), got {count[:20]!r}")
        shifts = int(count)
    return GamingDay(hour, minute, zone, shifts)


def from_env(env: Mapping[str, str] | None = None) -> GamingDay:
    """The setting from the environment (``os.environ`` when ``env`` is None); the default
    when neither variable is set."""
    return given(env) or DEFAULT


def given(env: Mapping[str, str] | None = None) -> GamingDay | None:
    """The setting the environment gives (``os.environ`` when ``env`` is None), or None when
    it sets neither variable: then a process adopts the setting the read models were built
    with, so a command run without it never rebuilds them under another one."""
    if env is None:
        import os

        env = os.environ
    day, shifts = env.get(DAY_SETTING), env.get(SHIFTS_SETTING)
    if not (day or "").strip() and not (shifts or "").strip():
        return None
    return parse(day, shifts)

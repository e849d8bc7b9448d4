"""Every money movement belongs to a command, and every balance is re-derived.

- Each posting (``Account.Debited``, ``Credited``, ``CashDeposited``, ``CashWithdrawn``)
  recorded since the chain began is listed in the ``effects`` of exactly one stored command
  (``Request.Recorded`` version 2), and each command's postings balance: what it debits equals
  what it credits.
- On an export of the whole log: every account's balance is re-derived entry by entry from
  its ``Opened`` event (each entry's recorded ``balance`` must agree), the balances sum to
  zero, and every stored snapshot must be the one its link names (its hash in a verified
  link) and hold the balance re-derived at its version.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sabot_verify.chain import snapshot_hash
from sabot_verify.topics import (
    ACCOUNT_DEBITS,
    ACCOUNT_ENTRIES,
    ACCOUNT_OPENED,
    CHAINED_SNAPSHOT,
    REQUEST_RECORDED,
)


@dataclass
class MoneyFinding:
    position: int | None
    message: str


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"_type_", "_data_"}:
            return _plain(value["_data_"])
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@dataclass
class Accounts:
    """The re-derived accounts: balance after each version, by account (originator) id."""

    names: dict[str, str]
    balances: dict[str, dict[int, int]]

    def total(self) -> int:
        return sum(max(v.items())[1] if v else 0 for v in self.balances.values())


def check_money(
    events: Iterable[dict[str, Any]],
    after: int,
    whole: bool,
    snapshots: list[dict[str, Any]],
    links: dict[int, tuple[dict[str, Any], int]],
) -> tuple[list[MoneyFinding], Accounts | None]:
    """``events``: the exported contents (position, originator_id, version, topic, state) in
    log order; ``after``: the last position before the chain began; ``links``: the verified
    links by sequence number (body, position)."""
    evs = [e for e in events if isinstance(e.get("state"), dict)]
    out: list[MoneyFinding] = []
    claimed: dict[tuple[str, int], int] = {}
    commands: list[tuple[int, list[tuple[str, int]]]] = []
    for e in evs:
        if e["topic"] != REQUEST_RECORDED:
            continue
        effects = e["state"].get("effects")
        if not isinstance(effects, list):
            continue  # version 1: recorded no effects (before the chain)
        keys = []
        for item in effects:
            key = (str(item[0]), int(item[1]))
            if key in claimed:
                out.append(MoneyFinding(e["position"], f"command {e['state'].get('request_id')!r}"
                                        f" claims the event claimed at position {claimed[key]}"))
                continue
            claimed[key] = e["position"]
            keys.append(key)
        commands.append((e["position"], keys))
    postings = {(e["originator_id"], int(e["version"])): e
                for e in evs if e["topic"] in ACCOUNT_ENTRIES}
    for key, e in postings.items():
        if e["position"] > after and key not in claimed:
            out.append(MoneyFinding(e["position"], f"{e['topic'].rsplit(':', 1)[-1]} of "
                                    f"{e['state'].get('amount')} that no stored command lists "
                                    "(inserted, or its command's record deleted)"))
    for position, keys in commands:
        debit = credit = 0
        for key in keys:
            entry = postings.get(key)
            if entry is None:
                continue
            amount = int(_plain(entry["state"]).get("amount", 0))
            if entry["topic"] in ACCOUNT_DEBITS:
                debit += amount
            else:
                credit += amount
        if debit != credit:
            out.append(MoneyFinding(position, f"the command's postings do not balance: "
                                    f"debits {debit}, credits {credit}"))
    if not whole:
        return out, None
    accounts = _balances(evs, out)
    if accounts.total() != 0:
        out.append(MoneyFinding(None, f"the balances sum to {accounts.total()}, not 0"))
    out += _snapshots(snapshots, links, accounts, evs)
    return out, accounts


def _balances(evs: list[dict[str, Any]], out: list[MoneyFinding]) -> Accounts:
    by_account: dict[str, list[dict[str, Any]]] = {}
    for e in evs:
        if e["topic"] == ACCOUNT_OPENED or e["topic"] in ACCOUNT_ENTRIES:
            by_account.setdefault(e["originator_id"], []).append(e)
    names: dict[str, str] = {}
    balances: dict[str, dict[int, int]] = {}
    for oid, entries in by_account.items():
        entries.sort(key=lambda x: int(x["version"]))
        running = 0
        seen: dict[int, int] = {}
        for n, e in enumerate(entries, 1):
            st = _plain(e["state"])
            if int(e["version"]) != n:
                out.append(MoneyFinding(e["position"], f"account {oid}: version {e['version']} "
                                        f"where {n} was due"))
                break
            if e["topic"] == ACCOUNT_OPENED:
                if n != 1:
                    out.append(MoneyFinding(e["position"], f"account {oid} opened twice"))
                    break
                names[oid] = str(st.get("account_id"))
                seen[n] = 0
                continue
            if n == 1:
                out.append(MoneyFinding(e["position"], f"account {oid}: an entry before it "
                                        "was opened"))
                break
            amount = int(st["amount"])
            running += -amount if e["topic"] in ACCOUNT_DEBITS else amount
            if int(st.get("balance", running)) != running:
                out.append(MoneyFinding(e["position"], f"account {names.get(oid, oid)}: balance "
                                        f"after the entry recorded {st.get('balance')}, "
                                        f"re-derived {running}"))
                break
            seen[n] = running
        balances[oid] = seen
    return Accounts(names, balances)


def _snapshots(
    snapshots: list[dict[str, Any]],
    links: dict[int, tuple[dict[str, Any], int]],
    accounts: Accounts,
    evs: list[dict[str, Any]],
) -> list[MoneyFinding]:
    out = []
    at = {(e["originator_id"], int(e["version"])): e["position"] for e in evs}
    for snap in snapshots:
        oid, version = str(snap.get("originator_id")), int(snap.get("version", 0))
        where = at.get((oid, version))
        if snap.get("topic") != CHAINED_SNAPSHOT:
            continue  # taken before the chain: the ledger does not use it
        try:
            state = snap["state"]
            seq = int(state["link"])
            mine = snapshot_hash(snap).hex()
        except (KeyError, TypeError, ValueError):
            out.append(MoneyFinding(where, f"snapshot of {oid} at version {version}: malformed"))
            continue
        link = links.get(seq)
        if link is None:
            out.append(MoneyFinding(where, f"snapshot of {oid} at version {version} names link "
                                    f"{seq}, which is not a verified link of the export"))
            continue
        if mine not in link[0].get("snapshots", []):
            out.append(MoneyFinding(where, f"snapshot of {oid} at version {version} is not the "
                                    f"one link {seq} names (edited?)"))
            continue
        held = _plain(state.get("state", {})).get("balance")
        derived = accounts.balances.get(oid, {}).get(version)
        if derived is not None and held != derived:
            out.append(MoneyFinding(where, f"snapshot of {oid} at version {version} holds "
                                    f"balance {held}, re-derived {derived}"))
    return out

"""Client commands for every sabot.v1 RPC: ``sabot table|shoe|coup|stake|account|report|
regulator|health`` (the games' own groups, ``sabot round`` and ``sabot match``, are in
``services/cli/treinta_y_una.py`` and ``cuarenta.py`` and use the plumbing here). Common
options: ``--target``, ``--token``, ``--format table|json``, and TLS: ``--tls-ca FILE
[--tls-client-cert FILE --tls-client-key FILE]``. A mutating command's request id is
``--request-id``, else made here; an error whose outcome is unknown names it (``failure``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

import grpc
from google.protobuf import json_format
from google.protobuf.message import Message
from google.protobuf.timestamp_pb2 import Timestamp
from grpc_health.v1 import health_pb2

from domain.currency import format_minor, minor_unit
from services.api.client import Client, new_request_id
from services.api.gen.sabot.cuarenta.v1 import cuarenta_pb2, cuarenta_pb2_grpc
from services.api.gen.sabot.treinta_y_una.v1 import treinta_y_una_pb2, treinta_y_una_pb2_grpc
from services.api.gen.sabot.v1 import (
    betting_pb2,
    cashier_pb2,
    common_pb2,
    events_pb2,
    regulator_pb2,
    regulator_pb2_grpc,
    reports_pb2,
    reports_pb2_grpc,
    table_pb2,
)
from services.cli import CliError, commands, keep_old_names, rpc_failure, settings_of
from services.cli.exits import Exit
from services.cli.progress import Progress, quiet_argument
from services.settings import SettingError, Settings, add_flags

DEFAULT_TARGET = "127.0.0.1:50051"
CHANCES: dict[str, common_pb2.Chance.ValueType] = {
    "noir": common_pb2.CHANCE_NOIR,
    "rouge": common_pb2.CHANCE_ROUGE,
    "couleur": common_pb2.CHANCE_COULEUR,
    "inverse": common_pb2.CHANCE_INVERSE,
}
CHOICES: dict[str, common_pb2.Refait31Choice.ValueType] = {
    "partage": common_pb2.REFAIT31_CHOICE_PARTAGE,
    "prison": common_pb2.REFAIT31_CHOICE_PRISON,
}


# --- output ---------------------------------------------------------------------------------


def _plain(message: Message) -> dict[str, Any]:
    return json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )


# Enum values in the game's words (text output; JSON keeps the proto's names).
GAME_WORDS: dict[str, str] = {
    **{common_pb2.Chance.Name(v): w for w, v in CHANCES.items()},
    **{common_pb2.Refait31Choice.Name(v): w for w, v in CHOICES.items()},
    common_pb2.Chance.Name(common_pb2.CHANCE_UNSPECIFIED): "none",
    common_pb2.Refait31Choice.Name(common_pb2.REFAIT31_CHOICE_UNSPECIFIED): "none",
}


# Text fields holding minor units with decimals (the gaming day's expected win, its interval).
DECIMAL_MINOR = frozenset({"theoretical_win", "interval_low", "interval_high"})


def _currencies(data: Any) -> set[str]:
    """Every currency code named in a message (as a dict)."""
    if isinstance(data, dict):
        found = {str(data["currency_code"])} if data.get("currency_code") else set()
        return found.union(*(_currencies(v) for v in data.values()))
    if isinstance(data, list):
        return set().union(*(_currencies(v) for v in data))
    return set()


def human(data: Any, currency: str = "") -> Any:
    """A message (as a dict) as a person reads it: money in major units with its currency
    (``500.00 EUR``; a ``…_minor`` field loses the suffix and takes the currency of its
    message, or of its parent's), enum values in the game's words."""
    if isinstance(data, dict):
        if data and set(data) <= {"amount_minor", "currency_code"}:  # a Money
            return format_minor(int(data.get("amount_minor", 0)), str(data.get("currency_code")
                                                                       or currency))
        currency = str(data.get("currency_code") or currency)
        out: dict[str, Any] = {}
        for key, value in data.items():
            nested = _json_field(key, value)
            if nested is not None:  # detail_json, data_json: the fields they hold
                out[key.removesuffix("_json")] = human(nested, currency)
            elif key.endswith("_minor") and currency and _whole(value):
                out[key.removesuffix("_minor")] = format_minor(int(value), currency)
            elif key in DECIMAL_MINOR and currency and value:  # e.g. "3693.09" minor units
                out[key] = format_minor(Decimal(str(value)), currency)
            else:
                out[key] = human(value, currency)
        return out
    if isinstance(data, list):
        return [human(v, currency) for v in data]
    if isinstance(data, str):
        return GAME_WORDS.get(data, data)
    return data


def _json_field(key: str, value: Any) -> Any:
    """The object a ``…_json`` text field holds (None: not one, or not JSON)."""
    if not key.endswith("_json") or not isinstance(value, str) or not value:
        return None
    try:
        found = json.loads(value)
    except ValueError:
        return None
    return found if isinstance(found, dict | list) else None


def _whole(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)) or (
        isinstance(value, str) and value.lstrip("-").isdigit())


def _cell(value: Any) -> str:
    """A value as one cell: a message as ``field=value`` pairs, a list comma-separated."""
    if isinstance(value, dict):
        return ", ".join(f"{k}={_cell(v)}" for k, v in value.items())
    if isinstance(value, list):
        return ",".join(_cell(v) for v in value)
    return str(value)


def _clip(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters: cut with an ellipsis, never silently."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _table(rows: list[dict[str, Any]], out: Any, indent: str = "") -> None:
    columns: list[str] = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    cells = [[_cell(row.get(c, "")) for c in columns] for row in rows]
    widths = [max([len(c), *(len(r[i]) for r in cells)]) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()
    print(indent + line, file=out)
    for r in cells:
        line = "  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip()
        print(indent + line, file=out)


def _flat(value: Any) -> bool:
    """A value that fits in one table cell (scalars, lists of scalars)."""
    if isinstance(value, dict):
        return all(not isinstance(v, dict | list) for v in value.values())
    if isinstance(value, list):
        return all(not isinstance(v, dict | list) for v in value)
    return True


def _block(data: dict[str, Any], out: Any, indent: str = "") -> None:
    """Scalars as aligned ``key  value`` lines, then nested lists: flat rows as a table,
    others as indented blocks."""
    scalars = {k: v for k, v in data.items() if not isinstance(v, dict) and _flat(v)}
    nested = {k: v for k, v in data.items() if k not in scalars}
    width = max((len(k) for k in scalars), default=0)
    for key, value in scalars.items():
        text = _cell(value)
        print(f"{indent}{key.ljust(width)}  {_clip(text, 160)}", file=out)
    for key, value in nested.items():
        print(f"{indent}{key}:", file=out)
        if isinstance(value, dict):  # a message: its fields, indented
            _block(value, out, indent + "  ")
            continue
        rows = value
        if all(isinstance(r, dict) and all(_flat(v) for v in r.values()) for r in rows):
            _table([{k: _clip(_cell(v), 80) for k, v in r.items()} for r in rows], out,
                   indent + "  ")
        else:
            for row in rows:
                _block(row, out, indent + "  ")
                print(file=out)


def show(message: Message, fmt: str, out: Any = None) -> None:
    """Print a message as JSON (minor units, the proto's names), or as aligned text (scalars,
    then lists as tables; money in major units, enums in the game's words)."""
    out = out or sys.stdout
    data = _plain(message)
    if fmt == "json":
        print(json.dumps(data, indent=2, ensure_ascii=False), file=out)
        return
    found = _currencies(data)
    _block(human(data, found.pop() if len(found) == 1 else ""), out)


# --- plumbing -------------------------------------------------------------------------------


TLS_SETTINGS = ("tls_ca", "tls_client_cert", "tls_client_key")
CALLER_SETTINGS = ("target", "token", *TLS_SETTINGS)


def tls_arguments(p: argparse.ArgumentParser) -> None:
    """``--tls-ca FILE [--tls-client-cert FILE --tls-client-key FILE]`` (SABOT_TLS_CA,
    SABOT_TLS_CLIENT_CERT, SABOT_TLS_CLIENT_KEY; old flags ``--tls-cert``, ``--tls-key``): a
    TLS channel, with a client certificate for mTLS."""
    add_flags(p, *TLS_SETTINGS)


def _channel(target: str, settings: Settings) -> grpc.Channel:
    from services.api.tls import TlsError, channel_credentials, open_channel

    ca, cert, key = settings.tls_ca, settings.tls_client_cert, settings.tls_client_key
    if ca is None and cert is None and key is None:
        return open_channel(target)
    try:
        return open_channel(target, channel_credentials(ca, cert, key))
    except TlsError as exc:
        raise CliError(str(exc)) from None


def channel_of(args: argparse.Namespace) -> grpc.Channel:
    """The channel the settings ask for (``--target``; TLS with ``--tls-ca``, plaintext
    without); CliError if they do not load."""
    settings = settings_of(args)
    return _channel(settings.target, settings)


def channel_of_env(target: str) -> grpc.Channel:
    """A channel to ``target`` with the client TLS settings of the environment (or .env)."""
    try:
        settings = Settings.load(only=TLS_SETTINGS)
    except SettingError as exc:
        raise CliError(str(exc)) from None
    if settings.tls_ca is None:
        raise CliError("--demo on a TLS server needs SABOT_TLS_CA (and for mTLS "
                       "SABOT_TLS_CLIENT_CERT and SABOT_TLS_CLIENT_KEY) to call it")
    return _channel(target, settings)


def client_of(args: argparse.Namespace, token: str | None = None) -> Client:
    """A Client on the channel the settings ask for, as ``--token`` (or ``token``)."""
    settings = settings_of(args)
    client = Client(settings.target, token or settings.token, channel=channel_of(args))
    client.owns_channel = True  # closed with the client
    return client


def _bearer(args: argparse.Namespace) -> tuple[tuple[str, str], ...]:
    token = settings_of(args).token
    return (("authorization", f"Bearer {token}"),) if token else ()


def _common(p: argparse.ArgumentParser) -> None:
    add_flags(p, "target", "token")
    p.add_argument("--format", choices=("table", "json"), default="table")
    tls_arguments(p)


def _mutating(p: argparse.ArgumentParser) -> None:
    p.add_argument("--request-id", default=None, help="idempotency key (default: a new UUID)")


def _name(kind: str, text: str) -> str:
    """Accept a full resource name, or a bare id for tables and accounts."""
    if "/" in text:
        return text
    if kind in ("tables", "accounts"):
        return f"{kind}/{text}"
    raise CliError(f"expected a resource name ({kind}/...): {text!r}")


INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1


def whole(low: int, high: int, what: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number in ``low..high`` (a field of the request's type), else
    a one-line usage error naming the bounds."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text[:40]!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{value if len(str(value)) <= 40 else str(value)[:40] + '...'} is out of range "
                f"({low}..{high}{' ' + what if what else ''})")
        return value

    return parse


MINOR_UNITS = whole(1, INT64_MAX, "minor units")
PAGE_SIZE = whole(0, INT32_MAX)
POSITION = whole(0, INT64_MAX)


def _money(amount: int, currency: str) -> common_pb2.Money:
    return common_pb2.Money(currency_code=currency, amount_minor=amount)


def amount_flags(p: argparse.ArgumentParser, name: str = "amount", currency: str = "EUR",
                 what: str = "the amount") -> None:
    """``--amount 500.00`` (major units, as every screen and report shows money: the
    currency's decimals), or ``--amount-minor 50000`` (minor units, for scripts), one of them
    required (``name``: another flag, e.g. ``bank``, ``stake``); ``--currency`` (default EUR)
    reads the amount and is sent with it, so the server refuses an account or table in another
    currency instead of moving a hundredth or a hundred times the sum."""
    flag = f"--{name}"
    given = p.add_mutually_exclusive_group(required=True)
    given.add_argument(flag, dest=name, metavar="MAJOR",
                       help=f"{what} as shown, in major units with the currency's decimals "
                            "(500.00)")
    given.add_argument(f"{flag}-minor", dest=f"{name}_minor", type=MINOR_UNITS, metavar="MINOR",
                       help=f"{what} in minor units (50000 is 500.00 EUR)")
    p.add_argument("--currency", default=currency, type=_currency,
                   help=f"ISO 4217 code of the amount (default {currency})")


def _currency(text: str) -> str:
    if minor_unit(text) is None:
        raise argparse.ArgumentTypeError(f"not a currency the ledger accepts: {text[:8]!r} "
                                         "(an ISO 4217 code such as EUR)")
    return text


def amount_of(a: argparse.Namespace, name: str = "amount") -> common_pb2.Money:
    """The ``Money`` of ``amount_flags``: ``--amount-minor`` as it is, ``--amount`` read in
    major units with its currency's decimals (a bare whole number is refused with a hint while
    the previous release's minor-unit ``--amount`` may still be in scripts)."""
    minor = getattr(a, f"{name}_minor")
    if minor is not None:
        return _money(int(minor), a.currency)
    return _money(parse_major(str(getattr(a, name)), a.currency, f"--{name}"), a.currency)


def parse_major(text: str, currency: str, flag: str = "--amount") -> int:
    """``text`` (``500.00``) in minor units of ``currency``, else a one-line usage error naming
    ``flag``: the currency's decimals exactly, positive, within int64."""
    digits = minor_unit(currency) or 0
    shown = text[:40] + ("..." if len(text) > 40 else "")
    whole_part, dot, fraction = text.strip().partition(".")
    if not whole_part.isdigit() or (dot and not fraction.isdigit()):
        raise CliError(f"{flag}: not an amount: {shown!r} (major units, e.g. "
                       f"{format_minor(50_000 * 10 ** max(digits - 2, 0), currency)})")
    scale = int(10 ** digits)
    minor = int(whole_part) * scale + (int(fraction.ljust(digits, "0")) if dot else 0)
    if not 1 <= minor <= INT64_MAX:
        raise CliError(f"{flag}: {shown} {currency} is out of range (1..{INT64_MAX} minor "
                       "units)")
    if digits and not dot:
        raise CliError(f"{flag} {shown}: give major units with {currency}'s {digits} decimals "
                       f"({format_minor(minor, currency)}), or --amount-minor {shown} for "
                       "minor units (--amount took minor units before this release)")
    if len(fraction) != digits:
        raise CliError(f"{flag} {shown}: {currency} has {digits} decimals "
                       f"(e.g. {format_minor(minor if len(fraction) < digits else 1, currency)})")
    return minor


def _rid(args: argparse.Namespace) -> str:
    """The command's request id: ``--request-id``, else a new one, kept in ``args`` so that a
    call whose outcome is unknown says it (``failure``): a retry with it has no second
    effect."""
    if args.request_id:
        return str(args.request_id)
    made = getattr(args, "made_request_id", None) or new_request_id()
    args.made_request_id = made
    return str(made)


# The codes after which a command may or may not have been done: its error line names the
# request id the CLI made, to retry with (--request-id).
UNKNOWN_OUTCOME = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED,
                             grpc.StatusCode.CANCELLED, grpc.StatusCode.UNKNOWN,
                             grpc.StatusCode.INTERNAL, grpc.StatusCode.ABORTED,
                             grpc.StatusCode.RESOURCE_EXHAUSTED})


def failure(exc: grpc.RpcError, args: argparse.Namespace) -> CliError:
    """A refused or failed call as the command's one error line; when its outcome is unknown
    and the CLI made the request id, the line names it (retry with ``--request-id``)."""
    found = rpc_failure(exc)  # its status and details, and the exit code of its status
    made = getattr(args, "made_request_id", None)
    if made and exc.code() in UNKNOWN_OUTCOME:
        return CliError(f"{found} (request id {made}: retry with --request-id {made})",
                        found.code)
    return found


Build = Callable[[argparse.Namespace], tuple[str, str, Message]]


def _run(build: Build) -> Callable[[argparse.Namespace], int]:
    def run(args: argparse.Namespace) -> int:
        service, method, request = build(args)
        client = client_of(args)
        try:
            response = getattr(getattr(client, service), method)(request)
            if isinstance(response, Message):
                show(response, args.format)
                refused = _refused_items(response)
                if refused:
                    raise CliError(refused, Exit.REFUSED)
            else:
                _stream(response, args.format)
        except grpc.RpcError as exc:
            raise failure(exc, args) from None
        finally:
            client.close()
        return 0

    return run


def _refused_items(response: Message) -> str:
    """A batch's answer (``accepted``, ``results``) with refused items: the error line (the
    answer was shown; the accepted items were stored), else ""."""
    if not isinstance(response, betting_pb2.BatchStakesResponse
                      | cashier_pb2.BatchMovementsResponse):
        return ""
    errors = [r.error for r in response.results if r.HasField("error")]
    accepted, results = response.accepted, response.results
    if not errors:
        return ""
    first = errors[0]
    return (f"{len(results) - accepted} of {len(results)} items refused, the others stored "
            f"(first: {first.field}: {first.reason}: {first.message})")


def _stream(responses: Iterable[Message], fmt: str) -> None:
    try:
        for response in responses:
            if response.DESCRIPTOR.fields_by_name.get("events") is None:
                _items(response, fmt)  # a game's steps or moves
                continue
            for event in getattr(response, "events", ()):
                if fmt == "json":
                    print(json.dumps(_plain(event), ensure_ascii=False), flush=True)
                else:
                    where = event.coup or event.shoe or event.table
                    print(f"{event.position:>8}  {event.type:<36} {where}"
                          f"  {event.data_json[:120]}", flush=True)
    except KeyboardInterrupt:
        pass


def _items(response: Message, fmt: str) -> None:
    """A streamed message's items (a round's steps, a match's moves), one line each: JSON, or
    the item's set fields as ``key=value``."""
    for field in response.DESCRIPTOR.fields:
        if field.message_type is None or not isinstance(getattr(response, field.name), Sequence):
            continue
        for item in getattr(response, field.name):
            data = _plain(item)
            if fmt == "json":
                print(json.dumps(data, ensure_ascii=False), flush=True)
            else:
                shown = human({k: v for k, v in data.items() if v not in ("", 0, [], {}, -1)})
                print("  ".join(f"{k}={_cell(v)}" for k, v in shown.items())[:240], flush=True)


Setup = Callable[[argparse.ArgumentParser], object]


def _add(sub: Any, name: str, help_text: str | None, build: Build, *, mutating: bool = False,
         setup: Setup | None = None) -> None:
    """``name`` in ``sub``, calling what ``build`` asks; ``help_text`` None: a command kept for
    one release, not shown in --help."""
    p = sub.add_parser(name, help=help_text) if help_text else sub.add_parser(name)
    if setup:
        setup(p)
    _common(p)
    if mutating:
        _mutating(p)
    p.set_defaults(func=_run(build))


# --- commands -------------------------------------------------------------------------------

TABLE_OPEN_DESCRIPTION = """Open a table under a preset, single house rules overridden.

Limits (RULES.md §1): min_stake applies per stake; max_stake bounds a player's total
on one chance in one coup: new stakes, raises and the stakes carried over (after a
void coup or a partage, or in prison, moved there too) together. A stake or raise
that would take it past the maximum is refused (FAILED_PRECONDITION, field amount);
stakes already above it (carried over from before the rule) stay, but nothing may be
added to them.
Closing the table (sabot table close) settles the stakes left in prison per
prisoners_at_close: half_returned (default, as a partage) or returned."""


def register(sub: Any) -> None:
    sub = commands(sub)
    _register_tables(sub)
    _register_stakes(sub)
    _register_reports(sub)
    _register_accounts(sub)
    _register_streams(sub)
    _register_regulator(sub)
    keep_old_names(sub)


def _register_tables(sub: Any) -> None:
    table = sub.group("table")

    def open_setup(p: argparse.ArgumentParser) -> None:
        p.description = TABLE_OPEN_DESCRIPTION
        p.formatter_class = argparse.RawDescriptionHelpFormatter
        p.add_argument("table_id")
        p.add_argument("--game", default="", help="the game the table plays: "
                       "trente-et-quarante (default), treinta-y-una or cuarenta")
        p.add_argument("--preset", default="",
                       help="the game's preset (Trente et Quarante: francaise (default), "
                       "espanola or italiana; see sabot rules GAME options)")
        p.add_argument("--option", action="append", default=[], metavar="OPTION=VALUE",
                       help="override one house rule (repeatable), e.g. max_stake=500000 or "
                       "prisoners_at_close=returned; the same flag as in sabot odds")
        p.add_argument("--set", action="append", dest="option", help=argparse.SUPPRESS)

    def open_build(a: argparse.Namespace) -> tuple[str, str, Message]:
        overrides = {}
        for item in a.option:
            key, eq, value = item.partition("=")
            if not eq:
                raise CliError(f"--option: expected OPTION=VALUE, got {item!r}")
            overrides[key] = value
        return "tables", "OpenTable", table_pb2.OpenTableRequest(
            request_id=_rid(a), table_id=a.table_id, game=a.game,
            preset=a.preset or ("" if a.game else "francaise"), overrides=overrides)

    _add(table, "open", "open a table", open_build, mutating=True, setup=open_setup)
    _add(table, "close", "close a table for good, between shoes: the stakes left are settled "
         "(free stakes returned, prisoners per prisoners_at_close)", lambda a: (
             "tables", "CloseTable", table_pb2.CloseTableRequest(
                 request_id=_rid(a), name=_name("tables", a.table))),
         mutating=True, setup=lambda p: p.add_argument("table"))
    _add(table, "get", "show a table", lambda a: ("tables", "GetTable",
         table_pb2.GetTableRequest(name=_name("tables", a.table))),
         setup=lambda p: p.add_argument("table"))
    _add(table, "list", "list the tables in the order they opened (one page)",
         lambda a: ("tables", "ListTables", table_pb2.ListTablesRequest(
             page_size=a.page_size, page_token=a.page_token)), setup=_page_args)
    _register_shoes(sub)
    _register_coups(sub)


def _register_shoes(sub: Any) -> None:
    shoe = sub.group("shoe")

    def shoe_open(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        p.add_argument("--shoe-id", default="")
        p.add_argument("--deck-kind", default="")

    _add(shoe, "open", "shuffle a new shoe (commitment published)", lambda a: (
        "tables", "OpenShoe", table_pb2.OpenShoeRequest(
            request_id=_rid(a), parent=_name("tables", a.table), shoe_id=a.shoe_id,
            deck_kind=a.deck_kind)), mutating=True, setup=shoe_open)
    _add(shoe, "get", "show a shoe", lambda a: ("tables", "GetShoe",
         table_pb2.GetShoeRequest(name=_name("shoes", a.shoe))),
         setup=lambda p: p.add_argument("shoe"))

    def cut_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("shoe")
        p.add_argument("--position", type=whole(1, INT32_MAX), required=True)
        p.add_argument("--by", required=True, help="who cuts (a player)")

    _add(shoe, "cut", "cut the shoe", lambda a: ("tables", "CutShoe", table_pb2.CutShoeRequest(
        request_id=_rid(a), name=_name("shoes", a.shoe), cut_position=a.position, cut_by=a.by)),
        mutating=True, setup=cut_setup)
    _add(shoe, "close", "close the shoe (the seed is revealed)", lambda a: (
        "tables", "CloseShoe", table_pb2.CloseShoeRequest(
            request_id=_rid(a), name=_name("shoes", a.shoe))),
        mutating=True, setup=lambda p: p.add_argument("shoe"))


def _register_coups(sub: Any) -> None:
    coup = sub.group("coup")

    def coup_open(p: argparse.ArgumentParser) -> None:
        p.add_argument("shoe")
        p.add_argument("--coup-id", default="")

    _add(coup, "open", "open the next coup", lambda a: ("tables", "OpenCoup",
         table_pb2.OpenCoupRequest(request_id=_rid(a), parent=_name("shoes", a.shoe),
                                   coup_id=a.coup_id)), mutating=True, setup=coup_open)
    _add(coup, "get", "show a coup", lambda a: ("tables", "GetCoup",
         table_pb2.GetCoupRequest(name=_name("coups", a.coup))),
         setup=lambda p: p.add_argument("coup"))

    def coup_list(p: argparse.ArgumentParser) -> None:
        p.add_argument("parent", help="tables/{table}/shoes/{shoe}, or a table (every shoe)")
        _page_args(p)

    _add(coup, "list", "list coups in the order they were played (one page)", lambda a: (
        "tables", "ListCoups", table_pb2.ListCoupsRequest(
            parent=_name("tables", a.parent), page_size=a.page_size,
            page_token=a.page_token)), setup=coup_list)
    steps: tuple[tuple[str, str, _CoupRequest, str], ...] = (
        ("close-betting", "CloseBetting", table_pb2.CloseBettingRequest, "rien ne va plus"),
        ("deal", "DealCoup", table_pb2.DealCoupRequest, "deal both rows"),
        ("settle", "SettleCoup", table_pb2.SettleCoupRequest, "settle every stake"),
    )
    for action, method, request_type, text in steps:
        _add(coup, action, text, _coup_step(method, request_type),
             mutating=True, setup=lambda p: p.add_argument("coup"))


def _page_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--page-size", type=PAGE_SIZE, default=0, help="default 50, at most 1000")
    p.add_argument("--page-token", default="", help="next_page_token of the previous page")


class _CoupRequest(Protocol):
    """A coup step's request class: built from a request id and the coup's name."""

    def __call__(self, *, request_id: str = ..., name: str = ...) -> Message: ...


def _coup_step(method: str, request_type: _CoupRequest) -> Build:
    def build(a: argparse.Namespace) -> tuple[str, str, Message]:
        return "tables", method, request_type(request_id=_rid(a), name=_name("coups", a.coup))

    return build


def _register_stakes(sub: Any) -> None:
    stake = sub.group("stake")

    def place_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("coup")
        p.add_argument("--account", required=True)
        p.add_argument("--chance", choices=tuple(CHANCES), required=True)
        amount_flags(p)
        p.add_argument("--stake-id", default="")
        p.add_argument("--choice", choices=tuple(CHOICES), default=None)

    _add(stake, "place", "place a stake", lambda a: ("betting", "PlaceStake",
         betting_pb2.PlaceStakeRequest(
             request_id=_rid(a), coup=_name("coups", a.coup),
             account=_name("accounts", a.account), chance=CHANCES[a.chance],
             amount=amount_of(a), stake_id=a.stake_id,
             refait31_choice=CHOICES.get(a.choice or "", common_pb2.REFAIT31_CHOICE_UNSPECIFIED))),
         mutating=True, setup=place_setup)

    def on_stake(extra: Setup | None = None) -> Setup:
        def setup(p: argparse.ArgumentParser) -> None:
            p.add_argument("stake", help="tables/{table}/stakes/{stake}")
            p.add_argument("--coup", required=True, help="the coup whose betting is open")
            if extra:
                extra(p)
        return setup

    def base(a: argparse.Namespace) -> dict[str, Any]:
        return {"request_id": _rid(a), "name": _name("stakes", a.stake),
                "coup": _name("coups", a.coup)}

    _add(stake, "raise", "add to a free stake", lambda a: ("betting", "RaiseStake",
         betting_pb2.RaiseStakeRequest(**base(a), amount=amount_of(a))),
         mutating=True, setup=on_stake(amount_flags))
    _add(stake, "withdraw", "take a free stake back", lambda a: ("betting", "WithdrawStake",
         betting_pb2.WithdrawStakeRequest(**base(a))), mutating=True, setup=on_stake())
    _add(stake, "insure", "insure a stake for the coup", lambda a: ("betting", "InsureStake",
         betting_pb2.InsureStakeRequest(**base(a))), mutating=True, setup=on_stake())
    _add(stake, "choose", "choose partage or prison", lambda a: ("betting", "ChooseRefait31",
         betting_pb2.ChooseRefait31Request(**base(a), refait31_choice=CHOICES[a.choice])),
         mutating=True, setup=on_stake(
             lambda p: p.add_argument("--choice", choices=tuple(CHOICES), required=True)))
    _add(stake, "move", "move an imprisoned stake", lambda a: ("betting", "MoveStake",
         betting_pb2.MoveStakeRequest(**base(a), chance=CHANCES[a.chance])),
         mutating=True, setup=on_stake(
             lambda p: p.add_argument("--chance", choices=tuple(CHANCES), required=True)))
    _add(stake, "half-withdraw", "withdraw half of an imprisoned stake", lambda a: (
        "betting", "HalfWithdrawStake", betting_pb2.HalfWithdrawStakeRequest(**base(a))),
        mutating=True, setup=on_stake())
    def batch_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("coup", help="tables/{table}/shoes/{shoe}/coups/{coup}")
        p.add_argument("--account", help="the account of every --stake")
        p.add_argument("--stake", action="append", default=[], metavar="CHANCE=MAJOR",
                       help="place a stake: noir=10.00 (repeat it)")
        p.add_argument("--raise", dest="raise_", action="append", default=[],
                       metavar="STAKE=MAJOR", help="raise a stake: tables/t/stakes/ID=5.00")
        p.add_argument("--withdraw", action="append", default=[], metavar="STAKE",
                       help="withdraw a stake (its name)")
        p.add_argument("--batch", metavar="FILE", help="the items as a JSON list "
                       "(docs/batch.md), after those of the flags")
        p.add_argument("--atomic", action="store_true",
                       help="all or nothing (default: each item stands alone)")
        p.add_argument("--currency", default="EUR", type=_currency)

    _add(stake, "batch", "place, raise and withdraw several stakes of one coup in one call",
         lambda a: ("betting", "BatchStakes", betting_pb2.BatchStakesRequest(
             request_id=_rid(a), coup=_name("coups", a.coup), stakes=_stake_items(a),
             atomic=a.atomic)), mutating=True, setup=batch_setup)
    _add(stake, "get", "show a stake", lambda a: ("betting", "GetStake",
         betting_pb2.GetStakeRequest(name=_name("stakes", a.stake))),
         setup=lambda p: p.add_argument("stake"))

    def list_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        p.add_argument("--page-size", type=PAGE_SIZE, default=0)
        p.add_argument("--page-token", default="")

    _add(stake, "list", "the stakes on a table's layout", lambda a: ("betting", "ListStakes",
         betting_pb2.ListStakesRequest(parent=_name("tables", a.table), page_size=a.page_size,
                                       page_token=a.page_token)), setup=list_setup)


def _register_accounts(sub: Any) -> None:
    account = sub.group("account")

    def open_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("account_id")
        p.add_argument("--currency", default="EUR")

    _add(account, "open", "open a player's account", lambda a: ("cashier", "OpenAccount",
         cashier_pb2.OpenAccountRequest(request_id=_rid(a), account_id=a.account_id,
                                        currency_code=a.currency)),
         mutating=True, setup=open_setup)
    _add(account, "get", "an account and its balance", lambda a: ("cashier", "GetAccount",
         cashier_pb2.GetAccountRequest(name=_name("accounts", a.account))),
         setup=lambda p: p.add_argument("account"))

    def money_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("account")
        amount_flags(p)

    _add(account, "deposit", "cash in", lambda a: ("cashier", "Deposit",
         cashier_pb2.DepositRequest(request_id=_rid(a), name=_name("accounts", a.account),
                                    amount=amount_of(a))),
         mutating=True, setup=money_setup)
    _add(account, "withdraw", "cash out", lambda a: ("cashier", "Withdraw",
         cashier_pb2.WithdrawRequest(request_id=_rid(a), name=_name("accounts", a.account),
                                     amount=amount_of(a))),
         mutating=True, setup=money_setup)

    def batch_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("--deposit", action="append", default=[], metavar="ACCOUNT=MAJOR",
                       help="cash in: anne=100.00 (repeat it)")
        p.add_argument("--withdraw", action="append", default=[], metavar="ACCOUNT=MAJOR",
                       help="cash out: anne=20.00 (repeat it)")
        p.add_argument("--batch", metavar="FILE", help="the movements as a JSON list "
                       "(docs/batch.md), after those of the flags")
        p.add_argument("--atomic", action="store_true",
                       help="all or nothing (default: each movement stands alone)")
        p.add_argument("--currency", default="EUR", type=_currency)

    _add(account, "batch", "several deposits and withdrawals in one call", lambda a: (
        "cashier", "BatchMovements", cashier_pb2.BatchMovementsRequest(
            request_id=_rid(a), movements=_cage_items(a), atomic=a.atomic)),
        mutating=True, setup=batch_setup)

    def statement_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("account")
        p.add_argument("--page-size", type=PAGE_SIZE, default=0)
        p.add_argument("--page-token", default="")

    _add(account, "statement", "the account's entries", lambda a: (
        "cashier", "ListStatementEntries", cashier_pb2.ListStatementEntriesRequest(
            parent=_name("accounts", a.account), page_size=a.page_size,
            page_token=a.page_token)), setup=statement_setup)

    _add(sub.group("report"), "balance-sheet",
         "every account's balance and their (zero) sum (back office)",
         lambda a: ("reports", "GetBalanceSheet", cashier_pb2.GetBalanceSheetRequest()))


def _pair(text: str, flag: str) -> tuple[str, str]:
    key, eq, value = text.partition("=")
    if not eq or not key or not value:
        raise CliError(f"{flag} {text[:60]!r}: expected KEY=VALUE")
    return key, value


def _file_items(path: str) -> list[dict[str, Any]]:
    try:
        with open(path, encoding="utf-8") as f:
            found = json.load(f)
    except OSError as exc:
        raise CliError(f"--batch {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CliError(f"--batch {path}: not JSON ({exc})") from None
    if not isinstance(found, list) or not all(isinstance(i, dict) for i in found):
        raise CliError(f"--batch {path}: expected a JSON list of objects")
    return found


def _file_money(item: dict[str, Any], where: str, currency: str) -> common_pb2.Money:
    """An item's ``amount`` (major units, text) or ``amount_minor`` (an integer)."""
    if "amount_minor" in item:
        minor = item["amount_minor"]
        if not isinstance(minor, int) or isinstance(minor, bool) or minor <= 0:
            raise CliError(f"{where}: amount_minor must be a positive integer")
        return _money(minor, currency)
    if "amount" not in item:
        raise CliError(f"{where}: amount (major units, \"10.00\") or amount_minor required")
    return _money(parse_major(str(item["amount"]), currency, f"{where}: amount"), currency)


def _stake_items(a: argparse.Namespace) -> list[betting_pb2.StakeItem]:
    """``sabot stake batch``'s items: its flags' (places, raises, withdrawals), then its
    file's."""
    items: list[betting_pb2.StakeItem] = []
    place, on_stake = betting_pb2.STAKE_ACTION_PLACE, betting_pb2.STAKE_ACTION_RAISE
    if a.stake and not a.account:
        raise CliError("--stake needs --account (the account staking)")
    for text in a.stake:
        chance, amount = _pair(text, "--stake")
        if chance not in CHANCES:
            raise CliError(f"--stake {text[:60]!r}: the chance is one of {', '.join(CHANCES)}")
        items.append(betting_pb2.StakeItem(
            action=place, account=_name("accounts", a.account), chance=CHANCES[chance],
            amount=_money(parse_major(amount, a.currency, "--stake"), a.currency)))
    for text in a.raise_:
        stake, amount = _pair(text, "--raise")
        items.append(betting_pb2.StakeItem(
            action=on_stake, name=_name("stakes", stake),
            amount=_money(parse_major(amount, a.currency, "--raise"), a.currency)))
    items += [betting_pb2.StakeItem(action=betting_pb2.STAKE_ACTION_WITHDRAW,
                                    name=_name("stakes", s)) for s in a.withdraw]
    for i, item in enumerate(_file_items(a.batch) if a.batch else ()):
        where = f"--batch {a.batch}: item {i}"
        action = item.get("action", "place")
        if action == "place":
            word = item.get("chance")
            if word not in CHANCES:
                raise CliError(f"{where}: chance is one of {', '.join(CHANCES)}")
            choice = item.get("choice") or ""
            if choice and choice not in CHOICES:
                raise CliError(f"{where}: choice is one of {', '.join(CHOICES)}")
            owner = item.get("account") or a.account
            if not isinstance(owner, str) or not owner:
                raise CliError(f"{where}: account required (or --account)")
            items.append(betting_pb2.StakeItem(
                action=place, account=_name("accounts", owner), chance=CHANCES[word],
                amount=_file_money(item, where, a.currency),
                stake_id=str(item.get("stake_id") or ""),
                refait31_choice=CHOICES.get(choice, common_pb2.REFAIT31_CHOICE_UNSPECIFIED)))
        elif action in ("raise", "withdraw"):
            named = item.get("stake")
            if not isinstance(named, str) or not named:
                raise CliError(f"{where}: stake (tables/{{table}}/stakes/{{stake}}) required")
            items.append(betting_pb2.StakeItem(
                action=on_stake, name=_name("stakes", named),
                amount=_file_money(item, where, a.currency)) if action == "raise" else
                betting_pb2.StakeItem(action=betting_pb2.STAKE_ACTION_WITHDRAW,
                                      name=_name("stakes", named)))
        else:
            raise CliError(f"{where}: action is place, raise or withdraw")
    if not items:
        raise CliError("give --stake, --raise, --withdraw or --batch FILE")
    return items


def _cage_items(a: argparse.Namespace) -> list[cashier_pb2.CageMovement]:
    """``sabot account batch``'s movements: its flags' (deposits, then withdrawals), then its
    file's."""
    kinds = {"deposit": cashier_pb2.CAGE_MOVEMENT_KIND_DEPOSIT,
             "withdrawal": cashier_pb2.CAGE_MOVEMENT_KIND_WITHDRAWAL}
    items: list[cashier_pb2.CageMovement] = []
    for kind, flag, texts in (("deposit", "--deposit", a.deposit),
                              ("withdrawal", "--withdraw", a.withdraw)):
        for text in texts:
            account, amount = _pair(text, flag)
            items.append(cashier_pb2.CageMovement(
                kind=kinds[kind], name=_name("accounts", account),
                amount=_money(parse_major(amount, a.currency, flag), a.currency)))
    for i, item in enumerate(_file_items(a.batch) if a.batch else ()):
        where = f"--batch {a.batch}: item {i}"
        what, holder = item.get("kind"), item.get("account")
        if what not in kinds:
            raise CliError(f"{where}: kind is deposit or withdrawal")
        if not isinstance(holder, str) or not holder:
            raise CliError(f"{where}: account required")
        items.append(cashier_pb2.CageMovement(kind=kinds[what], name=_name("accounts", holder),
                                              amount=_file_money(item, where, a.currency)))
    if not items:
        raise CliError("give --deposit, --withdraw or --batch FILE")
    return items


def _register_streams(sub: Any) -> None:
    def watch_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        p.add_argument("--after", type=POSITION, default=0, help="log position (0: from now)")

    _add(sub.group("table"), "watch", "follow a table's events live", lambda a: (
         "watch", "WatchTable", events_pb2.WatchTableRequest(
             table=_name("tables", a.table), after_position=a.after)),
         setup=watch_setup)

    def feed_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("--after", type=POSITION, default=0,
                       help="resume after this log position")
        p.add_argument("--batch-size", type=PAGE_SIZE, default=0)
        p.add_argument("--follow", action="store_true", help="keep following the log")

    _add(sub.group("report"), "events", "every event of the log, from a position (the back "
         "office's feed)", lambda a: (
        "feed", "StreamEvents", events_pb2.StreamEventsRequest(
            after_position=a.after, batch_size=a.batch_size, stop_at_end=not a.follow)),
        setup=feed_setup)

    def recall_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        p.add_argument("--count", type=PAGE_SIZE, default=10,
                       help="how many coups (newest first)")
        p.add_argument("--page-token", default="")

    # the last coups of a table, each step in order: ``sabot report recall --table`` now
    _add(sub, "recall", None, lambda a: (
        "recall", "ListRecalledCoups", events_pb2.ListRecalledCoupsRequest(
            parent=_name("tables", a.table), page_size=a.count, page_token=a.page_token)),
        setup=recall_setup)

    p = sub.add_parser("health", help="the server's health (no token needed)")
    _common(p)
    p.set_defaults(func=_health)


def _register_regulator(sub: Any) -> None:
    """``sabot regulator replay-coup|replay-shoe|checkpoint|inclusion-proof|consistency-proof|
    export``: the RegulatorService (regulator or admin token)."""
    reg = sub.group("regulator")

    for action, method, kind, text in (
        ("replay-coup", "ReplayCoup", "coups", "replay a coup beside its recorded events"),
        ("replay-shoe", "ReplayShoe", "shoes", "replay every coup of a shoe"),
        ("replay-round", "ReplayRound", "rounds", "replay a Treinta y Una round beside its "
                                                  "recorded events"),
        ("replay-match", "ReplayMatch", "matches", "replay a Cuarenta match beside its "
                                                   "recorded events"),
    ):
        p = reg.add_parser(action, help=text)
        p.add_argument("name", help=f"the {kind[:-1]}'s resource name")
        p.add_argument("--all", action="store_true", help="print every step, not only "
                                                          "differences")
        quiet_argument(p)
        _common(p)
        p.set_defaults(func=_replay_command(method, kind))

    p = reg.add_parser("checkpoint", help="the latest signed checkpoint")
    _common(p)
    p.set_defaults(func=_regulator_unary("GetLatestCheckpoint",
                              lambda a: regulator_pb2.GetLatestCheckpointRequest()))
    p = reg.add_parser("inclusion-proof", help="the inclusion proof of the event at a position")
    p.add_argument("--position", type=POSITION, required=True)
    p.add_argument("--tree-size", type=POSITION, default=0, help="0: the latest checkpoint's")
    _common(p)
    p.set_defaults(func=_regulator_unary("GetInclusionProof", lambda a: regulator_pb2.
                              GetInclusionProofRequest(position=a.position,
                                                       tree_size=a.tree_size)))
    p = reg.add_parser("consistency-proof", help="the consistency proof between two sizes")
    p.add_argument("--first-size", type=POSITION, required=True)
    p.add_argument("--second-size", type=POSITION, default=0, help="0: the latest checkpoint's")
    _common(p)
    p.set_defaults(func=_regulator_unary("GetConsistencyProof", lambda a: regulator_pb2.
                              GetConsistencyProofRequest(first_size=a.first_size,
                                                         second_size=a.second_size)))

    p = reg.add_parser("export", help="the canonical export (JSON Lines) of shoes or a time "
                                      "range; check it with sabot-verify")
    p.add_argument("--shoe", action="append", default=[], help="a shoe (repeatable)")
    p.add_argument("--since", help="ISO 8601 time with a zone: events at or after it")
    p.add_argument("--until", help="ISO 8601 time with a zone: events before it")
    p.add_argument("-o", "--output", help="file to write (default: stdout)")
    quiet_argument(p)
    _common(p)
    p.set_defaults(func=_export)


def _replay_command(method: str, kind: str) -> Callable[[argparse.Namespace], int]:
    """``sabot regulator replay-*``: the replay's steps, then its verdict (exit 1 unless
    identical)."""
    def run(a: argparse.Namespace) -> int:
        request_type = getattr(regulator_pb2, f"{method}Request")
        request = request_type(name=_name(kind, a.name),
                               differences_only=not a.all)
        identical = False
        with Progress("replay", unit="steps", quiet=a.quiet or kind != "shoes") as progress:
            verdicts = []
            for message in _regulator_stream(a, method, request, progress, "steps"):
                for step in message.steps:
                    progress.clear()
                    print(_replay_line(step, a.format), flush=True)
                if message.HasField("verdict"):
                    verdicts.append(message.verdict)
        for v in verdicts:
            identical = v.identical
            if a.format == "json":
                print(json.dumps(_plain(v), ensure_ascii=False))
            elif v.identical:
                print(f"verdict: identical ({v.steps} steps)")
            else:
                d = v.first_difference
                print(f"verdict: first difference at position {d.position}: {d.what}: "
                      f"recorded {d.recorded_json}, replayed {d.replayed_json}")
        return 0 if identical else 1

    return run


def _regulator_unary(method: str, build: Callable[[argparse.Namespace], Message]
                     ) -> Callable[[argparse.Namespace], int]:
    """A unary call of the RegulatorService, its answer printed."""
    def run(a: argparse.Namespace) -> int:
        data = _hex_bytes(_regulator_call(a, method, build(a)))
        if a.format == "json":
            print(json.dumps(data, indent=2, ensure_ascii=False))
        else:
            _block(human(data), sys.stdout)
        return 0

    return run


def _timestamp(text: str | None, flag: str) -> Timestamp | None:
    if text is None:
        return None
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        raise CliError(f"{flag}: not an ISO 8601 time: {text!r}") from None
    if when.tzinfo is None:
        raise CliError(f"{flag}: give a time zone (e.g. {text}+00:00)")
    stamp = Timestamp()
    stamp.FromDatetime(when)
    return stamp


def _export(a: argparse.Namespace) -> int:
    request = regulator_pb2.ExportEventsRequest(shoes=[_name("shoes", s) for s in a.shoe])
    since, until = _timestamp(a.since, "--since"), _timestamp(a.until, "--until")
    if since is not None:
        request.start_time.CopyFrom(since)
    if until is not None:
        request.end_time.CopyFrom(until)
    out = open(a.output, "w", encoding="utf-8") if a.output else sys.stdout  # noqa: SIM115
    written = 0
    try:
        with Progress("export", unit="lines", quiet=a.quiet) as progress:
            for message in _regulator_stream(a, "ExportEvents", request, progress, "lines"):
                for line in message.lines:
                    out.write(line + "\n")
                    written += 1
    finally:
        if a.output:
            out.close()
    if not written:
        print("the store holds no event yet: nothing to export", file=sys.stderr)
    return 0


def _hex_bytes(message: Message) -> dict[str, Any]:
    """The message as a dict, hashes and signatures in lower-case hex (as the export has them)
    rather than JSON's base64."""
    data = _plain(message)
    for fd, value in message.ListFields():
        if fd.type == fd.TYPE_BYTES:
            data[fd.name] = [v.hex() for v in value] if isinstance(value, Iterable) and not \
                isinstance(value, bytes) else value.hex()
    return data


def _replay_line(step: Any, fmt: str) -> str:
    if fmt == "json":
        return json.dumps(_plain(step), ensure_ascii=False)
    mark = "=" if step.same else "≠"
    where = step.position if step.HasField("position") else "-"
    return f"{where!s:>8} {mark} {step.what}: {step.recorded_json} | {step.replayed_json}"


def _regulator_call(a: argparse.Namespace, method: str, request: Message) -> Any:
    """Call RegulatorService.``method``; a stream is read to its end here (errors surface as
    CliError)."""
    client = client_of(a)
    metadata = _bearer(a)
    stub = regulator_pb2_grpc.RegulatorServiceStub(client.channel)
    try:
        answer = getattr(stub, method)(request, metadata=metadata)
        if isinstance(answer, Message):
            return answer
        return list(answer)
    except grpc.RpcError as exc:
        raise rpc_failure(exc) from None
    finally:
        client.close()


def _regulator_stream(a: argparse.Namespace, method: str, request: Message,
                      progress: Progress, field: str) -> Iterator[Any]:
    """RegulatorService.``method``'s messages as they come (errors surface as CliError), the
    items of each one's repeated ``field`` counted in ``progress``."""
    client = client_of(a)
    metadata = _bearer(a)
    stub = regulator_pb2_grpc.RegulatorServiceStub(client.channel)
    try:
        for message in getattr(stub, method)(request, metadata=metadata):
            progress.advance(len(getattr(message, field)))
            yield message
    except grpc.RpcError as exc:
        raise rpc_failure(exc) from None
    finally:
        client.close()


def _health(args: argparse.Namespace) -> int:
    client = client_of(args)
    try:
        reply = client.health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
    except grpc.RpcError as exc:
        raise rpc_failure(exc) from None
    finally:
        client.close()
    status = health_pb2.HealthCheckResponse.ServingStatus.Name(reply.status)
    if args.format == "json":
        print(json.dumps({"status": status}))
    else:
        print(status)
    return 0


# --- reports from the server's read models (ReadModelService) --------------------------------

_EXPORTS = {"csv": reports_pb2.EXPORT_FORMAT_CSV, "json": reports_pb2.EXPORT_FORMAT_JSON}
_LAYOUTS = {"floor": reports_pb2.GAMING_DAY_LAYOUT_FLOOR,
            "chances": reports_pb2.GAMING_DAY_LAYOUT_CHANCES}
ReportBuild = Callable[[argparse.Namespace], tuple[str, Message] | tuple[str, Message, Any]]


def _register_reports(sub: Any) -> None:
    """``sabot report day|statement|shoes|recall|reconcile|lag``: the ReadModelService, the
    server's read models (``sabot store report`` reads a store directly)."""
    rep = sub.group("report")
    _money_reports(rep)
    _control_reports(rep)


def _report(rep: Any, name: str, help_text: str, build: ReportBuild,
            setup: Setup | None = None, export: bool = False) -> None:
    """One ``sabot report`` subcommand (``export``: with --export and --output)."""
    p = rep.add_parser(name, help=help_text)
    if setup:
        setup(p)
    if export:
        p.add_argument("--export", choices=tuple(_EXPORTS),
                       help="print the report as CSV or JSON (as the server renders it)")
        p.add_argument("-o", "--output", help="write the export to this file")
    _common(p)
    p.set_defaults(func=_reports_run(build))


def _fmt(a: argparse.Namespace) -> reports_pb2.ExportFormat.ValueType:
    return _EXPORTS[a.export] if a.export else reports_pb2.EXPORT_FORMAT_UNSPECIFIED


def _range_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--since", help="ISO 8601 time with its zone (inclusive)")
    p.add_argument("--until", help="ISO 8601 time with its zone (exclusive)")


def _money_reports(rep: Any) -> None:
    """``sabot report day|statement|shoes``."""
    def day_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("gaming_day", help="YYYY-MM-DD (the day starts at 06:00 UTC)")
        p.add_argument("--table", default="", help="one table (default: every table and the "
                                                   "cage)")
        p.add_argument("--layout", choices=tuple(_LAYOUTS), default="floor",
                       help="floor: every game's handle, house win, hold and theoretical win, "
                            "printed as text unless --export or --format json (default); "
                            "chances: Trente et Quarante's handle by chance")

    def day(a: argparse.Namespace) -> tuple[str, Message]:
        text = a.layout == "floor" and not a.export and a.format != "json"
        return "GetGamingDayReport", reports_pb2.GetGamingDayReportRequest(
            table=_name("tables", a.table) if a.table else "", gaming_day=a.gaming_day,
            format=reports_pb2.EXPORT_FORMAT_TEXT if text else _fmt(a),
            layout=_LAYOUTS[a.layout])

    _report(rep, "day", "a gaming day for the floor: every game per table and shift, totals, "
            "the cage (back office)", day, day_setup, export=True)

    def statement_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("account")
        _range_args(p)
        _page_args(p)

    def statement(a: argparse.Namespace) -> tuple[str, Message]:
        request = reports_pb2.GetPlayerStatementRequest(
            account=_name("accounts", a.account), page_size=a.page_size,
            page_token=a.page_token, format=_fmt(a))
        _time_range(request, a)
        return "GetPlayerStatement", request

    _report(rep, "statement", "an account's entries with their causes (a player: its own)",
            statement, statement_setup, export=True)

    def shoes_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("table")
        _page_args(p)

    _report(rep, "shoes", "a table's shoe history: cut, coups, seed check, results",
        lambda a: ("ListShoeHistory", reports_pb2.ListShoeHistoryRequest(
            parent=_name("tables", a.table), page_size=a.page_size, page_token=a.page_token,
            format=_fmt(a))), shoes_setup, export=True)


def _control_reports(rep: Any) -> None:
    """``sabot report recall|reconcile|lag``."""
    def recall_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("--table", default="")
        p.add_argument("--shoe", default="", help="tables/{table}/shoes/{shoe}")
        p.add_argument("--coup", default="", help="tables/{table}/shoes/{shoe}/coups/{coup}")
        p.add_argument("--player", default="", help="an account")
        _range_args(p)
        _page_args(p)

    def recall(a: argparse.Namespace) -> tuple[str, Message]:
        request = reports_pb2.RecallCoupsRequest(
            table=_name("tables", a.table) if a.table else "", shoe=a.shoe, coup=a.coup,
            player=_name("accounts", a.player) if a.player else "", page_size=a.page_size,
            page_token=a.page_token)
        _time_range(request, a)
        return "RecallCoups", request

    _report(rep, "recall", "coups by table, shoe, coup, player and time, every step in order",
            recall, recall_setup)

    def reconcile_setup(p: argparse.ArgumentParser) -> None:
        p.add_argument("--game", choices=tuple(_GAME_RECONCILIATIONS),
                       help="a game's reconciliation of one table (--table) per gaming day "
                            "instead (exit 1 if it does not balance)")
        p.add_argument("--table", default="", help="with --game: the table")
        p.add_argument("--day", default="", help="with --game: one gaming day, YYYY-MM-DD")

    def reconcile(a: argparse.Namespace) -> tuple[str, Message] | tuple[str, Message, Any]:
        if not a.game:
            if a.table or a.day:
                raise CliError(f"--{'table' if a.table else 'day'}: only with --game")
            return "Reconcile", reports_pb2.ReconcileRequest()
        if not a.table:
            raise CliError("--table: required with --game")
        stub, request = _GAME_RECONCILIATIONS[a.game]
        return "GetReconciliation", request(table=_name("tables", a.table),
                                            gaming_day=a.day), stub

    _report(rep, "reconcile", "read-model balances against the write side (exit 1 if they differ); "
        "with --game, that game's reconciliation of a table", reconcile, reconcile_setup)
    _report(rep, "lag", "how far each read model is behind the log",
        lambda a: ("GetProjectionLag", reports_pb2.GetProjectionLagRequest()))


def _time_range(request: Any, a: argparse.Namespace) -> None:
    since, until = _timestamp(a.since, "--since"), _timestamp(a.until, "--until")
    if since is not None:
        request.start_time.CopyFrom(since)
    if until is not None:
        request.end_time.CopyFrom(until)


# A game's reconciliation of a table (``sabot report reconcile --game``): its service's stub
# and request.
_GAME_RECONCILIATIONS: dict[str, tuple[Any, Any]] = {
    "treinta-y-una": (treinta_y_una_pb2_grpc.TreintaYUnaServiceStub,
                      treinta_y_una_pb2.GetReconciliationRequest),
    "cuarenta": (cuarenta_pb2_grpc.CuarentaServiceStub, cuarenta_pb2.GetReconciliationRequest),
}


def _reports_run(build: ReportBuild) -> Callable[[argparse.Namespace], int]:
    def run(a: argparse.Namespace) -> int:
        method, request, *service = build(a)
        channel = channel_of(a)
        metadata = _bearer(a)
        try:
            stub = (service[0] if service else reports_pb2_grpc.ReadModelServiceStub)(channel)
            response = getattr(stub, method)(request, metadata=metadata, timeout=120)
        except grpc.RpcError as exc:
            raise rpc_failure(exc) from None
        finally:
            channel.close()
        data: bytes = getattr(response, "export", b"")
        if data and getattr(a, "output", None):
            with open(a.output, "wb") as f:
                f.write(data)
        elif data:
            sys.stdout.write(data.decode())
        else:
            show(response, a.format)
        if isinstance(response, reports_pb2.ReconcileResponse) and not response.agree:
            return 1
        if response.DESCRIPTOR.name == "Reconciliation" and not response.balanced:
            return 1  # a game's
        return 0

    return run

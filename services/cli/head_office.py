"""``sabot store report head-office``: the gaming day of every site of a group, per site and in
total (``services.projections.head_office``; docs/operations.md, "Many sites").

The sites are named on the command line (``--site NAME=URL``, repeatable) or in a sites file
(``--sites FILE``, SABOT-SITES-1, TOML), or both::

    format = "SABOT-SITES-1"
    [sites.lyon]
    store = "postgresql://head_office@lyon-replica:5432/sabot"
    [sites.nice]
    store = "sqlite:////var/lib/sabot/nice.db"

A store URL may hold a password, so the file must be this user's (or root's) and not writable
by others, as ``.env``; no error shows a URL's password. Each store is read as it is (a
replica, a reader role: nothing is created or written) unless ``--catch-up`` (the read models
brought up to date first, as ``sabot store report day`` does: that writes them). Exit codes
as every command: 2 a flag or the sites file, 3 a store that is another site's (or no site's),
or holds no read models, 5 a store that does not answer.
"""

from __future__ import annotations

import argparse
import re
import sys
import tomllib
from datetime import date
from pathlib import Path
from typing import Any

from eventsourcing.persistence import PersistenceError

from services import bootstrap
from services.cli import CliError, commands, settings_of
from services.cli.exits import Exit
from services.cli.store import _check_exists
from services.files import FileTrustError, check_trusted
from services.projections import default_views
from services.projections.head_office import (
    NoReadModels,
    NotTheSite,
    SiteDay,
    check_site,
    head_office,
    render,
    site_day,
)
from services.settings import SettingError, Settings, redact_url, site_id

SITES_FORMAT = "SABOT-SITES-1"
_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def register(sub: Any) -> None:
    report = commands(sub).group("store").group("report")
    p = report.add_parser(
        "head-office", help="a gaming day of every site of a group: per site and in total "
                            "(text, CSV, JSON)",
        description="Reads each site's store (or a replica of it): its floor report of the day "
                    "(sabot store report day), per game and currency, and the group's totals. "
                    "Each store must be the named site's (its evidence chain names it).")
    p.add_argument("--site", action="append", dest="site_stores", metavar="NAME=URL",
                   help="a site and its store (or a replica's) URL; repeatable")
    p.add_argument("--sites", metavar="FILE", help=f"a sites file ({SITES_FORMAT}, TOML: "
                   "[sites.NAME] store = URL); must be this user's, not writable by others")
    p.add_argument("--day", required=True, help="the gaming day, YYYY-MM-DD (each site's own "
                   "hours: SABOT_GAMING_DAY as its read models were built)")
    p.add_argument("--catch-up", action="store_true",
                   help="bring each site's read models up to date first (writes them: not on a "
                        "replica); default: read them as they are, saying how far behind")
    p.add_argument("--tables", action="store_true",
                   help="each site's tables and shifts too, not only its totals (CSV, JSON)")
    p.add_argument("--format", choices=("text", "csv", "json"), default="text")
    p.add_argument("--output", default=None, help="write to this file instead of stdout")
    p.set_defaults(func=cmd_head_office)


def _given(text: str) -> tuple[str, str]:
    name, equals, url = text.partition("=")
    if not equals or not url.strip():
        raise CliError("--site: NAME=URL (a site and its store's URL)")
    try:
        return site_id(name), url.strip()
    except ValueError as exc:
        raise CliError(f"--site: {exc}") from None


def _sites_file(path: str) -> list[tuple[str, str]]:
    """The sites of a sites file, in its order."""
    try:
        check_trusted(path, what="the sites file")
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except FileTrustError as exc:
        raise CliError(f"--sites: {exc}") from None
    except OSError as exc:
        raise CliError(f"--sites: {path}: cannot read it: {exc.strerror}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise CliError(f"--sites: {path}: not TOML: {str(exc).splitlines()[0]}") from None
    if data.get("format") != SITES_FORMAT or set(data) - {"format", "sites"}:
        raise CliError(f"--sites: {path}: not a {SITES_FORMAT} file (format = "
                       f"\"{SITES_FORMAT}\" and [sites.NAME] tables only)")
    sites = data.get("sites", {})
    out = []
    for name, entry in sites.items() if isinstance(sites, dict) else ():
        if not isinstance(entry, dict) or set(entry) != {"store"} \
                or not isinstance(entry["store"], str):
            raise CliError(f"--sites: {path}: [sites.{name}]: one key, store = \"URL\"")
        try:
            out.append((site_id(name), entry["store"].strip()))
        except ValueError as exc:
            raise CliError(f"--sites: {path}: [sites.{name}]: {exc}") from None
    return out


def _sites(args: argparse.Namespace) -> list[tuple[str, Settings]]:
    """Every site named and its store's settings; a site or a store named twice is refused."""
    given = _sites_file(args.sites) if args.sites else []
    given += [_given(text) for text in args.site_stores or []]
    if not given:
        raise CliError("--site NAME=URL or --sites FILE: name the sites to report")
    out: list[tuple[str, Settings]] = []
    for name, url in given:
        try:
            settings = Settings.load({"store": url}, {}, None, only=("store",))
        except SettingError as exc:
            raise CliError(f"site {name}: {exc}") from None
        if any(n == name for n, _ in out):
            raise CliError(f"site {name}: named twice")
        twice = [n for n, s in out if s.store == settings.store]
        if twice:
            raise CliError(f"site {name}: the same store as site {twice[0]} "
                           f"({redact_url(url)}): one store per site")
        out.append((name, settings))
    return out


def _day_of(name: str, settings: Settings, day: str, catch_up: bool) -> SiteDay:
    """One site's day from its store: the site checked first, reading only."""
    _check_exists(settings.store)
    app = bootstrap.read_only_log(settings)
    try:
        check_site(app, name)
        if not catch_up:
            return site_day(name, day, app, default_views(games=bootstrap.READ_GAMES))
        projector = bootstrap.projector(settings)
        try:
            projector.catch_up()
            return site_day(name, day, projector.app, projector.views, projector.store)
        finally:
            projector.app.close()
    finally:
        app.close()


def cmd_head_office(args: argparse.Namespace) -> int:
    settings_of(args)  # what every command reads (the .env file, SABOT_DEBUG)
    if not _DAY.fullmatch(args.day):
        raise CliError(f"--day: expected a date YYYY-MM-DD, got {args.day[:40]!r}")
    try:
        date.fromisoformat(args.day)
    except ValueError:
        raise CliError(f"--day: no such date {args.day!r}") from None
    days = []
    for name, settings in _sites(args):
        try:
            days.append(_day_of(name, settings, args.day, args.catch_up))
        except CliError as exc:
            raise CliError(f"site {name}: {exc}", exc.code) from None
        except (NotTheSite, NoReadModels) as exc:
            raise CliError(f"site {name}: {exc}", Exit.REFUSED) from None
        except (PersistenceError, OSError) as exc:
            first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise CliError(f"site {name}: its store does not answer: {first}",
                           Exit.UNAVAILABLE) from None
    text = render(head_office(args.day, days), args.format, args.tables)
    if args.output:
        with open(args.output, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        sys.stdout.write(text)
    for d in days:
        if d.behind:
            print(f"sabot: site {d.site}: its read models are {d.behind} events behind its log "
                  "(its server's projections lag, or are off: --catch-up)", file=sys.stderr)
    return 0

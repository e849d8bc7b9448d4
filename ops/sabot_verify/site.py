"""Whose log it is: the site the export's signed links and checkpoints name, against the site the
regulator pinned (``--site``, or the trust file's ``site``; docs/export-format.md, "Sites").

A writer of a site names it in every link it signs (``"site"`` in the link's signed body) and
its notary in every checkpoint's origin (``sabot/SITE``); a single site names none (links
without ``site``, origin ``sabot``), as every log did before sites. So two sites' logs are told
apart by what their keys signed, even when the sites share their keys:

- every link and checkpoint that names a site names the same one (else the logs of two sites
  are mixed: NOT VERIFIED), and a link after one that named a site names it too (a link never
  loses its site);
- the header's ``site`` (not signed: a convenience) must be that site when it names one;
- pinned, that site must be the pinned one (else NOT VERIFIED, naming both); an export that
  names no site cannot be told to be the pinned site's (UNVERIFIABLE);
- not pinned, an export that names a site is UNVERIFIABLE (naming it): its keys alone do not
  say which site's log it is; one that names none verifies as before sites.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from sabot_verify.integrity import Export, Problem
from sabot_verify.proofs import Bad
from sabot_verify.topics import CHAIN_LINKED

ORIGIN = "sabot"  # a single site's origin; a site's is "sabot/SITE"
SITE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,62}")


def site_id(text: str, flag: str) -> str:
    """A pinned site id (as ``SABOT_SITE`` takes it); ``Bad`` naming ``flag`` otherwise."""
    if not isinstance(text, str) or not SITE.fullmatch(text.strip()):
        raise Bad(f"{flag}: a site id (1-63 letters, digits, '.', '_' or '-', the first a "
                  "letter or a digit)")
    return text.strip()


def origin_site(origin: Any) -> str | None:
    """The site a checkpoint's origin names (None: ``sabot``, a single site's)."""
    if not isinstance(origin, str):
        return None
    head, slash, site = origin.partition("/")
    return site if head == ORIGIN and slash and site else None


@dataclass
class SiteCheck:
    """``site``: the site the export's signed links and checkpoints name (None: none);
    ``pinned``: the regulator's; ``problems``: failures; ``unverifiable``: why the site cannot
    be vouched for (nothing failed); ``mismatch``: for the verdict line, when the export is
    another site's than the pinned one."""

    site: str | None
    pinned: str | None
    problems: list[Problem] = field(default_factory=list)
    unverifiable: str | None = None
    mismatch: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"export": self.site, "pinned": self.pinned}


def _links(exp: Export) -> list[tuple[int, dict[str, Any]]]:
    """The exported links' states, in log order (the tail's too)."""
    found = []
    for r in (*exp.events, *exp.tail):
        event = r.get("event")
        if isinstance(event, dict) and event.get("topic") == CHAIN_LINKED \
                and isinstance(event.get("state"), dict) and isinstance(r.get("position"), int):
            found.append((int(r["position"]), event["state"]))
    return sorted(found, key=lambda x: x[0])


def _named(exp: Export, problems: list[Problem]) -> list[tuple[int | None, str, str]]:
    """(position, site, what names it) of every signed link and checkpoint that names a site;
    a link without one after a link that named one is a problem."""
    named: list[tuple[int | None, str, str]] = []
    for position, state in _links(exp):
        site, what = state.get("site"), f"link {state.get('seq')}"
        if site is None:
            if named:
                problems.append(Problem(position, f"site: {what} names no site after "
                                        f"{named[-1][2]} named site {named[-1][1]!r} (a link "
                                        "never loses its site: another log's link?)"))
            continue
        if not isinstance(site, str) or not SITE.fullmatch(site):
            problems.append(Problem(position, f"site: {what}: a malformed site"))
            continue
        named.append((position, site, what))
    for cp in exp.checkpoints:
        site = origin_site(cp.get("origin"))
        if site is not None:
            named.append((None, site, f"the checkpoint of size {cp.get('size')}"))
    return named


def check_site(exp: Export, pinned: str | None) -> SiteCheck:
    """The export's site against the pinned one (module docstring)."""
    problems: list[Problem] = []
    named = _named(exp, problems)
    site = named[0][1] if named else None
    result = SiteCheck(site, pinned, problems)
    for position, other, what in named:
        if other != site:
            problems.append(Problem(position, f"site: {what} names site {other!r}, "
                                    f"{named[0][2]} site {site!r}: the logs of two sites "
                                    "are mixed"))
            break
    header = exp.header.get("site")
    if header is not None and site is not None and header != site:
        problems.append(Problem(None, f"site: the header names site {header!r}, but the "
                                f"export's signed links and checkpoints name site {site!r}"))
    if pinned is not None and site is not None and site != pinned:
        result.mismatch = (f"the export is the log of site {site!r} (its signed links and "
                           f"checkpoints name it), not of site {pinned!r} (pinned)")
        problems.append(Problem(None, f"site: {result.mismatch}"))
    elif pinned is not None and site is None:
        result.unverifiable = (f"site {pinned!r} is pinned, but nothing signed in the export "
                               "names a site (a single site's log, or one written before "
                               f"sites): it cannot be told to be the log of site {pinned!r}")
    elif pinned is None and site is not None:
        result.unverifiable = (f"not pinned: the site (--site, or the trust file's site; the "
                               f"export names site {site!r})")
    return result


__all__ = ["SiteCheck", "check_site", "origin_site", "site_id"]

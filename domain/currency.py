"""The currencies the ledger accepts, each with its minor unit (ISO 4217: the number of decimals
between the currency's unit and the integer minor units the ledger counts), and amounts as a
person reads them: ``format_minor(50000, "EUR") == "500.00 EUR"``, ``"500 JPY"``,
``"1.500 KWD"``. Money is stored and sent in minor units; only human output shows major units.

The table is ISO 4217 list one (circulating currencies, as maintained by SIX for ISO) without
its fund codes (BOV, CHE, CHW, CLF, COU, MXV, USN, UYI, UYW) and the X codes that are no money
at a table (metals, bond units, XDR, XSU, XUA, XTS, XXX).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_EVEN, Decimal

from domain.errors import InvalidArgument

_ZERO = "BIF CLP DJF GNF ISK JPY KMF KRW PYG RWF UGX VND VUV XAF XOF XPF"
_THREE = "BHD IQD JOD KWD LYD OMR TND"
_TWO = (
    "AED AFN ALL AMD ANG AOA ARS AUD AWG AZN BAM BBD BDT BGN BMD BND BOB BRL BSD BTN BWP BYN BZD "
    "CAD CDF CHF CNY COP CRC CUP CVE CZK DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD "
    "GTQ GYD HKD HNL HTG HUF IDR ILS INR IRR JMD KES KGS KHR KPW KYD KZT LAK LBP LKR LRD LSL MAD "
    "MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MYR MZN NAD NGN NIO NOK NPR NZD PAB PEN PGK PHP "
    "PKR PLN QAR RON RSD RUB SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS "
    "TMT TOP TRY TTD TWD TZS UAH USD UYU UZS VED VES WST XCD XCG YER ZAR ZMW ZWG"
)
MINOR_UNITS: Mapping[str, int] = {
    **{c: 0 for c in _ZERO.split()},
    **{c: 2 for c in _TWO.split()},
    **{c: 3 for c in _THREE.split()},
}


def check_currency(code: str, field: str = "currency") -> str:
    """``code`` if the ledger accepts it, else InvalidArgument naming ``field``."""
    if not isinstance(code, str) or code not in MINOR_UNITS:
        shown = code[:8] if isinstance(code, str) else type(code).__name__
        raise InvalidArgument(field, "BAD_CURRENCY",
                              f"must be an ISO 4217 currency code such as EUR, got {shown!r}")
    return code


def minor_unit(code: str) -> int | None:
    """The decimals of ``code`` (None for a code outside the table)."""
    return MINOR_UNITS.get(code)


def major(amount: Decimal | int, code: str) -> str:
    """An amount in minor units as a decimal number of major units, with the currency's
    decimals (an amount with a fraction of a minor unit, e.g. a theoretical win, is rounded
    half to even to them); a code outside the table keeps minor units."""
    digits = MINOR_UNITS.get(code)
    if digits is None:
        return str(amount)
    value = Decimal(amount).scaleb(-digits)
    shown = value.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN)
    return str(abs(shown) if shown == 0 else shown)  # never "-0.00"


def format_minor(amount: Decimal | int, code: str) -> str:
    """``50000, "EUR"`` -> ``"500.00 EUR"``; a code outside the table: ``"50000 minor XYZ"``."""
    if code not in MINOR_UNITS:
        return f"{amount} minor{' ' + code if code else ''}"
    return f"{major(amount, code)} {code}"

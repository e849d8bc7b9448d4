"""Read models (projections) of the ledger's event log: bankrolls, shoe state, game recall and
reconciliation; their rebuild, the reconcile check against the write side, and reports."""

from __future__ import annotations

from services.projections.bankrolls import BankrollView
from services.projections.projector import Lag, Projector
from services.projections.recall import RecallView
from services.projections.reconciliation import ReconciliationView
from services.projections.shoes import ShoeStateView
from services.projections.view import View


def default_views() -> list[View]:
    """Every read model, in a fixed order."""
    return [BankrollView(), ShoeStateView(), RecallView(), ReconciliationView()]


__all__ = [
    "BankrollView",
    "Lag",
    "Projector",
    "RecallView",
    "ReconciliationView",
    "ShoeStateView",
    "View",
    "default_views",
]

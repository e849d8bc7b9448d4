"""Trente et Quarante on the ledger: its registry entry (``game.py``); its rule book is
``domain/trente_et_quarante/``."""

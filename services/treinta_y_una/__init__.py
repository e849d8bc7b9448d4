"""Treinta y Una on the ledger (RULES.md §2, seed 003): the round aggregate (``round``), its
commands and queries (``commands``), its answers (``views``). The rules are the rule book's
(``domain/treinta_y_una/``); face-down cards are kept by ``services/ledger/hidden.py``."""

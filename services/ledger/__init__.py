"""The event-sourced ledger: tables, shoes, coups and double-entry accounts (see api.py)."""

"""Cuarenta on the ledger (issue 14): the match aggregate, its commands and its views.

The rules are the rule book's (``domain/cuarenta/``): this package records what it decides.

- ``match``: the ``CuarentaMatch`` aggregate and its events
  (topics ``sabot.ledger:CuarentaMatch.…``);
- ``views``: what the commands and queries answer (public: no card in a hand);
- ``commands``: the commands, run by the ledger's single writer with the core services
  (accounts and double-entry postings, request ids with the actor, a committed shoe per hand).
"""

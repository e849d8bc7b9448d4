"""Cuarenta (seed 001, RULES.md §3): the capture game to 40 points, as a rule book.

Pure and deterministic, like the rest of ``domain``: no I/O, no clock, no global random. It uses
the shared modules (cards, shuffle, errors) and no other game's.

- ``rules``: the options (``CuarentaRules``), their defaults, presets and sources;
- ``ranks``: the 40 cards, the rank order, which ranks sum, the pack of a hand;
- ``captures``: every legal capture set of a card on a table, its kind and points;
- ``scoring``: tantos and perros, the cartón, the ronda, the 38-point rule;
- ``match``: the match as a state machine (``open_match``, ``begin_hand``, ``deal``, ``play``,
  ``forfeit``) and its ``facts``;
- ``stakes``: the money: stakes held, the winner paid, the house's commission;
- ``policy``: a simple way to play, for demonstrations and tests.
"""

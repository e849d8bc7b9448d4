"""Treinta y Una (RULES.md §2, seed 003): the rule book, pure and deterministic.

- ``hand``: what a hand is worth (aces 1 or 11, the treinta y una real, over 31);
- ``rules``: the table's options as data, with their defaults, sources and presets;
- ``banker``: the bank drawn by lot for the first game, then passed to whoever made 31;
- ``round``: one game (juego) as a state machine driven by commands, each a pure function
  ``(rules, round, input) -> Step`` (the new round, the facts, the money movements);
- ``settlement``: the showdown, the collections and payments, the house commission;
- ``odds`` and ``montecarlo``: exact figures of the first three cards, and the banker's edge
  simulated through the real engine.

It imports only what every game shares (``domain.cards``, ``drbg``, ``shuffle``, ``errors``),
never another game's modules. docs/treinta-y-una.md describes it.
"""

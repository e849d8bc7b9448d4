"""Trente et Quarante (RULES.md §1, seeds 000, 002, 004): the rule book, pure and deterministic.

- ``chances``, ``layout``: the four chances, stakes and their states, every betting step as a
  pure function (the layout after it, the fates, the money movements by role);
- ``deal``, ``outcome``, ``announcements``: the two rows dealt from the sabot, the coup's result
  and the croupier's words;
- ``rules``: the house rules as data (options, presets); ``settlement``: the coup settled;
- ``money``: the partage's half and the insurance premium; ``odds``, ``french_odds``,
  ``montecarlo``: exact figures, the French shoes' laws, the simulation through the engine.

It imports only what every game shares (``domain.cards``, ``drbg``, ``shuffle``, ``errors``,
``currency``), never another game's modules.
"""

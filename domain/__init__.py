"""Sabot's rule book: pure, deterministic game logic (no I/O, no clock, no global random)."""

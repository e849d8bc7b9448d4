"""Regulators: Merkle log, signed checkpoints, seed escrow, canonical export and replay."""

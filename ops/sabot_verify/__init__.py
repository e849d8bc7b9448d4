"""sabot-verify: the standalone verifier of Sabot exports (stdlib and cryptography only)."""
__version__ = "0.1.0"

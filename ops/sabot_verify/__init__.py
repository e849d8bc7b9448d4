"""sabot-verify: the standalone verifier of Sabot exports (stdlib and cryptography only)."""

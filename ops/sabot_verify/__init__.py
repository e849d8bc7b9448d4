"""sabot-verify: the standalone verifier of Sabot exports (standard library and cryptography only)."""

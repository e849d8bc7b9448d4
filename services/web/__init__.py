"""The web console (``sabot web``): a client of the gRPC API for regulators, back offices and
players, in a browser. Every session acts with its user's own credential, kept on this side of
the session (the browser holds only a random session id); the console holds no key of the
ledger and sees what the API lets that credential see (docs/web.md)."""

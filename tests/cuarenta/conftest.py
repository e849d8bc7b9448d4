"""The API tests' real server (``tests/api/conftest.py``: SQLite, PostgreSQL as the restricted
server role, and SQLite through the ledger process's socket), for Cuarenta's gRPC tests."""

from api.conftest import api  # noqa: F401  (the fixture, served here too)

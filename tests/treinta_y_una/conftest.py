"""The API tests' real server (tests/api/conftest.py), on SQLite, PostgreSQL and the ledger
process, for Treinta y Una's gRPC tests."""

from tests.api.conftest import api  # noqa: F401  # the fixture, by name

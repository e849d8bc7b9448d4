"""The API tests' real server is tests/conftest.py's ``api`` fixture (one per store for the
session, shared with tests/api)."""

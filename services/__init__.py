"""Sabot's edges: the event-sourced ledger, the gRPC API, projections and the command line."""

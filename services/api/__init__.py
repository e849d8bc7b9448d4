"""The gRPC API (sabot.v1): server, servicers, authentication, error mapping, logging, config."""

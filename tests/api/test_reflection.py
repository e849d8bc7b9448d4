"""Server reflection under both names (issue 22): grpc.reflection.v1 (what current grpcurl, buf
curl and Postman ask first) and v1alpha, each listing every service and describing a file."""

from __future__ import annotations

import pytest
from google.protobuf import descriptor_pb2
from grpc_reflection.v1alpha import reflection_pb2

from .support import Api

NAMES = ("grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection")


@pytest.mark.parametrize("service", NAMES)
def test_reflection_lists_and_describes(api: Api, service: str) -> None:
    client = api.anonymous()
    try:
        call = client.channel.stream_stream(
            f"/{service}/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString)
        answers = list(call(iter([
            reflection_pb2.ServerReflectionRequest(list_services=""),
            reflection_pb2.ServerReflectionRequest(
                file_containing_symbol="sabot.v1.CashierService")])))
        names = {s.name for s in answers[0].list_services_response.service}
        assert {"sabot.v1.CashierService", "grpc.health.v1.Health", *NAMES} <= names
        files = {f.name: f for f in map(descriptor_pb2.FileDescriptorProto.FromString,
                                         answers[1].file_descriptor_response
                                         .file_descriptor_proto)}
        cashier = files["sabot/v1/cashier.proto"]
        comments = " ".join(loc.leading_comments for loc in cashier.source_code_info.location)
        assert "Cash in at the cage." in comments, comments[:300]  # the API's documentation
    finally:
        client.close()

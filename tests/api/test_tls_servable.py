"""A server certificate gRPC's TLS can serve (issue 22 item 6): grpcio 1.85 loads an Ed25519
certificate and then completes no handshake with it (NO_COMMON_SIGNATURE_ALGORITHMS), so
``sabot serve`` refuses one at start, naming the fix; ``ops/container/secrets.sh`` makes a
P-256 pair, which serves."""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from concurrent import futures
from datetime import UTC, datetime, timedelta
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519
from cryptography.x509.oid import NameOID
from grpc_health.v1 import health, health_pb2, health_pb2_grpc

import services.cli as cli
from services.api import tls
from services.api.tls import ServerFiles, TlsError

ROOT = Path(__file__).resolve().parents[2]


def _self_signed(folder: Path, key: ed25519.Ed25519PrivateKey | ec.EllipticCurvePrivateKey
                 ) -> tuple[Path, Path]:
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.now(UTC)
    algorithm = None if isinstance(key, ed25519.Ed25519PrivateKey) else hashes.SHA256()
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - timedelta(minutes=1)).not_valid_after(now + timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), False)
            .sign(key, algorithm))
    crt, pem = folder / "server.crt", folder / "server.key"
    crt.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pem.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                      serialization.PrivateFormat.PKCS8,
                                      serialization.NoEncryption()))
    pem.chmod(0o600)
    return crt, pem


def _serving(credentials: grpc.ServerCredentials) -> Iterator[int]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    health_pb2_grpc.add_HealthServicer_to_server(health.HealthServicer(), server)
    port = server.add_secure_port("127.0.0.1:0", credentials)
    server.start()
    try:
        yield port
    finally:
        server.stop(None)


def _check(port: int, ca: Path) -> bool:
    channel = grpc.secure_channel(f"localhost:{port}", tls.channel_credentials(ca=ca))
    try:
        answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(),
                                                           timeout=5)
        return bool(answer.status == health_pb2.HealthCheckResponse.SERVING)
    except grpc.RpcError as exc:
        assert exc.code() in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED)
        return False
    finally:
        channel.close()


def test_an_ed25519_certificate_is_refused_at_start(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    crt, key = _self_signed(tmp_path, ed25519.Ed25519PrivateKey.generate())
    # what the refusal spares: gRPC loads the pair, then no handshake completes
    for port in _serving(grpc.ssl_server_credentials([(key.read_bytes(), crt.read_bytes())])):
        assert _check(port, crt) is False
    with pytest.raises(TlsError, match=rf"^--tls-cert: {crt}: an Ed25519 certificate, which "
                                       "gRPC's TLS completes no handshake with "
                                       r"\(NO_COMMON_SIGNATURE_ALGORITHMS\); use an ECDSA P-256"):
        ServerFiles(crt, key).load()
    code = cli.main(["serve", "--tls-cert", str(crt), "--tls-private-key", str(key),
                     "--tokens", "sabot_" + "x1y2z3w4" * 6 + ":admin", "--seal-key", "ab" * 32,
                     "--chain-private-key", "cd" * 32, "--single-process", "--store",
                     f"sqlite:///{tmp_path}/s.db", "--env-file", str(tmp_path / "none"),
                     "--listen", "127.0.0.1:0", "--projections", "off", "--turn-clock", "off"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"sabot: error: --tls-cert: {crt}: an Ed25519 certificate")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_the_pair_secrets_sh_makes_serves(tmp_path: Path) -> None:
    script = (ROOT / "ops/container/secrets.sh").read_text()
    found = re.search(r"^\s*(openssl req .*?-out secrets/server\.crt)$", script,
                      re.MULTILINE | re.DOTALL)
    assert found, "secrets.sh makes no TLS pair with openssl req"
    command = found.group(1).replace("\\\n", " ").replace("secrets/", f"{tmp_path}/")
    subprocess.run(["sh", "-c", command], check=True, capture_output=True, timeout=60)
    crt, key = tmp_path / "server.crt", tmp_path / "server.key"
    certificate = x509.load_pem_x509_certificate(crt.read_bytes())
    public = certificate.public_key()
    assert isinstance(public, ec.EllipticCurvePublicKey) and public.curve.name == "secp256r1"
    files = ServerFiles(crt, key)
    files.load()
    for port in _serving(tls.server_credentials(files)):
        assert _check(port, crt) is True


def test_a_p256_certificate_serves(tmp_path: Path) -> None:
    crt, key = _self_signed(tmp_path, ec.generate_private_key(ec.SECP256R1()))
    for port in _serving(tls.server_credentials(ServerFiles(crt, key))):
        assert _check(port, crt) is True

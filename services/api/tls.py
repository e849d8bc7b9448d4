"""TLS and mTLS: the server's credentials (re-read when the files change, without a restart),
the clients' channels, and the rule that a plaintext listener stays on loopback.

``sabot serve --tls-cert FILE --tls-private-key FILE [--tls-client-ca FILE]`` serves TLS; with
a client CA every client must present a certificate that CA signed (and a certificate named in
the credentials file stands for its principal). Clients take ``--tls-ca FILE
[--tls-client-cert FILE --tls-client-private-key FILE]``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc

from services.files import FileTrustError, check_trusted

LOOPBACK_NAMES = frozenset({"localhost", "ip6-localhost", "ip6-loopback"})


class TlsError(ValueError):
    """A TLS setting that cannot be used; the message is one line naming the setting."""


def host_of(listen: str) -> str:
    """The host of ``HOST:PORT`` (``[::1]:50051`` → ``::1``)."""
    host = listen.rsplit(":", 1)[0] if ":" in listen else listen
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host


def is_loopback(listen: str) -> bool:
    """Whether a listen address only accepts connections from this machine."""
    host = host_of(listen).lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name (or an empty host, every interface): not loopback


def _read(path: Path | str, setting: str) -> bytes:
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TlsError(f"{setting}: cannot read {path}: {exc.strerror or exc}") from None
    if b"-----BEGIN" not in data:
        raise TlsError(f"{setting}: {path} is not a PEM file")
    return data


@dataclass(frozen=True)
class ServerFiles:
    """The server's certificate chain and key, and the CA of client certificates (mTLS)."""

    cert: Path
    key: Path
    client_ca: Path | None = None

    def load(self) -> tuple[bytes, bytes, bytes | None]:
        cert = _read(self.cert, "--tls-cert")
        try:
            check_trusted(self.key, folder=True, what="the key file")
        except FileTrustError as exc:
            raise TlsError(f"--tls-private-key: {exc}") from None
        key = _read(self.key, "--tls-private-key")
        ca = None if self.client_ca is None else _read(self.client_ca, "--tls-client-ca")
        _check_pair(cert, key)
        _check_servable(cert, self.cert)
        return cert, key, ca

    def stamp(self) -> tuple[tuple[int, int, int] | None, ...]:
        out: list[tuple[int, int, int] | None] = []
        for path in (self.cert, self.key, self.client_ca):
            if path is None:
                continue
            try:
                st = Path(path).stat()
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)


def _check_pair(cert: bytes, key: bytes) -> None:
    """The key is the certificate's (else the server would fail every handshake, silently)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        certificate = x509.load_pem_x509_certificates(cert)[0]
        private = serialization.load_pem_private_key(key, password=None)
    except (ValueError, TypeError) as exc:
        raise TlsError(f"--tls-cert/--tls-private-key: cannot load them: {exc}") from None
    pem = serialization.Encoding.PEM
    spki = serialization.PublicFormat.SubjectPublicKeyInfo
    if certificate.public_key().public_bytes(pem, spki) != private.public_key().public_bytes(
            pem, spki):
        raise TlsError("--tls-private-key: not the key of the --tls-cert certificate")


# gRPC's TLS (BoringSSL, grpcio 1.85) loads an Ed25519 or Ed448 server certificate, and then
# completes no handshake with it (NO_COMMON_SIGNATURE_ALGORITHMS).
MAKE_P256 = ("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "
             "server.key -out server.crt ...")


def _check_servable(cert: bytes, path: Path) -> None:
    """TlsError for a server certificate gRPC's TLS completes no handshake with (its key, or
    the signature over it, is Ed25519 or Ed448): ECDSA P-256 or RSA serve."""
    from cryptography import x509
    from cryptography.hazmat.primitives.asymmetric import ed448, ed25519
    from cryptography.x509.oid import SignatureAlgorithmOID

    certificate = x509.load_pem_x509_certificates(cert)[0]
    key = certificate.public_key()
    kind = None
    if isinstance(key, ed25519.Ed25519PublicKey):
        kind = "Ed25519"
    elif isinstance(key, ed448.Ed448PublicKey):
        kind = "Ed448"
    elif certificate.signature_algorithm_oid in (SignatureAlgorithmOID.ED25519,
                                                 SignatureAlgorithmOID.ED448):
        kind = "EdDSA-signed"
    if kind is not None:
        raise TlsError(f"--tls-cert: {path}: an {kind} certificate, which gRPC's TLS completes "
                       "no handshake with (NO_COMMON_SIGNATURE_ALGORITHMS); use an ECDSA P-256 "
                       f"or RSA pair ({MAKE_P256})")


def server_credentials(files: ServerFiles,
                       on_reload: Any = None) -> grpc.ServerCredentials:
    """TLS credentials that read the files again when they change (checked at each new
    connection): a renewed certificate is served without a restart. A renewed pair that does
    not load is refused (logged through ``on_reload``) and the one in force stays."""
    cert, key, ca = files.load()
    lock = threading.Lock()
    seen = [files.stamp()]

    def config(c: bytes, k: bytes, a: bytes | None) -> Any:
        return grpc.ssl_server_certificate_configuration([(k, c)], root_certificates=a)

    def fetch() -> Any:
        stamp = files.stamp()
        with lock:
            if stamp == seen[0]:
                return None
            seen[0] = stamp
        try:
            fresh = files.load()
        except TlsError as exc:
            if on_reload is not None:
                on_reload("tls reload refused; the certificate in force stays",
                          {"level": "error", "error": str(exc)})
            return None
        if on_reload is not None:
            on_reload("tls certificate reloaded", {"level": "info", "cert": str(files.cert)})
        return config(*fresh)

    return grpc.dynamic_ssl_server_credentials(
        config(cert, key, ca), fetch, require_client_authentication=ca is not None)


Pem = Path | str | bytes  # a PEM file's path, or its bytes


def channel_credentials(ca: Pem | None = None, cert: Pem | None = None,
                        key: Pem | None = None) -> grpc.ChannelCredentials:
    """A client's TLS credentials: the CA that signed the server's certificate (None: the
    system's roots), and for mTLS its own certificate and key."""
    if (cert is None) != (key is None):
        raise TlsError("--tls-client-cert and --tls-client-private-key go together")

    def data(value: Pem | None, setting: str) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        return _read(value, setting)

    return grpc.ssl_channel_credentials(
        root_certificates=data(ca, "--tls-ca"),
        private_key=data(key, "--tls-client-private-key"),
        certificate_chain=data(cert, "--tls-client-cert"))


def open_channel(target: str, tls: grpc.ChannelCredentials | None = None,
                 options: Sequence[tuple[str, Any]] = ()) -> grpc.Channel:
    """A channel to ``target``: TLS when given credentials, else plaintext."""
    if tls is None:
        return grpc.insecure_channel(target, options=list(options))
    return grpc.secure_channel(target, tls, options=list(options))


def certificate_names(auth_context: Mapping[str, Any]) -> list[str]:
    """The names a client certificate goes by: its subject CN, then its SANs."""
    names: list[str] = []
    for key in ("x509_common_name", "x509_subject_alternative_name"):
        for value in auth_context.get(key, ()):
            with contextlib.suppress(UnicodeDecodeError):
                names.append(value.decode("utf-8"))
    return names

"""``read_key``: every key setting is read by one function, 64 hex digits or a file holding them
(a PEM file too for the asymmetric kinds), and its errors never hold what they were given."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519, x25519
from hypothesis import given, settings
from hypothesis import strategies as st

from services.settings import KeyKind, public_of, read_key

ED = ed25519.Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
X = x25519.X25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
PKCS8 = (serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
         serialization.NoEncryption())
SPKI = (serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def _raw(kind: KeyKind) -> bytes:
    return {
        KeyKind.SEAL: bytes(range(32)),
        KeyKind.ED25519_PRIVATE: ED.private_bytes_raw(),
        KeyKind.ED25519_PUBLIC: ED.public_key().public_bytes_raw(),
        KeyKind.X25519_PRIVATE: X.private_bytes_raw(),
        KeyKind.X25519_PUBLIC: X.public_key().public_bytes_raw(),
    }[kind]


def _pem(kind: KeyKind) -> bytes:
    return {
        KeyKind.ED25519_PRIVATE: ED.private_bytes(*PKCS8),
        KeyKind.ED25519_PUBLIC: ED.public_key().public_bytes(*SPKI),
        KeyKind.X25519_PRIVATE: X.private_bytes(*PKCS8),
        KeyKind.X25519_PUBLIC: X.public_key().public_bytes(*SPKI),
    }[kind]


@pytest.mark.parametrize("kind", list(KeyKind))
def test_hex_a_file_of_hex_and_pem_give_the_same_key(kind: KeyKind, tmp_path: Path) -> None:
    raw = _raw(kind)
    assert read_key(raw.hex(), kind) == raw
    assert read_key(raw.hex().upper(), kind) == raw
    assert read_key(f"  {raw.hex()}\n", kind) == raw
    hexfile = tmp_path / "k.hex"
    hexfile.write_text(raw.hex() + "\n")
    assert read_key(str(hexfile), kind) == raw
    if kind.pem:
        pem = tmp_path / "k.pem"
        pem.write_bytes(_pem(kind))
        assert read_key(str(pem), kind) == raw


def test_a_seal_key_is_never_a_pem_file(tmp_path: Path) -> None:
    pem = tmp_path / "k.pem"
    pem.write_bytes(_pem(KeyKind.ED25519_PRIVATE))
    with pytest.raises(ValueError, match="a PEM file"):
        read_key(str(pem), KeyKind.SEAL)


@pytest.mark.parametrize("kind,wrong", [
    (KeyKind.ED25519_PRIVATE, KeyKind.X25519_PRIVATE),
    (KeyKind.X25519_PRIVATE, KeyKind.ED25519_PRIVATE),
    (KeyKind.ED25519_PUBLIC, KeyKind.X25519_PUBLIC),
    (KeyKind.X25519_PUBLIC, KeyKind.ED25519_PUBLIC),
    (KeyKind.ED25519_PUBLIC, KeyKind.ED25519_PRIVATE),  # a private key where a public one goes
    (KeyKind.X25519_PRIVATE, KeyKind.X25519_PUBLIC),
])
def test_a_pem_file_of_another_kind_is_refused(kind: KeyKind, wrong: KeyKind,
                                               tmp_path: Path) -> None:
    pem = tmp_path / "k.pem"
    pem.write_bytes(_pem(wrong))
    with pytest.raises(ValueError, match=f"not {kind.value}") as caught:
        read_key(str(pem), kind)
    assert "PRIVATE" not in str(caught.value) and "BEGIN" not in str(caught.value)


def test_the_public_half(tmp_path: Path) -> None:
    assert public_of(ED.private_bytes_raw()) == ED.public_key().public_bytes_raw()
    assert public_of(X.private_bytes_raw(), KeyKind.X25519_PRIVATE) == \
        X.public_key().public_bytes_raw()


SECRET = "5ecre7" * 10 + "abcd"  # 64 characters, not all hex: looks like a mistyped key


@pytest.mark.parametrize("kind", list(KeyKind))
@pytest.mark.parametrize("text", [
    SECRET, SECRET[:63], "ab" * 31, "ab" * 33, "ab" * 16, "/no/such/" + SECRET, "",
    "x" * 5000, "a\0b" + SECRET,
])
def test_an_error_never_holds_the_text(kind: KeyKind, text: str) -> None:
    with pytest.raises(ValueError) as caught:
        read_key(text, kind)
    message = str(caught.value)
    assert "\n" not in message and message
    if text.strip():
        assert text.strip() not in message
        assert SECRET[:16] not in message


@pytest.mark.parametrize("kind", list(KeyKind))
def test_an_error_never_holds_what_the_file_holds(kind: KeyKind, tmp_path: Path) -> None:
    for content in (SECRET, "ab" * 31, "ab" * 33, _raw(kind).hex() + "zz",
                    "-----BEGIN PRIVATE KEY-----\n" + SECRET + "\n-----END PRIVATE KEY-----\n"):
        path = tmp_path / "k"
        path.write_text(content)
        with pytest.raises(ValueError) as caught:
            read_key(str(path), kind)
        message = str(caught.value)
        assert SECRET[:16] not in message and "ababab" not in message
        assert str(path) in message  # a file that exists is named


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=8, max_size=100))
def test_no_text_ever_comes_back_in_an_error(text: str) -> None:
    try:
        if len(text.strip()) < 8 or Path(text.strip()).exists():
            return  # too short to be a secret; a file's path is named
    except (OSError, ValueError):
        pass
    for kind in KeyKind:
        try:
            read_key(text, kind)
        except ValueError as exc:
            assert text.strip() not in str(exc)

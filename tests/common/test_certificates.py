"""Certificates for TLS: made per job, loaded from the user's files, every bad input one line."""

from __future__ import annotations

from pathlib import Path
import re

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
import pytest

from disauto.common.certificates import CertificateError
from disauto.common.certificates import generate
from disauto.common.certificates import load


def write_pair(folder: Path, name: str = "pair") -> tuple[Path, Path]:
    identity = generate(name, hosts=("10.0.0.7", "node-1"))
    cert, key = folder / f"{name}.crt", folder / f"{name}.key"
    cert.write_bytes(identity.cert_pem)
    key.write_bytes(identity.key_pem)
    return cert, key


def test_a_generated_certificate_loads_back_with_its_name(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path, "disauto-framework")
    identity = load(cert, key)
    assert identity.server_name == "disauto-framework"
    assert identity.cert_pem.startswith(b"-----BEGIN CERTIFICATE-----")
    assert re.fullmatch(r"([0-9A-F]{2}:){31}[0-9A-F]{2}", identity.fingerprint)


def test_two_generated_certificates_differ() -> None:
    assert generate("a").fingerprint != generate("a").fingerprint


def test_a_key_of_another_certificate_is_refused(tmp_path: Path) -> None:
    cert, _ = write_pair(tmp_path, "one")
    _, other_key = write_pair(tmp_path, "two")
    with pytest.raises(CertificateError, match="is not the key of the certificate") as err:
        load(cert, other_key)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize(("which", "content", "message"), [
    ("cert", None, "--tls-cert .*: no such file"),
    ("key", None, "--tls-key .*: no such file"),
    ("cert", b"hello", "--tls-cert .*: not a PEM certificate"),
    ("key", b"hello", "--tls-key .*: not a PEM private key"),
])
def test_missing_and_garbled_files_are_one_line_errors(tmp_path: Path, which: str,
                                                       content: bytes | None,
                                                       message: str) -> None:
    cert, key = write_pair(tmp_path)
    target = cert if which == "cert" else key
    if content is None:
        target.unlink()
    else:
        target.write_bytes(content)
    with pytest.raises(CertificateError, match=message) as err:
        load(cert, key)
    assert "\n" not in str(err.value)


def test_an_unreadable_file_is_a_one_line_error(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path)
    with pytest.raises(CertificateError, match="--tls-key .*: cannot read it"):
        load(cert, tmp_path)  # a folder: reading it fails whoever runs the test


def test_an_encrypted_key_is_refused(tmp_path: Path) -> None:
    cert, key = write_pair(tmp_path)
    private = serialization.load_pem_private_key(key.read_bytes(), password=None)
    assert isinstance(private, ec.EllipticCurvePrivateKey)
    key.write_bytes(private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.BestAvailableEncryption(b"passphrase")))
    with pytest.raises(CertificateError, match="encrypted"):
        load(cert, key)

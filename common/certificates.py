"""TLS key material for the gRPC services: self-signed certificates, and a user's own pair.

``da-submit --tls`` makes one self-signed certificate per job (the framework's), and every
AppCore makes its own when it starts (its private key never leaves its process). ``--tls-cert``
and ``--tls-key`` give the user's own pair instead, checked here before anything starts: every
problem is one ``CertificateError`` line. Clients trust exactly the certificate they are given
(no system CA) and check the name in it (``server_name``), not the host they dial.
"""

from __future__ import annotations

from dataclasses import dataclass
import datetime
import hashlib
import ipaddress
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


__all__ = ["CertificateError", "Identity", "fingerprint", "generate", "load", "server_name_of"]

VALIDITY = datetime.timedelta(days=365)
"""How long a self-signed certificate is valid (a resumed job reuses its framework's)."""


class CertificateError(ValueError):
    """A certificate or key cannot be used; the message is one line naming the file."""


@dataclass(frozen=True)
class Identity:
    """A server's certificate (PEM, possibly a chain), its private key (PEM) and its name."""

    cert_pem: bytes
    key_pem: bytes
    server_name: str
    """The name clients check in the certificate (a DNS name or IP of its SAN, or its CN)."""

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.cert_pem)


def generate(server_name: str, *, hosts: tuple[str, ...] = ()) -> Identity:
    """A new self-signed certificate (ECDSA P-256) naming ``server_name`` and ``hosts``."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, server_name)])
    now = datetime.datetime.now(datetime.UTC)
    names = [_general_name(name) for name in dict.fromkeys((server_name, *hosts)) if name]
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return Identity(cert.public_bytes(serialization.Encoding.PEM), key_pem, server_name)


def _general_name(name: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(name))
    except ValueError:
        return x509.DNSName(name)


def load(cert_file: str | Path, key_file: str | Path, *,
         cert_flag: str = "--tls-cert", key_flag: str = "--tls-key") -> Identity:
    """The user's pair, checked: both readable PEM, the key unencrypted and the certificate's.

    Raises:
        CertificateError: one line naming the flag and the file.
    """
    cert_pem = _read(cert_file, cert_flag)
    key_pem = _read(key_file, key_flag)
    try:
        certs = x509.load_pem_x509_certificates(cert_pem)
    except ValueError:
        raise CertificateError(f"{cert_flag} {cert_file}: not a PEM certificate") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except TypeError:
        raise CertificateError(f"{key_flag} {key_file}: the key is encrypted; give it "
                               "without a passphrase (keep the file private)") from None
    except ValueError:
        raise CertificateError(f"{key_flag} {key_file}: not a PEM private key") from None
    if not _matches(certs[0], key):
        raise CertificateError(f"{key_flag} {key_file} is not the key of the certificate "
                               f"in {cert_flag} {cert_file}")
    now = datetime.datetime.now(datetime.UTC)
    if certs[0].not_valid_after_utc < now:
        raise CertificateError(f"{cert_flag} {cert_file}: the certificate expired on "
                               f"{certs[0].not_valid_after_utc:%Y-%m-%d}")
    return Identity(cert_pem, key_pem, server_name_of(certs[0], cert_flag, cert_file))


def _read(path: str | Path, flag: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except FileNotFoundError:
        raise CertificateError(f"{flag} {path}: no such file") from None
    except OSError as err:
        raise CertificateError(f"{flag} {path}: cannot read it ({err.strerror})") from None


def _matches(cert: x509.Certificate, key: object) -> bool:
    public = getattr(key, "public_key", None)
    if public is None:
        return False
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return bool(public().public_bytes(*fmt) == cert.public_key().public_bytes(*fmt))


def server_name_of(cert: x509.Certificate, flag: str = "--tls-cert",
                   path: str | Path = "") -> str:
    """The name clients check: the first DNS name or IP of the SAN, else the CN.

    Raises:
        CertificateError: the certificate names nothing.
    """
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        for name in (*san.get_values_for_type(x509.DNSName),
                     *(str(ip) for ip in san.get_values_for_type(x509.IPAddress))):
            return str(name)
    except x509.ExtensionNotFound:
        pass
    common = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    if common:
        return str(common[0].value)
    raise CertificateError(f"{flag} {path}: the certificate names no host (no SAN, no CN)")


def fingerprint(cert_pem: bytes) -> str:
    """SHA-256 of the (first) certificate's DER, as ``AB:CD:...`` (what ``openssl x509
    -fingerprint -sha256`` prints)."""
    cert = x509.load_pem_x509_certificates(cert_pem)[0]
    digest = hashlib.sha256(cert.public_bytes(serialization.Encoding.DER)).hexdigest().upper()
    return ":".join(digest[i:i + 2] for i in range(0, len(digest), 2))


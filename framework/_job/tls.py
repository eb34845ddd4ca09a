"""The job's TLS identity in its folder: written once, reused by ``da-job resume``.

The framework's certificate and private key live in ``<job folder>/tls/`` (the folder 0700,
the key 0600), beside the job token, and nowhere else: tasks get the certificate alone
(``task_env.FRAMEWORK_CERT``), never the key, and the record (``job.db``) keeps only its
fingerprint. A resumed job serves the same certificate, so AppCore and runners still running
(which trust exactly that certificate) reach the new framework.
"""

from __future__ import annotations

import os
from pathlib import Path

from disauto.common import paths
from disauto.common.certificates import Identity
from disauto.common.certificates import load


def keep(job_dir: Path, identity: Identity) -> None:
    """Write ``identity`` into the job folder (key 0600, folder 0700)."""
    folder = job_dir / paths.TLS
    folder.mkdir(mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    _write(folder / paths.TLS_CERT, identity.cert_pem, 0o644)
    _write(folder / paths.TLS_KEY, identity.key_pem, 0o600)


def kept(job_dir: Path) -> Identity | None:
    """The identity a job was started with; None for a job without TLS.

    Raises:
        CertificateError: the files are there but unusable (one line).
    """
    folder = job_dir / paths.TLS
    if not (folder / paths.TLS_CERT).exists():
        return None
    return load(folder / paths.TLS_CERT, folder / paths.TLS_KEY,
                cert_flag="the job's certificate", key_flag="the job's key")


def _write(path: Path, data: bytes, mode: int) -> None:
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(data)
    os.chmod(path, mode)

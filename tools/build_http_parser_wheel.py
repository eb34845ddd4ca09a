"""Build a pure-Python wheel of http-parser 0.9.0 so pymesos 0.3.15 installs on Python >= 3.11.

pymesos 0.3.15 declares ``http-parser`` as a dependency. PyPI has only an sdist of
http-parser 0.9.0, and its C extension does not build on CPython 3.11 (``longintrepr.h``) nor
its ``setup.py`` run on 3.12+ (``imp``). pymesos does not need the extension:
``http_parser/http.py`` falls back to the pure-Python ``http_parser.pyparser`` when the compiled
parser cannot be imported.

This script downloads the pinned sdist through pip (so pip's index configuration and proxies
apply), checks its SHA-256, and packs only the pure-Python modules, unmodified, into
``http_parser-0.9.0-py3-none-any.whl`` in the output folder. ``pip install --find-links <folder>``
then resolves pymesos' dependency to that wheel, reproducibly, without compiling anything.

Usage: ``python tools/build_http_parser_wheel.py [--out build/wheels]``
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
from pathlib import Path
import subprocess
import sys
import tarfile
import tempfile
import zipfile


NAME = "http_parser"
VERSION = "0.9.0"
SDIST = f"http-parser-{VERSION}.tar.gz"
SDIST_SHA256 = "441d3a57c6227230f98aa97539da006fda0f8f4880bc4c5cd895ff2138a52621"
PURE_MODULES = ("__init__.py", "http.py", "pyparser.py", "reader.py", "util.py", "_socketio.py")
WHEEL_NAME = f"{NAME}-{VERSION}-py3-none-any.whl"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
    return "sha256=" + digest.decode("ascii")


def download_sdist(dest: Path) -> Path:
    """Fetch the pinned sdist with pip and verify its hash."""
    cmd = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
        "--no-binary", ":all:", f"http-parser=={VERSION}", "-d", str(dest),
    ]
    subprocess.run(cmd, check=True)
    path = dest / SDIST
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SDIST_SHA256:
        raise SystemExit(f"{SDIST}: sha256 {digest} does not match the pinned {SDIST_SHA256}")
    return path


def build_wheel(sdist: Path, out_dir: Path) -> Path:
    """Pack the pure-Python modules of the sdist into a py3-none-any wheel."""
    files: dict[str, bytes] = {}
    with tarfile.open(sdist) as tar:
        for module in PURE_MODULES:
            member = tar.extractfile(f"http-parser-{VERSION}/{NAME}/{module}")
            if member is None:
                raise SystemExit(f"{sdist.name} lacks {NAME}/{module}")
            files[f"{NAME}/{module}"] = member.read()
        license_member = tar.extractfile(f"http-parser-{VERSION}/LICENSE")
        license_text = license_member.read() if license_member else b""
    dist_info = f"{NAME}-{VERSION}.dist-info"
    files[f"{dist_info}/METADATA"] = (
        "Metadata-Version: 2.1\n"
        "Name: http-parser\n"
        f"Version: {VERSION}\n"
        "Summary: http request/response parser (pure-Python part only, built by DisAuto)\n"
        "License: MIT\n"
    ).encode()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: disauto-build-http-parser-wheel\n"
        b"Root-Is-Purelib: true\nTag: py3-none-any\n"
    )
    files[f"{dist_info}/LICENSE"] = license_text
    files[f"{dist_info}/top_level.txt"] = f"{NAME}\n".encode()
    record = io.StringIO()
    for name, data in files.items():
        record.write(f"{name},{_record_hash(data)},{len(data)}\n")
    record.write(f"{dist_info}/RECORD,,\n")
    files[f"{dist_info}/RECORD"] = record.getvalue().encode()

    out_dir.mkdir(parents=True, exist_ok=True)
    wheel = out_dir / WHEEL_NAME
    tmp = wheel.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=(2020, 4, 7, 0, 0, 0))
            info.external_attr = 0o644 << 16
            zf.writestr(info, data, zipfile.ZIP_DEFLATED)
    tmp.replace(wheel)
    return wheel


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="build/wheels", type=Path, help="wheel output folder")
    args = parser.parse_args(argv)
    wheel = args.out / WHEEL_NAME
    if wheel.exists():
        print(f"{wheel} already built")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        built = build_wheel(download_sdist(Path(tmp)), args.out)
    print(f"built {built}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

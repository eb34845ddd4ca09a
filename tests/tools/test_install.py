"""The reproducible install: pymesos on this Python, and generated gRPC code."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys
import zipfile

import pytest


pytestmark = pytest.mark.integration  # starts processes or servers


ROOT = Path(__file__).resolve().parents[2]


def test_pymesos_driver_imports_with_the_pure_python_http_parser() -> None:
    code = (
        "import http_parser.http as h, pymesos;"
        "from pymesos import MesosSchedulerDriver;"
        "print(h.HttpParser.__module__, pymesos.__file__)"
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    assert out.startswith("http_parser.pyparser ")  # no C extension involved


def test_http_parser_wheel_is_pure_python_and_pinned(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import build_http_parser_wheel as builder
    finally:
        sys.path.pop(0)
    wheel = ROOT / "build" / "wheels" / builder.WHEEL_NAME
    assert wheel.exists(), "make builds the wheel before installing"
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        assert {f"http_parser/{m}" for m in builder.PURE_MODULES} <= names
        assert not any(n.endswith((".so", ".c", ".pyx")) for n in names)
        assert "Tag: py3-none-any" in zf.read("http_parser-0.9.0.dist-info/WHEEL").decode()


def test_generated_grpc_code_imports_without_path_hacks() -> None:
    """From outside the repository, by the installed name, and no top-level ``protos``."""
    code = ("from disauto.protos import appcore_pb2_grpc, framework_pb2_grpc, common_pb2\n"
            "from importlib.util import find_spec\n"
            "print('ok', find_spec('protos'), find_spec('framework'))")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, cwd="/").stdout
    assert out.strip() == "ok None None"


@pytest.mark.parametrize("proto", ["common", "framework", "appcore"])
def test_every_proto_is_generated(proto: str) -> None:
    for suffix in ("_pb2.py", "_pb2.pyi"):
        assert (ROOT / "protos" / f"{proto}{suffix}").exists()


def test_the_wheel_builds_without_setuptools_warnings_and_carries_the_data(
        tmp_path: Path) -> None:
    """The package data is named in setup.cfg; include_package_data would have setuptools read
    static/ as a package of its own and print ~40 lines of warnings at every install."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
         str(tmp_path), str(ROOT)], capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    said = done.stdout + done.stderr
    assert "Warning" not in said and "absent from the" not in said, said
    (wheel,) = tmp_path.glob("disauto-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
    assert {f"disauto/framework/webui/static/{name}" for name in
            ("index.html", "job.html", "job.js", "job.css", "compare.js")} <= names
    assert {f"disauto/localmesos/webui/{name}" for name in
            ("index.html", "app.js", "app.css")} <= names
    assert {"disauto/protos/common.proto", "disauto/protos/common_pb2.pyi",
            "apprunner_sdk/py.typed"} <= names

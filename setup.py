"""Shim so setuptools runs the proto generator when building wheels (see setup.cfg)."""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithProtos(build_py):
    """Generate the gRPC stubs from protos/ before packaging them."""

    def run(self) -> None:
        root = Path(__file__).resolve().parent
        subprocess.run([sys.executable, str(root / "tools" / "gen_protos.py")], check=True)
        super().run()


setup(cmdclass={"build_py": BuildPyWithProtos})

"""The package layout, and the proto generator run when building wheels (see setup.cfg).

Each of DisAuto's top-level folders is installed as ``disauto.<folder>`` (one namespace in
site-packages, no generic top-level names); the user SDK ``apprunner_sdk`` stays top-level.
"""

from __future__ import annotations

from pathlib import Path
import subprocess
import sys

from setuptools import find_packages
from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithProtos(build_py):
    """Generate the gRPC stubs from protos/ before packaging them."""

    def run(self) -> None:
        root = Path(__file__).resolve().parent
        subprocess.run([sys.executable, str(root / "tools" / "gen_protos.py")], check=True)
        super().run()


ROOT = Path(__file__).resolve().parent
NAMESPACED = ("common", "framework", "appcore", "submit", "protos", "localmesos", "executor")


def layout() -> tuple[list[str], dict[str, str]]:
    """(packages, package_dir): ``disauto`` and its own subpackages (``disauto.testing``),
    ``disauto.<folder>...`` from each folder, ``apprunner_sdk``."""
    own = [f"disauto.{sub}" for sub in find_packages(str(ROOT / "disauto"))]  # disauto.testing
    packages = ["disauto", *own, "apprunner_sdk"]
    package_dir = {"disauto": "disauto", "apprunner_sdk": "apprunner_sdk",
                   **{package: package.replace(".", "/") for package in own}}
    for folder in NAMESPACED:
        for package in [folder, *(f"{folder}.{sub}" for sub in find_packages(str(ROOT / folder)))]:
            packages.append(f"disauto.{package}")
            package_dir[f"disauto.{package}"] = package.replace(".", "/")
    return packages, package_dir


PACKAGES, PACKAGE_DIR = layout()
setup(packages=PACKAGES, package_dir=PACKAGE_DIR, cmdclass={"build_py": BuildPyWithProtos})

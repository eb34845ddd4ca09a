"""The runner image's site-packages: what ``tools/docker_images`` copies into it imports alone."""

from __future__ import annotations

from pathlib import Path
import shutil
import subprocess
import sys
import sysconfig

import pytest


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools import docker_images  # noqa: E402 - after the path it needs


pytestmark = pytest.mark.integration  # starts a process


def test_the_sdk_files_import_without_the_rest_of_disauto(tmp_path: Path) -> None:
    """The small image holds the SDK, ``disauto.common``, ``disauto.protos`` and
    ``disauto/__init__.py`` only; the image's build imports them, so none may reach for
    ``disauto.submit`` or another package the image lacks."""
    for source, target in docker_images._sdk_files():
        (tmp_path / target).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, tmp_path / target)
    # -S: no .pth files, so the repository's editable install is not on the path
    site = sysconfig.get_paths()["purelib"]
    code = (f"import sys; sys.path.append({site!r});"
            f"sys.path.insert(0, {str(tmp_path)!r});"
            "import disauto, apprunner_sdk, apprunner_sdk.function_runner,"
            " disauto.protos.appcore_pb2_grpc;"
            "assert 'disauto.submit' not in sys.modules;"
            "print(disauto.__file__)")
    done = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tmp_path / "disauto" / "__init__.py")

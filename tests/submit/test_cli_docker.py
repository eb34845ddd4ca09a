"""da-submit's container flags: --docker-image, --app-core-docker-image, --containerizer."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.submit.cli import main
from disauto.submit.exit_status import ExitStatus
from disauto.submit.parser import build_parser
from disauto.submit.validate import validate
from tests.submit.test_cli import argv


pytestmark = pytest.mark.integration  # starts processes or servers


IMAGE = "registry.example.com/disauto/apprunner:1.0"
REMOTE = ("--master", "10.20.30.40:5050")


def test_docker_image_defaults_to_the_mesos_containerizer(files: Path) -> None:  # noqa: F811
    config = validate(build_parser().parse_args(
        argv("--docker-image", IMAGE, *REMOTE, "--app-runner-gpus", "2"))).config
    assert config.docker_image == IMAGE and config.containerizer == "mesos"
    assert config.appcore_docker_image == ""
    assert config.runner.gpus == 2
    assert config.appcore_command == "python3 -m disauto.appcore"


def test_app_core_image_runs_appcore_with_the_images_python(files: Path) -> None:  # noqa: F811
    # Even against a loopback master, where AppCore would otherwise use this interpreter.
    config = validate(build_parser().parse_args(
        argv("--app-core-docker-image", IMAGE, "--containerizer", "docker",
             "--master", "127.0.0.1:5050"))).config
    assert config.appcore_docker_image == IMAGE and config.containerizer == "docker"
    assert config.appcore_command == "python3 -m disauto.appcore"
    assert config.docker_image == ""


@pytest.mark.parametrize(("extra", "message"), [
    (("--docker-image", IMAGE, "--containerizer", "docker", "--app-runner-gpus", "1"),
     "--containerizer docker cannot run --app-runner-gpus 1: the Docker containerizer has no "
     "GPU support in Mesos; use --containerizer mesos"),
    (("--containerizer", "docker"),
     "--containerizer: only means something with --docker-image or --app-core-docker-image"),
    (("--docker-image", IMAGE, "--containerizer", "lxc"),
     "--containerizer: unknown containerizer 'lxc'; valid: mesos, docker"),
    (("--docker-image", " "), "--docker-image: must name an image"),
    (("--app-core-docker-image", "two words"), "--app-core-docker-image: invalid image"),
])
def test_container_flags_that_cannot_work_exit_2_with_one_line(
    files: Path, capsys: pytest.CaptureFixture[str],  # noqa: F811
    extra: tuple[str, ...], message: str,
) -> None:
    assert main(argv(*REMOTE, *extra)) == ExitStatus.USAGE
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith(f"da-submit: error: {message}"), err
    assert not (files / "home" / "jobs").exists()  # nothing was started


def test_local_docker_jobs_need_a_docker_engine(
    files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{files}/no-engine.sock")
    assert main(argv("--docker-image", IMAGE)) == ExitStatus.USAGE
    err = capsys.readouterr().err.splitlines()[0]
    assert err.startswith("da-submit: error: --docker-image: the embedded cluster runs "
                          f"containers through the Docker engine: Cannot reach the Docker "
                          f"engine at unix://{files}/no-engine.sock")

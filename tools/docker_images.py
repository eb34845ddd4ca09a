"""Build DisAuto's container images on a machine without Docker Hub, and reuse them when unchanged.

Three images, each built only when its content changed (every image carries the hash of what went
into it in the label ``org.disauto.content-hash``; an image whose label matches is reused):

``base`` (``disauto/debian-python:bookworm``)
    A minimal Debian root file system with ``python3``, made by ``mmdebstrap`` from this
    machine's own apt sources (``--variant=essential``, no documentation or locales) and
    ``docker import``-ed. About 30 s and 145 MB.
``apprunner-small`` (``disauto/apprunner-small:latest``)
    The base plus grpcio, protobuf, cloudpickle and DisAuto's runner SDK (``apprunner_sdk`` and
    the generated ``protos``): what the container tests run trials in, ``optimize()``'s too.
    No TensorFlow.
``apprunner`` (``disauto/apprunner:latest``)
    The base plus all of DisAuto and TensorFlow (``tensorflow[and-cuda]`` by default): the image
    for a real cluster's AppRunner (and AppCore) tasks. Large; never built by the tests.

Python packages are installed by pip *on this host* into the build context, for the base's
Python version and platform (``pip install --target --only-binary=:all: --python-version
--platform``), and copied in by ``deploy/mesos/Dockerfile.*``: the image builds themselves run
with no network. Builds are serialized by a lock file, so concurrent test sessions share them.

Usage::

    python tools/docker_images.py base|apprunner-small|apprunner [--force] [--base IMAGE]
        [--tensorflow SPEC] [--with REQUIREMENT ...] [--tag TAG] [--sources FILE]

prints the tag of the image on its last line. Needs the ``docker`` Python package, a running
Docker engine (``tools/ensure_docker.sh`` provides one) and, for the base, ``mmdebstrap`` (root,
or unprivileged user namespaces).
"""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from collections.abc import Sequence
import configparser
import contextlib
import fcntl
import hashlib
import json
from pathlib import Path
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any


ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy" / "mesos"
HASH_LABEL = "org.disauto.content-hash"
BASE_TAG = "disauto/debian-python:bookworm"
SMALL_TAG = "disauto/apprunner-small:latest"
FULL_TAG = "disauto/apprunner:latest"
SUITE = "bookworm"
BASE_PACKAGES = ("python3", "libstdc++6", "ca-certificates")
MMDEBSTRAP_OPTIONS = (
    "--variant=essential",
    "--dpkgopt=path-exclude=/usr/share/man/*",
    "--dpkgopt=path-exclude=/usr/share/doc/*",
    "--dpkgopt=path-include=/usr/share/doc/*/copyright",
    "--dpkgopt=path-exclude=/usr/share/locale/*",
    "--dpkgopt=path-exclude=/usr/share/info/*",
)
DEFAULT_TENSORFLOW = "tensorflow[and-cuda]==2.21.0"
LOCK_FILE = Path(tempfile.gettempdir()) / "disauto-docker-images.lock"
RECIPE_VERSION = "1"
"""Bump to rebuild every image after a change of this script's recipe."""


class ImageBuildError(RuntimeError):
    """An image cannot be built; the message says which step failed and why."""


def log(message: str) -> None:
    """Progress on stderr (stdout's last line is the image tag)."""
    print(f"docker_images: {message}", file=sys.stderr, flush=True)


# -- helpers ----------------------------------------------------------------------------------


def _client() -> Any:
    try:
        import docker
    except ImportError:
        raise ImageBuildError(
            "the 'docker' Python package is missing: pip install 'disauto[docker]'"
        ) from None
    try:
        return docker.from_env(timeout=600)
    except docker.errors.DockerException as exc:
        raise ImageBuildError(
            f"cannot reach the Docker engine ({exc}); run tools/ensure_docker.sh"
        ) from None


@contextlib.contextmanager
def _build_lock() -> Iterator[None]:
    """One image build at a time on this machine."""
    with open(LOCK_FILE, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _digest(*parts: Any) -> str:
    """A short hash of nested strings, bytes, lists and tuples."""
    digest = hashlib.sha256()

    def feed(part: Any) -> None:
        if isinstance(part, list | tuple):
            digest.update(b"[%d" % len(part))
            for item in part:
                feed(item)
            digest.update(b"]")
            return
        data = part if isinstance(part, bytes) else json.dumps(part, sort_keys=True).encode()
        digest.update(len(data).to_bytes(8, "big"))
        digest.update(data)

    feed(parts)
    return digest.hexdigest()[:32]


def _previous(client: Any, tag: str) -> str | None:
    """The id of the image ``tag`` names now, if any."""
    import docker

    try:
        return str(client.images.get(tag).id)
    except docker.errors.ImageNotFound:
        return None


def _drop(client: Any, image_id: str | None, tag: str) -> None:
    """Remove the image ``tag`` named before a rebuild, unless it is still in use."""
    import docker

    if image_id is None or image_id == _previous(client, tag):
        return
    try:
        client.images.remove(image_id)
    except docker.errors.APIError:
        pass  # still used by a container or another tag: the engine keeps it


def _cached(client: Any, tag: str, content_hash: str) -> bool:
    """Whether ``tag`` exists with the label ``content_hash``."""
    import docker

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return bool(image.labels.get(HASH_LABEL) == content_hash)


def default_sources() -> list[Path]:
    """This machine's Debian apt sources, for mmdebstrap (empty: mmdebstrap's default mirror).

    Only Debian's own entries are used: ``/etc/apt/sources.list.d/debian.sources`` (deb822) or
    else ``/etc/apt/sources.list`` when it has entries; third-party repositories are left out.
    """
    deb822 = Path("/etc/apt/sources.list.d/debian.sources")
    if deb822.is_file():
        return [deb822]
    legacy = Path("/etc/apt/sources.list")
    lines = legacy.read_text().splitlines() if legacy.is_file() else []
    if any(line.strip() and not line.lstrip().startswith("#") for line in lines):
        return [legacy]
    return []


def _platforms() -> list[str]:
    """pip platform tags a Debian bookworm (glibc 2.36) container of this machine runs."""
    arch = platform.machine()
    tags = [f"manylinux2014_{arch}"]
    tags += [f"manylinux_2_{minor}_{arch}" for minor in range(17, 37)]
    return tags


def _pip_install(target: Path, requirements: Sequence[str], python: str,
                 find_links: Sequence[Path] = ()) -> None:
    """pip-install ``requirements`` for the image's Python into ``target`` on this host."""
    cmd = [
        sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
        "--no-compile", "--target", str(target), "--only-binary=:all:",
        "--python-version", python, "--implementation", "cp",
    ]
    for tag in _platforms():
        cmd += ["--platform", tag]
    for folder in find_links:
        cmd += ["--find-links", str(folder)]
    cmd += list(requirements)
    log("pip " + " ".join(requirements))
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        tail = " ".join(result.stderr.strip().splitlines()[-3:])
        raise ImageBuildError(f"pip could not install {' '.join(requirements)}: {tail}")
    shutil.rmtree(target / "bin", ignore_errors=True)  # console scripts name this host's python


def _pins(*names: str) -> list[str]:
    """The ``name==version`` pins of setup.cfg's install_requires for ``names``."""
    parser = configparser.ConfigParser()
    parser.read(ROOT / "setup.cfg")
    lines = [line.split("#", 1)[0].strip()
             for line in parser["options"]["install_requires"].splitlines()]
    pins = {line.split("==", 1)[0].lower(): line for line in lines if "==" in line}
    missing = [name for name in names if name not in pins]
    if missing:
        raise ImageBuildError(f"setup.cfg pins no version of {', '.join(missing)}")
    return [pins[name] for name in names]


def _python_of(client: Any, image: str) -> tuple[str, str]:
    """``(major.minor, purelib folder)`` of ``python3`` in ``image``."""
    code = ("import sys, sysconfig; "
            "print('%d.%d' % sys.version_info[:2]); print(sysconfig.get_paths()['purelib'])")
    out = client.containers.run(image, ["python3", "-c", code], remove=True,
                                network_mode="none").decode().split()
    return out[0], out[1]


def _sdk_files() -> list[tuple[Path, str]]:
    """``(file, path in site-packages)`` of the runner SDK, the ground floor it stands on and
    the generated gRPC code."""
    files = [(path, f"apprunner_sdk/{path.name}")
             for path in sorted((ROOT / "apprunner_sdk").iterdir())
             if path.suffix == ".py" or path.name == "py.typed"]
    protos = sorted((ROOT / "protos").glob("*.py"))
    if not any(p.name.endswith("_pb2_grpc.py") for p in protos):
        raise ImageBuildError("protos/ has no generated code; run `make protos` first")
    files += [(path, f"disauto/protos/{path.name}") for path in protos]
    files += [(path, f"disauto/common/{path.name}")
              for path in sorted((ROOT / "common").glob("*.py"))]
    files.append((ROOT / "disauto" / "__init__.py", "disauto/__init__.py"))
    return files


def _build(client: Any, context: Path, dockerfile: Path, tag: str, content_hash: str,
           buildargs: dict[str, str]) -> None:
    """``docker build`` a prepared context (no network, no pull), labelled with its hash."""
    import docker

    shutil.copy(dockerfile, context / "Dockerfile")
    previous = _previous(client, tag)
    log(f"building {tag}")
    try:
        client.images.build(
            path=str(context), tag=tag, buildargs=buildargs, labels={HASH_LABEL: content_hash},
            rm=True, forcerm=True, pull=False, network_mode="none",
        )
    except docker.errors.BuildError as exc:
        text = "".join(str(item.get("stream", item.get("error", ""))) for item in exc.build_log)
        text = re.sub(r"\x1b\[[0-9;]*m", "", text)
        tail = " | ".join(line.strip() for line in text.splitlines() if line.strip())[-600:]
        raise ImageBuildError(f"docker build of {tag} failed: {exc.msg}: {tail}") from None
    _drop(client, previous, tag)


# -- the images -------------------------------------------------------------------------------


def build_base(client: Any, *, tag: str = BASE_TAG, sources: Sequence[Path] | None = None,
               force: bool = False) -> str:
    """The Debian + python3 base image (see the module docstring); returns its tag."""
    sources = default_sources() if sources is None else list(sources)
    content_hash = _digest(RECIPE_VERSION, SUITE, BASE_PACKAGES, MMDEBSTRAP_OPTIONS,
                           [p.read_bytes() for p in sources])
    if not force and _cached(client, tag, content_hash):
        log(f"{tag} is up to date")
        return tag
    tool = shutil.which("mmdebstrap")
    if tool is None:
        raise ImageBuildError("mmdebstrap is missing: apt-get install mmdebstrap "
                              "(tools/ensure_docker.sh installs it)")
    started = time.monotonic()
    previous = _previous(client, tag)
    with tempfile.TemporaryDirectory(prefix="disauto-base-") as tmp:
        tarball = Path(tmp) / "rootfs.tar"
        cmd = [tool, "--quiet", *MMDEBSTRAP_OPTIONS, f"--include={','.join(BASE_PACKAGES)}",
               SUITE, str(tarball), *[str(p) for p in sources]]
        log("mmdebstrap " + SUITE + " " + " ".join(str(p) for p in sources))
        result = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            tail = " ".join(result.stderr.strip().splitlines()[-3:])
            raise ImageBuildError(f"mmdebstrap failed (exit {result.returncode}): {tail}")
        repository, _, version = tag.rpartition(":")
        changes = [f"LABEL {HASH_LABEL}={content_hash}", "ENV LANG=C.UTF-8",
                   'CMD ["python3"]']
        client.api.import_image(src=str(tarball), repository=repository, tag=version,
                                changes=changes)
    _drop(client, previous, tag)
    log(f"built {tag} in {time.monotonic() - started:.0f} s")
    return tag


def build_small(client: Any, *, tag: str = SMALL_TAG, base: str = BASE_TAG,
                force: bool = False) -> str:
    """The small AppRunner image on ``base``; returns its tag."""
    base_id = client.images.get(base).id
    python, site = _python_of(client, base)
    pins = _pins("grpcio", "protobuf", "cloudpickle")  # cloudpickle: optimize()'s trials
    dockerfile = DEPLOY / "Dockerfile.apprunner-small"
    files = _sdk_files()
    content_hash = _digest(RECIPE_VERSION, base_id, python, pins, _platforms(),
                           dockerfile.read_bytes(),
                           [(name, path.read_bytes()) for path, name in files])
    if not force and _cached(client, tag, content_hash):
        log(f"{tag} is up to date")
        return tag
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="disauto-small-") as tmp:
        context = Path(tmp)
        _pip_install(context / "site", pins, python)
        for path, name in files:
            (context / "site" / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, context / "site" / name)
        _build(client, context, dockerfile, tag, content_hash, {"BASE": base, "SITE": site})
    log(f"built {tag} in {time.monotonic() - started:.0f} s")
    return tag


def build_full(client: Any, *, tag: str = FULL_TAG, base: str = BASE_TAG,
               tensorflow: str = DEFAULT_TENSORFLOW, extra: Sequence[str] = (),
               force: bool = False) -> str:
    """The AppRunner image with all of DisAuto, TensorFlow and the ``extra`` requirements
    (what the users' scripts import) on ``base``; returns its tag."""
    base_id = client.images.get(base).id
    python, site = _python_of(client, base)
    dockerfile = DEPLOY / "Dockerfile.apprunner"
    sources = sorted(
        p for folder in ("appcore", "apprunner_sdk", "common", "disauto", "framework",
                         "localmesos", "protos", "submit")
        for p in (ROOT / folder).rglob("*.py") if "__pycache__" not in p.parts
    )
    content_hash = _digest(RECIPE_VERSION, base_id, python, tensorflow, list(extra), _platforms(),
                           dockerfile.read_bytes(), (ROOT / "setup.cfg").read_bytes(),
                           [(str(p.relative_to(ROOT)), p.read_bytes()) for p in sources])
    if not force and _cached(client, tag, content_hash):
        log(f"{tag} is up to date")
        return tag
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="disauto-full-") as tmp:
        context = Path(tmp)
        wheels = context / "wheels"
        # DisAuto itself and the pure-Python dependencies PyPI has no wheel of.
        for spec in (str(ROOT), _pins("pymesos")[0]):
            result = subprocess.run(
                [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                 "--wheel-dir", str(wheels), spec],
                capture_output=True, text=True, check=False, cwd=ROOT,
            )
            if result.returncode != 0:
                tail = " ".join(result.stderr.strip().splitlines()[-3:])
                raise ImageBuildError(f"pip wheel {spec} failed: {tail}")
        local_wheels = ROOT / "build" / "wheels"
        _pip_install(context / "site", ["disauto", tensorflow, *extra], python,
                     find_links=[wheels, local_wheels])
        shutil.rmtree(wheels)
        _build(client, context, dockerfile, tag, content_hash, {"BASE": base, "SITE": site})
    log(f"built {tag} in {time.monotonic() - started:.0f} s")
    return tag


def ensure_image(which: str, *, force: bool = False, base: str | None = None,
                 tensorflow: str = DEFAULT_TENSORFLOW, extra: Sequence[str] = (),
                 tag: str | None = None, sources: Sequence[Path] | None = None) -> str:
    """Build ``which`` (``base``, ``apprunner-small`` or ``apprunner``) and what it stands on,
    each only if changed; returns its tag.

    Raises:
        ImageBuildError: naming the step that failed.
    """
    if which not in ("base", "apprunner-small", "apprunner"):
        raise ImageBuildError(f"unknown image {which!r}: valid: base, apprunner-small, apprunner")
    client = _client()
    with _build_lock():
        if which == "base":
            return build_base(client, tag=tag or BASE_TAG, sources=sources, force=force)
        base_tag = base or build_base(client, sources=sources)
        if which == "apprunner-small":
            return build_small(client, tag=tag or SMALL_TAG, base=base_tag, force=force)
        return build_full(client, tag=tag or FULL_TAG, base=base_tag, tensorflow=tensorflow,
                          extra=extra, force=force)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("image", choices=("base", "apprunner-small", "apprunner"))
    parser.add_argument("--force", action="store_true", help="rebuild even if unchanged")
    parser.add_argument("--base", help="build on this image instead of the Debian base "
                                       "(it needs python3 of the version the wheels are for)")
    parser.add_argument("--tensorflow", default=DEFAULT_TENSORFLOW,
                        help=f"the TensorFlow requirement of apprunner ({DEFAULT_TENSORFLOW}; "
                             "tensorflow-cpu==2.21.0 for CPU-only agents)")
    parser.add_argument("--with", dest="extra", action="append", default=[], metavar="REQ",
                        help="another pip requirement of apprunner (what your scripts import, "
                             "e.g. scikit-learn==1.9.1); repeatable")
    parser.add_argument("--tag", help="the tag to build (default per image)")
    parser.add_argument("--sources", action="append", type=Path,
                        help="apt sources file(s) for the base (default: this machine's)")
    args = parser.parse_args(argv)
    try:
        tag = ensure_image(args.image, force=args.force, base=args.base,
                           tensorflow=args.tensorflow, extra=args.extra, tag=args.tag,
                           sources=args.sources)
    except ImageBuildError as exc:
        print(f"docker_images: error: {exc}", file=sys.stderr)
        return 1
    print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The one generator for DisAuto's gRPC code: protos/*.proto -> protos/*_pb2{,_grpc}.py{,i}.

Run from anywhere: ``python tools/gen_protos.py``. The include root is the repository root, so
protoc writes imports of ``protos.x_pb2``; they are then rewritten to ``disauto.protos.x_pb2``,
where the package is installed (as Optuna's generated code is rewritten to its package). The
output is gitignored and never edited by hand; ``make`` runs this before installing or testing,
and ``setup.py``'s build_py hook runs it when building a wheel.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
import re
import sys


ROOT = Path(__file__).resolve().parent.parent
PROTO_DIR = ROOT / "protos"


def generate() -> list[Path]:
    """Compile every .proto under protos/ and return the generated files."""
    from grpc_tools import protoc  # build-time dependency (grpcio-tools)

    protos = sorted(PROTO_DIR.glob("*.proto"))
    if not protos:
        raise SystemExit(f"no .proto files under {PROTO_DIR}")
    well_known = str(resources.files("grpc_tools") / "_proto")
    args = [
        "grpc_tools.protoc",
        f"-I{ROOT}",
        f"-I{well_known}",
        f"--python_out={ROOT}",
        f"--pyi_out={ROOT}",
        f"--grpc_python_out={ROOT}",
        *(str(p) for p in protos),
    ]
    code = protoc.main(args)
    if code != 0:
        names = ", ".join(p.name for p in protos)
        raise SystemExit(f"protoc failed with exit code {code} for {names}")
    generated = sorted(PROTO_DIR.glob("*_pb2*.py*"))
    for path in generated:
        text = path.read_text()
        path.write_text(re.sub(r"^from protos import ", "from disauto.protos import ", text,
                               flags=re.M))
    return generated


def main() -> int:
    for path in generate():
        print(f"generated {path.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""``tools/private_framework_names``: a module written against the framework's old public
names is rewritten to the private ones, in its code and its prose, once; the code's own names
and the tests' paths stay."""

from __future__ import annotations

from pathlib import Path
import sys


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tools import private_framework_names as names  # noqa: E402 - after the path it needs


OLD = '''"""Uses :class:`~framework.store.JobStore` (framework/store.py, framework/job/book.py).

tests/framework/job/test_book.py stays.
"""
from disauto.framework import meta
from disauto.framework import meta as keys
from disauto.framework.job import JobController
from disauto.framework.record import JobRecord

LAZY = "disauto.framework.job.controller:JobController"


def f(framework):  # framework.store is the record
    return framework.store.trials(), framework.job, "over " \\
        "framework.spec"
'''

NEW = '''"""Uses :class:`~framework._store.JobStore` (framework/_store.py, framework/_job/book.py).

tests/framework/job/test_book.py stays.
"""
from disauto.framework import _meta as meta
from disauto.framework import _meta as keys
from disauto.framework._job import JobController
from disauto.framework.record import JobRecord

LAZY = "disauto.framework._job.controller:JobController"


def f(framework):  # framework._store is the record
    return framework.store.trials(), framework.job, "over " \\
        "framework._spec"
'''


def test_a_module_is_rewritten_once(tmp_path: Path) -> None:
    module = tmp_path / "old.py"
    module.write_text(OLD)
    assert names.rewrite(module)
    assert module.read_text() == NEW
    assert not names.rewrite(module)  # already private: nothing to change


def test_a_document_is_rewritten_and_other_files_are_not(tmp_path: Path) -> None:
    document = tmp_path / "notes.md"
    document.write_text("See `framework/scheduler.py` and framework/telemetry/, not "
                        "tests/framework/telemetry/ nor framework/webui/.\n")
    assert names.rewrite(document)
    assert document.read_text() == ("See `framework/_scheduler.py` and framework/_telemetry/, "
                                    "not tests/framework/telemetry/ nor framework/webui/.\n")
    image = tmp_path / "plot.png"
    image.write_bytes(b"\x89PNG framework/store.py")
    assert not names.rewrite(image)


def test_the_names_it_knows_are_the_frameworks_private_modules() -> None:
    framework = ROOT / "framework"
    assert {f"_{name}.py" for name in names.MODULES} <= {p.name for p in framework.glob("_*.py")}
    assert all((framework / f"_{package}" / "__init__.py").is_file()
               for package in names.PACKAGES)
    assert not any((framework / f"{name}.py").exists() for name in names.MODULES)

"""``--slot-preload auto``'s reader (``common/auto_preload.py``): which of a script's imports it
keeps and which it drops, read from real small scripts, never run."""

from __future__ import annotations

import textwrap

import pytest

from disauto.common.auto_preload import DENIED
from disauto.common.auto_preload import ScriptReadError
from disauto.common.auto_preload import choose
from disauto.common.auto_preload import denied
from disauto.common.auto_preload import top_level_imports


TRAIN = textwrap.dedent('''
    """A training script as users write them."""
    from __future__ import annotations

    import os, sys
    import numpy as np
    import sklearn.datasets
    from sklearn.svm import SVC
    from sklearn import metrics
    from . import sibling
    from .helpers import load
    from apprunner_sdk import get_params, report
    import utils

    try:
        import ujson as json
    except ImportError:
        import simplejson as json
    else:
        import orjson
    finally:
        import pandas

    with open(os.devnull):
        import scipy.stats

    if __name__ == "__main__":
        import matplotlib

    if TYPE_CHECKING:
        import torch

    for _ in range(1):
        import polars

    def train():
        import lightgbm
        return lightgbm

    class Model:
        import xgboost

    async def later():
        import aiohttp

    importlib = __import__("importlib")
    tensorflow = importlib.import_module("tensorflow")
    import numpy
''')


def test_the_imports_that_run_whenever_the_script_starts_are_read_in_order() -> None:
    assert top_level_imports(TRAIN, "train.py") == [
        "os", "sys", "numpy", "sklearn.datasets", "sklearn.svm", "sklearn", "apprunner_sdk",
        "utils", "ujson", "orjson", "pandas", "scipy.stats"]


@pytest.mark.parametrize(("source", "expected"), [
    ("import a.b.c as d\n", ["a.b.c"]),
    ("from a.b import c, d\n", ["a.b"]),  # c may be a name, not a module: a.b is what runs
    ("from __future__ import annotations\n", []),
    ("from .. import up\nfrom .x import y\n", []),  # the script's own package
    ("try:\n    import a\nexcept* ImportError:\n    import b\n", ["a"]),
    ("", []),
    ("# only a comment\n", []),
])
def test_each_form_of_import(source: str, expected: list[str]) -> None:
    assert top_level_imports(source) == expected


@pytest.mark.parametrize(("source", "message"), [
    ("import numpy\ndef broken(:\n", "train.py is not Python: invalid syntax (line 2)"),
    (b"import numpy\x00\n", "train.py is not Python: source code string cannot contain null"),
    (b"\xff\xfe bad bytes", "train.py is not Python"),
])
def test_a_file_that_is_not_python_is_one_line(source: str | bytes, message: str) -> None:
    with pytest.raises(ScriptReadError) as raised:
        top_level_imports(source, "train.py")
    assert str(raised.value).startswith(message)
    assert "\n" not in str(raised.value)


def test_the_standard_library_the_sdk_and_the_jobs_own_modules_are_not_preloaded() -> None:
    chosen = choose(top_level_imports(TRAIN), own=["utils", "helpers"])
    assert chosen.modules == ("numpy", "sklearn.datasets", "sklearn.svm", "sklearn", "ujson",
                              "orjson", "pandas", "scipy.stats")
    assert chosen.own == ("utils",)
    assert chosen.denied == ()


@pytest.mark.parametrize("name", [
    "tensorflow", "tensorflow.keras", "tensorflow_datasets", "keras", "tf_keras", "jax",
    "jax.numpy", "jaxlib", "flax.linen", "optax", "pycuda.autoinit", "cupy", "mpi4py",
    "petsc4py", "mxnet"])
def test_modules_that_do_not_survive_a_fork_are_denied_with_why(name: str) -> None:
    why = denied(name)
    assert why and "\n" not in why
    chosen = choose(["numpy", name])
    assert chosen.modules == ("numpy",)
    assert chosen.denied == ((name, why),)


@pytest.mark.parametrize("name", ["torch", "torchvision", "numpy", "sklearn", "pandas",
                                  "xgboost", "lightgbm", "tensorboard", "jaxtyping", "kerastuner"])
def test_libraries_that_start_nothing_at_import_are_not_denied(name: str) -> None:
    assert denied(name) is None


def test_every_denied_pattern_says_why() -> None:
    assert all(why.strip() and len(why) < 200 for why in DENIED.values())

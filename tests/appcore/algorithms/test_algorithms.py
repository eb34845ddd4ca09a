"""The algorithms' registry: an unknown name, and algorithms imported only when used. What every
algorithm must do is its contract, ``test_contract.py``."""

from __future__ import annotations

import subprocess
import sys

import pytest

from disauto.appcore.algorithms import ALGORITHMS
from disauto.appcore.algorithms import algorithm_class
from disauto.appcore.algorithms import create_algorithm
from disauto.common.errors import SearchInputError
from disauto.common.errors import UnknownAlgorithmError
from disauto.common.space import IntParam
from disauto.common.space import SearchSpace


pytestmark = pytest.mark.integration  # starts processes or servers


def test_unknown_algorithm_lists_the_valid_names() -> None:
    with pytest.raises(UnknownAlgorithmError) as caught:
        algorithm_class("bayes")
    assert str(caught.value) == (
        "unknown search algorithm 'bayes' (did you mean 'bayesian'?); valid algorithms: "
        f"{', '.join(ALGORITHMS)}")
    assert {"grid-search", "random-search", "bayesian"} <= set(ALGORITHMS)
    assert isinstance(caught.value, SearchInputError)
    assert isinstance(caught.value, ValueError)
    with pytest.raises(UnknownAlgorithmError):
        create_algorithm("", SearchSpace((IntParam("a", 1, 3),)), seed=0, direction="maximize",
                         settings={})


def test_registry_imports_algorithms_lazily() -> None:
    code = (
        "import sys, appcore.algorithms as a\n"
        "assert 'optuna' not in sys.modules, 'optuna imported eagerly'\n"
        "assert 'disauto.appcore.algorithms.random' not in sys.modules\n"
        "a.algorithm_class('grid-search')\n"
        "assert 'optuna' not in sys.modules, 'grid search needs no optuna'\n"
        "a.algorithm_class('random-search')\n"
        "assert 'optuna' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)

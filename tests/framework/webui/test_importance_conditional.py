"""Parameter importance of a conditional space: trials without an inactive parameter are ranked,
not a KeyError that would stop report.html (issue 30)."""

from __future__ import annotations

from disauto.common.space import CategoricalParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.framework.webui.importance import importances


def test_importance_ranks_a_conditional_space() -> None:
    space = SearchSpace((CategoricalParam("optimizer", ("sgd", "adam")),
                         RealParam("momentum", 0.5, 0.99), RealParam("lr", 0.001, 0.1)),
                        {"momentum": {"optimizer": "sgd"}})
    completed = [({"optimizer": "sgd", "momentum": 0.5 + i / 20, "lr": 0.01 * (i + 1)},
                  0.5 + i / 20) for i in range(5)]
    completed += [({"optimizer": "adam", "lr": 0.01 * (i + 1)}, 0.4 + i / 50) for i in range(5)]
    answer = importances(space, completed, True)
    assert set(answer["values"]) <= {"optimizer", "momentum", "lr"}, answer
    assert "lr" in answer["values"]

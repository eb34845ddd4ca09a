"""The default-path benchmark (``bench/default_path.py``): it runs ``make demo``'s search, and
its summary's arithmetic (no job is run here)."""

from __future__ import annotations

from pathlib import Path
import shlex

from bench.default_path import MODES
from bench.default_path import Run
from bench.default_path import demo_command
from bench.default_path import summary


ROOT = Path(__file__).resolve().parents[2]


def _demo_flags() -> list[str]:
    """The flags of the Makefile's ``demo`` recipe."""
    text = (ROOT / "Makefile").read_text().replace("\\\n", " ")
    recipe = text.split("\ndemo: venv\n", 1)[1].split("\n", 1)[0]
    words = shlex.split(recipe.split("da-submit", 1)[1])
    return words


def _without_paths(words: list[str]) -> list[str]:
    return [Path(w).name if "/" in w else w for w in words]


def test_it_runs_the_demos_search_with_each_modes_flags() -> None:
    for mode, flags in MODES.items():
        command = demo_command(16, 4, mode)
        assert command[1:3] == ["-m", "disauto.submit.cli"]
        words = _without_paths(command[3:])
        demo = _demo_flags()
        assert words[words.index("--files"):words.index("--quiet")] == \
            demo[demo.index("--files"):]
        assert words[words.index("--quiet") + 1:] == list(flags)
    assert MODES["task"] == ("--slot-mode", "task") and MODES["default"] == ()


def test_the_summary_gives_each_modes_spread_and_loads() -> None:
    runs = [Run("task", 36.0, 35.0, 6.0, 0.2, 2.0, 3.0), Run("default", 15.0, 13.0, 0.1, 0.3,
                                                           3.0, 2.5),
            Run("task", 40.0, 38.0, 7.0, 0.2, 4.0, 5.0), Run("default", 17.0, 14.0, 0.1, 0.3,
                                                           5.0, 4.0)]
    header, task, default = summary(runs)
    assert header.split()[:2] == ["mode", "runs"]
    assert task.split() == ["task", "2", "36.0/38.0/40.0", "35.0/36.5/38.0", "6.50",
                            "2.00-5.00"]
    assert default.split() == ["default", "2", "15.0/16.0/17.0", "13.0/13.5/14.0", "0.10",
                               "2.50-5.00"]

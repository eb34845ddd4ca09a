from __future__ import annotations

import pytest

from disauto.common.python_command import NotAPythonCommandError
from disauto.common.python_command import PythonCommand
from disauto.common.python_command import parse_python_command


@pytest.mark.parametrize(("command", "expected"), [
    ("python train.py", PythonCommand("python", "train.py", False)),
    ("python3 -u train.py --lr 0.1 'a b'",
     PythonCommand("python3", "train.py", False, ("--lr", "0.1", "a b"), ("-u",))),
    ("/opt/venv/bin/python3.11 -B -m pkg.train --x 1",
     PythonCommand("/opt/venv/bin/python3.11", "pkg.train", True, ("--x", "1"), ("-B",))),
    ("  .venv/bin/python examples/demo.py  ",
     PythonCommand(".venv/bin/python", "examples/demo.py", False)),
])
def test_plain_python_invocations_are_parsed(command: str, expected: PythonCommand) -> None:
    parsed = parse_python_command(command)
    assert parsed == expected
    assert PythonCommand.from_json(parsed.to_json()) == parsed


@pytest.mark.parametrize(("command", "names"), [
    ("", "empty"),
    ("python train.py | tee log", "shell syntax (|)"),
    ("cd src && python train.py", "shell syntax (&)"),
    ("python train.py > out", "shell syntax (>)"),
    ("python $SCRIPT", "shell syntax ($)"),
    ("LR=1 python train.py", "does not start with a Python interpreter"),
    ("bash run.sh", "does not start with a Python interpreter"),
    ("pythonista train.py", "does not start with a Python interpreter"),
    ("python -X importtime train.py", "option -X cannot be pre-imported"),
    ("python -c pass", "option -c cannot be pre-imported"),
    ("python -u", "names no script or module"),
    ("python -m", "-m needs a dotted module name"),
    ("python -m 3bad", "-m needs a dotted module name"),
    ("python 'unterminated", "cannot be split into words"),
])
def test_anything_else_is_refused_naming_why_and_the_valid_forms(command: str,
                                                                  names: str) -> None:
    with pytest.raises(NotAPythonCommandError) as caught:
        parse_python_command(command)
    message = str(caught.value)
    assert names in message
    assert "\n" not in message


def test_a_program_that_lacks_a_field_is_refused() -> None:
    with pytest.raises(NotAPythonCommandError, match="lacks"):
        PythonCommand.from_json({"python": "python"})
    with pytest.raises(NotAPythonCommandError, match="not an object"):
        PythonCommand.from_json([1])

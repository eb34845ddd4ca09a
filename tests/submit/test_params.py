"""Tests for submit.params: the paper's parameter file format, its extensions and every error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from disauto.common.space import CategoricalParam
from disauto.common.space import IntParam
from disauto.common.space import RealParam
from disauto.common.space import SearchSpace
from disauto.submit.errors import DisAutoUsageError
from disauto.submit.params import ParameterFileError
from disauto.submit.params import load_parameter_file
from disauto.submit.params import strip_trailing_commas


# demo-parameters.json exactly as printed after Fig. 3 of the paper, trailing comma included.
PAPER_EXAMPLE = """{
  "parameters": [
    {
      "name": "momentum",
      "type": "bound",
      "value": [0.1, 0.3]
    },
    {
      "name": "learningRate",
      "type": "number",
      "value": [0.1, 0.2, 0.3]
    }
  ],
}
"""


def _write(tmp_path: Path, text: str, name: str = "params.json") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _load(tmp_path: Path, document: object) -> SearchSpace:
    text = document if isinstance(document, str) else json.dumps(document)
    return load_parameter_file(_write(tmp_path, text))


def _params(*entries: object) -> dict[str, object]:
    return {"parameters": list(entries)}


# --- what loads -------------------------------------------------------------------------------


def test_the_papers_example_loads_as_printed(tmp_path: Path) -> None:
    space = load_parameter_file(_write(tmp_path, PAPER_EXAMPLE, "demo-parameters.json"))
    assert space == SearchSpace(
        (
            RealParam("momentum", 0.1, 0.3),
            CategoricalParam("learningRate", (0.1, 0.2, 0.3)),
        )
    )


def test_path_may_be_a_string(tmp_path: Path) -> None:
    path = _write(tmp_path, PAPER_EXAMPLE)
    assert load_parameter_file(str(path)) == load_parameter_file(path)


def test_every_type_and_option(tmp_path: Path) -> None:
    space = _load(
        tmp_path,
        _params(
            {"name": "lr", "type": "bound", "value": [1e-4, 1e-1], "log": True},
            {"name": "m", "type": "bound", "value": [0, 1], "step": 0.25, "description": "x"},
            {"name": "layers", "type": "int", "value": [1, 4]},
            {"name": "units", "type": "integer", "value": [16, 256], "log": True},
            {"name": "batch", "type": "int", "value": [32, 128], "step": 32},
            {"name": "epochs", "type": "int", "value": [1e1, 2e1], "step": 5.0},
            {"name": "sizes", "type": "number", "value": [1, 2.5, 3.0]},
            {"name": "act", "type": "choice", "value": ["relu", "tanh"]},
            {"name": "opt", "type": "categorical", "value": ["sgd", 1, 0.5]},
        ),
    )
    assert space == SearchSpace(
        (
            RealParam("lr", 1e-4, 1e-1, log=True),
            RealParam("m", 0.0, 1.0, step=0.25),
            IntParam("layers", 1, 4),
            IntParam("units", 16, 256, log=True),
            IntParam("batch", 32, 128, step=32),
            IntParam("epochs", 10, 20, step=5),
            CategoricalParam("sizes", (1, 2.5, 3.0)),
            CategoricalParam("act", ("relu", "tanh")),
            CategoricalParam("opt", ("sgd", 1, 0.5)),
        )
    )
    sizes = space["sizes"]
    assert isinstance(sizes, CategoricalParam)
    assert [type(v) for v in sizes.choices] == [int, float, float]  # ints stay ints
    m = space["m"]
    assert isinstance(m, RealParam) and type(m.low) is float  # integer bounds, still real
    epochs = space["epochs"]
    assert isinstance(epochs, IntParam) and type(epochs.low) is int


def test_trailing_commas_in_lists_and_objects(tmp_path: Path) -> None:
    text = (
        '{"parameters": [{"name": "a,]", "type": "choice", "value": ["x,}", "y",],},\n'
        '  {"name": "b", "type": "bound", "value": [0, 1,],},],}'
    )
    space = _load(tmp_path, text)
    assert space == SearchSpace((CategoricalParam("a,]", ("x,}", "y")), RealParam("b", 0.0, 1.0)))


def test_utf8_bom_and_unicode_names(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    document = _params({"name": "δ", "type": "choice", "value": ["α"]})
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(document, ensure_ascii=False).encode())
    assert load_parameter_file(path) == SearchSpace((CategoricalParam("δ", ("α",)),))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1, 2,]", "[1, 2 ]"),
        ('{"a": 1 ,\n }', '{"a": 1  \n }'),
        ('["a,]", "b\\",]",]', '["a,]", "b\\",]" ]'),
        ('["\\\\",]', '["\\\\" ]'),
        ("[,]", "[,]"),
        ("[1,,]", "[1,,]"),
        ("{,}", "{,}"),
        (",", ","),
        ('{"a": [1, 2], "b": 3}', '{"a": [1, 2], "b": 3}'),
    ],
)
def test_strip_trailing_commas(text: str, expected: str) -> None:
    assert strip_trailing_commas(text) == expected
    assert len(strip_trailing_commas(text)) == len(text)


# --- what fails -------------------------------------------------------------------------------


def _error(tmp_path: Path, document: object) -> ParameterFileError:
    with pytest.raises(ParameterFileError) as caught:
        _load(tmp_path, document)
    error = caught.value
    assert isinstance(error, DisAutoUsageError) and isinstance(error, ValueError)
    message = str(error)
    assert message.startswith(f"{tmp_path / 'params.json'}: "), message
    assert "\n" not in message
    return error


def _bad(name: str = "p", **entry: object) -> dict[str, object]:
    return _params({"name": "ok", "type": "bound", "value": [0, 1]}, {"name": name, **entry})


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.json"
    with pytest.raises(ParameterFileError) as caught:
        load_parameter_file(path)
    assert str(caught.value) == f"{path}: no such file"


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(ParameterFileError) as caught:
        load_parameter_file(tmp_path)
    assert str(caught.value) == f"{tmp_path}: is a directory, not a parameter file"


def test_unreadable_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _write(tmp_path, PAPER_EXAMPLE)

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)  # chmod does not stop root
    with pytest.raises(ParameterFileError) as caught:
        load_parameter_file(path)
    assert str(caught.value) == f"{path}: cannot read: Permission denied"


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "params.json"
    path.write_bytes(b'{"parameters": "\xff"}')
    with pytest.raises(
        ParameterFileError, match=r"params.json: not UTF-8 text \(bad byte at offset 16\)"
    ):
        load_parameter_file(path)


@pytest.mark.parametrize("text", ["", "  \n\t\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    error = _error(tmp_path, text)
    assert error.detail == 'file is empty; expected {"parameters": [...]}'


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{\n  "parameters": [\n    {"name": "a" "type": "bound"}\n  ]\n}', "line 3, column 18"),
        ('{"parameters": [1, 2', "line 1, column 21"),
        ("{'parameters': []}", "line 1, column 2"),
        ('{"parameters": [1,,]}', "line 1, column 19"),
    ],
)
def test_json_syntax_errors_give_line_and_column(tmp_path: Path, text: str, where: str) -> None:
    error = _error(tmp_path, text)
    assert error.detail.startswith(f"invalid JSON at {where}: ")


@pytest.mark.parametrize(
    ("document", "detail"),
    [
        ([], 'the top level must be an object {"parameters": [...]}, got a list'),
        ('"x"', 'the top level must be an object {"parameters": [...]}, got a string'),
        ({}, 'missing "parameters": a list of {"name", "type", "value"} objects'),
        ({"parameters": {}}, '"parameters" must be a list of objects, got an object'),
        ({"parameters": []}, '"parameters" is empty; give at least one parameter'),
        (
            {"parameters": [], "seed": 1},
            'unknown top-level key "seed"; valid keys: "parameters"',
        ),
        ('{"parameters": [], "parameters": []}', 'duplicate key "parameters"'),
    ],
)
def test_bad_documents(tmp_path: Path, document: object, detail: str) -> None:
    error = _error(tmp_path, document)
    assert error.detail == detail
    assert error.parameter is None


@pytest.mark.parametrize(
    ("document", "parameter", "detail"),
    [
        (
            _params({"name": "a", "type": "bound", "value": [0, 1]}, ["b"]),
            2,
            'must be an object with "name", "type" and "value", got a list',
        ),
        (_params({"type": "bound", "value": [0, 1]}), 1, 'missing "name"'),
        (
            _params({"name": "", "type": "bound", "value": [0, 1]}),
            1,
            '"name" must be a non-empty string, got ""',
        ),
        (
            _params({"name": 7, "type": "bound", "value": [0, 1]}),
            1,
            '"name" must be a non-empty string, got 7',
        ),
    ],
)
def test_parameters_without_a_usable_name_are_named_by_position(
    tmp_path: Path, document: object, parameter: int, detail: str
) -> None:
    error = _error(tmp_path, document)
    assert (error.parameter, error.detail) == (parameter, detail)
    assert f"params.json: parameter #{parameter}: {detail}" in str(error)


def test_duplicate_names(tmp_path: Path) -> None:
    error = _error(tmp_path, _bad(name="ok", type="int", value=[1, 2]))
    assert str(error).endswith(
        "params.json: parameter 'ok': duplicate name (parameter #1 has it too); "
        "names must be unique"
    )


VALID_TYPES = '"bound", "number", "int", "integer", "choice", "categorical"'


@pytest.mark.parametrize(
    ("entry", "detail"),
    [
        # type
        ({"value": [0, 1]}, f'missing "type"; valid types: {VALID_TYPES}'),
        ({"type": "float", "value": [0, 1]}, f'unknown type "float"; valid types: {VALID_TYPES}'),
        (
            {"type": ["bound"], "value": [0, 1]},
            f'unknown type ["bound"]; valid types: {VALID_TYPES}',
        ),
        # keys
        (
            {"type": "bound", "value": [0, 1], "min": 0},
            'unknown key "min" for type "bound"; valid keys: "name", "type", "value", "log", '
            '"step", "when", "description"',
        ),
        (
            {"type": "number", "value": [1], "log": True},
            'unknown key "log" for type "number"; valid keys: "name", "type", "value", '
            '"when", "description"',
        ),
        ({"type": "bound", "value": [0, 1], "value ": [1, 2]}, 'unknown key "value "'),
        # value
        ({"type": "bound"}, 'missing "value"; "bound" needs "value": [low, high] with low < high'),
        (
            {"type": "number"},
            'missing "value"; "number" needs "value": a non-empty list of distinct numbers',
        ),
        # bound
        (
            {"type": "bound", "value": [0.3, 0.1]},
            '"bound" needs "value": [low, high] with low < high, got [0.3, 0.1]',
        ),
        ({"type": "bound", "value": [0.1, 0.1]}, "with low < high, got [0.1, 0.1]"),
        ({"type": "bound", "value": [0.1]}, "with low < high, got [0.1]"),
        ({"type": "bound", "value": [0, 1, 2]}, "with low < high, got [0, 1, 2]"),
        ({"type": "bound", "value": 0.5}, "with low < high, got 0.5"),
        ({"type": "bound", "value": ["0", 1]}, 'the bounds must be numbers, got ["0", 1]'),
        ({"type": "bound", "value": [False, 1]}, "the bounds must be numbers, got [false, 1]"),
        ({"type": "bound", "value": [0, None]}, "the bounds must be numbers, got [0, null]"),
        # log and step
        ({"type": "bound", "value": [0, 1], "log": True}, '"log": true needs low > 0, got [0, 1]'),
        (
            {"type": "bound", "value": [1, 2], "log": "yes"},
            '"log" must be true or false, got "yes"',
        ),
        ({"type": "bound", "value": [0, 1], "step": 0}, '"step" must be a positive number, got 0'),
        (
            {"type": "bound", "value": [0, 1], "step": -0.1},
            '"step" must be a positive number, got -0.1',
        ),
        (
            {"type": "bound", "value": [0, 1], "step": "0.1"},
            '"step" must be a positive number, got "0.1"',
        ),
        (
            {"type": "bound", "value": [0, 1], "step": 2},
            "step must be > 0 and <= high - low (1.0), got 2.0",
        ),
        (
            {"type": "bound", "value": [1, 2], "log": True, "step": 0.5},
            '"log" and "step" cannot be combined; drop one',
        ),
        # int
        (
            {"type": "int", "value": [1.5, 3]},
            '"int" needs "value": [low, high] with integers low <= high, got [1.5, 3]',
        ),
        (
            {"type": "integer", "value": [5, 1]},
            '"integer" needs "value": [low, high] with integers low <= high, got [5, 1]',
        ),
        (
            {"type": "int", "value": [0, 10], "log": True},
            '"log": true needs low >= 1, got [0, 10]',
        ),
        (
            {"type": "int", "value": [0, 10], "step": 2.5},
            '"step" must be a positive whole number, got 2.5',
        ),
        (
            {"type": "int", "value": [0, 10], "step": 0},
            '"step" must be a positive whole number, got 0',
        ),
        (
            {"type": "int", "value": [0, 10], "step": 11},
            "step must be a positive integer <= high - low (10), got 11",
        ),
        (
            {"type": "int", "value": [1, 10], "log": True, "step": 2},
            '"log" and "step" cannot be combined',
        ),
        ({"type": "int", "value": [0, 2**60]}, "integer bounds must be within +-2**53"),
        # number
        (
            {"type": "number", "value": []},
            '"number" needs "value": a non-empty list of distinct numbers, got []',
        ),
        ({"type": "number", "value": 0.1}, "a non-empty list of distinct numbers, got 0.1"),
        (
            {"type": "number", "value": [0.1, "a"]},
            '"number" values must be numbers, got "a" at position 2; use "choice" for strings',
        ),
        (
            {"type": "number", "value": [true_ := True]},
            '"number" values must be numbers, got true at position 1',
        ),
        (
            {"type": "number", "value": [0.1, 0.2, 0.1]},
            "duplicate value 0.1 at positions 1 and 3; values must be distinct",
        ),
        ({"type": "number", "value": [1, 1.0]}, "duplicate value 1.0 at positions 1 and 2"),
        # choice
        (
            {"type": "choice", "value": []},
            '"choice" needs "value": a non-empty list of distinct strings or numbers, got []',
        ),
        (
            {"type": "categorical", "value": ["a", None]},
            '"categorical" values must be strings or numbers, got null at position 2',
        ),
        (
            {"type": "choice", "value": [True, False]},
            'got true at position 1 (write booleans as "true"/"false" or 1/0)',
        ),
        ({"type": "choice", "value": [["a"]]}, 'got ["a"] at position 1'),
        ({"type": "choice", "value": ["a", "a"]}, 'duplicate value "a" at positions 1 and 2'),
    ],
)
def test_bad_parameters_name_file_parameter_and_problem(
    tmp_path: Path, entry: dict[str, object], detail: str
) -> None:
    error = _error(tmp_path, _bad(**entry))
    assert error.parameter == "p"
    assert str(error).startswith(f"{tmp_path / 'params.json'}: parameter 'p': ")
    assert detail in error.detail, error.detail


@pytest.mark.parametrize(
    ("values", "shown"),
    [
        ("[NaN, 1]", "[NaN, 1]"),
        ("[0, Infinity]", "[0, Infinity]"),
        ("[0, 1e999]", "[0, Infinity]"),
    ],
)
def test_non_finite_bounds(tmp_path: Path, values: str, shown: str) -> None:
    text = '{"parameters": [{"name": "p", "type": "bound", "value": ' + values + "}]}"
    error = _error(tmp_path, text)
    assert error.detail.endswith(f"the bounds must be finite, got {shown}")
    assert "parameter 'p'" in str(error)


def test_huge_integer_bound_is_not_finite_either(tmp_path: Path) -> None:
    huge = "1" + "0" * 400
    text = '{"parameters": [{"name": "p", "type": "bound", "value": [0, ' + huge + "]}]}"
    assert "the bounds must be finite" in _error(tmp_path, text).detail


def test_non_finite_number_values(tmp_path: Path) -> None:
    text = '{"parameters": [{"name": "p", "type": "number", "value": [1, NaN]}]}'
    assert _error(tmp_path, text).detail == "values must be finite, got NaN at position 2"


def test_duplicate_keys_in_a_parameter(tmp_path: Path) -> None:
    text = '{"parameters": [{"name": "p", "type": "bound", "value": [0, 1], "value": [1, 2]}]}'
    error = _error(tmp_path, text)
    assert (error.parameter, error.detail) == ("p", 'duplicate key "value"')


def test_long_values_are_cut_short(tmp_path: Path) -> None:
    error = _error(tmp_path, _bad(type="bound", value=list(range(100))))
    assert error.detail.endswith("...")
    assert len(str(error)) < 250


def test_a_parameter_file_over_one_mib_is_refused_before_it_is_read(tmp_path: Path) -> None:
    from disauto.submit.params import MAX_FILE_BYTES

    big = tmp_path / "big.json"
    big.write_text('{"parameters": [' + ", ".join(
        f'{{"name": "p{i}", "type": "number", "value": [1, 2, 3]}}' for i in range(30000))
        + "]}")
    assert big.stat().st_size > MAX_FILE_BYTES
    with pytest.raises(ParameterFileError) as caught:
        load_parameter_file(big)
    message = str(caught.value)
    assert message.startswith(f"{big}: is {big.stat().st_size} bytes; a parameter file may hold")
    assert "\n" not in message


# --- conditional parameters ("when") ----------------------------------------------------------

_OPTIMIZER = {"name": "optimizer", "type": "choice", "value": ["sgd", "adam", "rmsprop"]}


def test_when_makes_a_parameter_conditional(tmp_path: Path) -> None:
    space = _load(tmp_path, _params(
        _OPTIMIZER,
        {"name": "momentum", "type": "bound", "value": [0.5, 0.99], "when": {"optimizer": "sgd"}},
        {"name": "rho", "type": "bound", "value": [0.8, 0.99],
         "when": {"optimizer": ["rmsprop", "adam"]}},
        {"name": "nesterov", "type": "choice", "value": ["yes", "no"],
         "when": {"optimizer": "sgd"}},
        {"name": "dampening", "type": "number", "value": [0, 0.1],
         "when": {"nesterov": "no"}},
    ))
    conditions = space.conditions
    assert conditions.requirement("momentum") == (("optimizer", ("sgd",)),)
    assert conditions.requirement("rho") == (("optimizer", ("rmsprop", "adam")),)
    assert conditions.is_active("dampening", {"optimizer": "sgd", "nesterov": "no"})
    assert not conditions.is_active("dampening", {"optimizer": "adam"})
    assert space.grid_size(2) == 2 * (1 + 2) + 2 + 2  # sgd, then adam and rmsprop


def test_the_papers_format_is_unchanged_without_when(tmp_path: Path) -> None:
    space = _load(tmp_path, PAPER_EXAMPLE)
    assert not space.conditional


@pytest.mark.parametrize(("when", "detail"), [
    ("sgd", '"when" must be an object naming parents and their values, e.g. '
            '{"optimizer": "sgd"} or {"optimizer": ["sgd", "rmsprop"]}; got "sgd"'),
    ({}, '"when" must be an object naming parents and their values'),
    ({"optimizer": []}, '"when": the values of "optimizer" must be a string or a number, '
                        'or a non-empty list of them, got []'),
    ({"optimizer": None}, '"when": the values of "optimizer" must be a string or a number'),
    ({"optimizer": {"a": 1}}, '"when": the values of "optimizer" must be a string or a number'),
    ({"optimiser": "sgd"}, '"when" names unknown parameter \'optimiser\'; parameters: '
                           "optimizer, p"),
    ({"optimizer": "adamw"}, "\"when\" gives optimizer = 'adamw', which is not one of its values "
                             "'sgd', 'adam', 'rmsprop'"),
    ({"optimizer": ["sgd", "nag"]}, "\"when\" gives optimizer = 'nag'"),
    ({"p": 0.5}, '"when" names the parameter itself'),
])
def test_bad_when_is_a_one_line_error_naming_the_parameter(
        tmp_path: Path, when: object, detail: str) -> None:
    error = _error(tmp_path, _params(_OPTIMIZER, {"name": "p", "type": "bound",
                                                  "value": [0, 1], "when": when}))
    assert error.parameter == "p"
    assert error.detail.startswith(detail), error.detail


def test_a_parent_must_be_a_list_of_values(tmp_path: Path) -> None:
    error = _error(tmp_path, _params({"name": "lr", "type": "bound", "value": [0, 1]},
                                     {"name": "p", "type": "int", "value": [1, 3],
                                      "when": {"lr": 0.5}}))
    assert error.detail == ('"when" names \'lr\', a range; a parent must be a list of values '
                            '("number" or "choice")')


def test_a_cycle_of_conditions_is_a_one_line_error(tmp_path: Path) -> None:
    error = _error(tmp_path, _params(
        {"name": "a", "type": "choice", "value": ["x", "y"], "when": {"c": "x"}},
        {"name": "b", "type": "choice", "value": ["x", "y"], "when": {"a": "x"}},
        {"name": "c", "type": "choice", "value": ["x", "y"], "when": {"b": ["x", "y"]}},
    ))
    assert error.parameter == "a"
    assert error.detail == 'its "when" conditions form a cycle: a -> c -> b -> a'


def test_a_duplicate_parent_in_when_is_an_error(tmp_path: Path) -> None:
    text = ('{"parameters": [{"name": "o", "type": "choice", "value": ["a", "b"]}, '
            '{"name": "p", "type": "bound", "value": [0, 1], "when": {"o": "a", "o": "b"}}]}')
    assert _error(tmp_path, text).detail == 'duplicate key "o"'

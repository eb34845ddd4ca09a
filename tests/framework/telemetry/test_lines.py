"""The sample line format: good lines become samples, every bad line one message."""

from __future__ import annotations

import pytest

from disauto.common.telemetry import Sample
from disauto.framework._telemetry.lines import LineError
from disauto.framework._telemetry.lines import format_lines
from disauto.framework._telemetry.lines import parse_line
from disauto.framework._telemetry.lines import parse_lines


def test_a_full_line_and_a_minimal_line() -> None:
    full = parse_line('{"data_name": "gpu_temp", "node": "agent-1", "value": 61.5, '
                      '"trial": 3, "time": 100.25}', now=5.0)
    assert full == Sample("gpu_temp", "agent-1", 100.25, 61.5, 3)
    minimal = parse_line('{"data_name": "load", "node": "host", "value": 2}', now=5.0)
    assert minimal == Sample("load", "host", 5.0, 2.0, None)


@pytest.mark.parametrize(("line", "error"), [
    ("not json", "not JSON: 'not json'"),
    ("[1, 2]", "a sample line is a JSON object, not list"),
    ('{"node": "a", "value": 1}', "missing data_name (required: data_name, node, value"),
    ('{"data_name": "x", "node": "a", "value": 1, "unit": "s"}',
     "unknown key unit (valid: data_name, node, value, trial, time)"),
    ('{"data_name": "a b", "node": "a", "value": 1}', "bad data_name 'a b'"),
    ('{"data_name": "x", "node": "", "value": 1}', "bad node ''"),
    ('{"data_name": "x", "node": "a", "value": "1"}', "bad value '1' of x: a finite number"),
    ('{"data_name": "x", "node": "a", "value": true}', "bad value True of x"),
    ('{"data_name": "x", "node": "a", "value": NaN}', "bad value nan of x"),
    ('{"data_name": "x", "node": "a", "value": 1, "trial": -1}', "bad trial -1"),
    ('{"data_name": "x", "node": "a", "value": 1, "trial": "3"}', "bad trial '3'"),
    ('{"data_name": "x", "node": "a", "value": 1, "time": "now"}', "bad time 'now'"),
])
def test_bad_lines_say_what_is_wrong(line: str, error: str) -> None:
    with pytest.raises(LineError) as caught:
        parse_line(line, now=0.0)
    assert str(caught.value).startswith(error)
    assert "\n" not in str(caught.value)


def test_bad_lines_do_not_stop_the_good_ones_and_round_trip() -> None:
    text = ['{"data_name": "x", "node": "a", "value": 1}', "", "garbage",
            '{"data_name": "x", "node": "b", "value": 2, "trial": 7, "time": 3.5}']
    samples, errors = parse_lines(text, now=1.0)
    assert samples == [Sample("x", "a", 1.0, 1.0), Sample("x", "b", 3.5, 2.0, 7)]
    assert errors == ["line 3: not JSON: 'garbage' (a sample line is one JSON object, e.g. "
                      '{"data_name": "x", "node": "agent-1", "value": 1.5})']
    again, none = parse_lines(format_lines(samples).splitlines(), now=99.0)
    assert again == samples and none == []

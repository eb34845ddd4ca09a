"""Single flag values: one-line errors that name the flag and what would be valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from disauto.submit.parser import UsageError
from disauto.submit.values import existing_file
from disauto.submit.values import key_values
from disauto.submit.values import pair
from disauto.submit.values import positive_number
from disauto.submit.values import size_mb


def test_key_values_trim_and_keep_the_last() -> None:
    assert key_values("--x", [" a = 1 ", "b=", "a=2"]) == {"a": "2", "b": ""}
    for bad in ("novalue", "=3", " =3"):
        with pytest.raises(UsageError, match=f"--x: invalid value {bad!r}: expected KEY=VALUE"):
            key_values("--x", [bad])


def test_numbers_sizes_pairs_and_files(tmp_path: Path) -> None:
    assert positive_number("--cpus", "2.5") == 2.5
    assert positive_number("--n", "0", integer=True, zero=True) == 0
    for text in ("0", "-1", "nan", "inf", "two"):
        with pytest.raises(UsageError, match="--cpus: invalid value"):
            positive_number("--cpus", text)
    with pytest.raises(UsageError, match="--n"):
        positive_number("--n", "1.5", integer=True)
    assert size_mb("--mem", "5G") == 5120.0
    with pytest.raises(UsageError, match="--mem"):
        size_mb("--mem", "5X")
    assert pair("--input", "/data#d") == ("/data", "d")
    with pytest.raises(UsageError, match="expected SRC#NAME"):
        pair("--input", "/data")
    (tmp_path / "train.py").write_text("")
    assert existing_file("--files", str(tmp_path / "train.py")) == str(tmp_path / "train.py")
    with pytest.raises(UsageError, match="no such file"):
        existing_file("--files", str(tmp_path / "missing.py"))

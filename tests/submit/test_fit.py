"""Terminal output that fits: tables, lines of parts, prose and paths at a given width."""

from __future__ import annotations

import pytest

from disauto.submit import fit
from disauto.submit.fit import Column
from disauto.submit.fit import Part


def test_the_width_is_columns_else_80(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "123")
    assert fit.columns() == 123
    monkeypatch.delenv("COLUMNS")
    assert fit.columns() == 80  # pytest's output is no terminal
    monkeypatch.setenv("COLUMNS", "10")
    assert fit.columns() == fit.MIN_COLUMNS


def test_clip_marks_where_it_cut() -> None:
    assert fit.clip("abcdef", 6) == "abcdef"
    assert fit.clip("abcdef", 4) == "abc…"
    assert fit.clip_left("abcdef", 4) == "…def"


def test_a_path_keeps_its_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "/home/someone")
    path = "/home/someone/.disauto/jobs/mnist-20261126-060756-33fd/logs/trial-0001.stdout"
    assert fit.short_path(path, 200) == "~/.disauto/jobs/mnist-20261126-060756-33fd/logs/" \
                                        "trial-0001.stdout"
    assert fit.short_path(path, 50) == "~/.disauto/…/logs/trial-0001.stdout"
    assert fit.short_path("/tmp/a", 50) == "/tmp/a"


def test_prose_wraps_between_words_never_inside_a_url() -> None:
    url = "http://127.0.0.1:40123/jobs/mnist-20261126-060756-33fd/#token=" + "f" * 48
    lines = fit.wrap(f"da-submit: the page with the token: {url} (keep it)", 60)
    assert lines == ["da-submit: the page with the token:", f"  {url}", "  (keep it)"]


def test_the_least_needed_part_gives_way_first() -> None:
    parts = [Part(("core long", "core"), 10), Part((" +extra", ""), 0),
             Part((" | best=1 (trial-1)", " | best=1"), 5, optional=True),
             Part((" | waits",), 3, optional=True)]
    assert fit.fit_parts(parts, 100) == "core long +extra | best=1 (trial-1) | waits"
    assert fit.fit_parts(parts, 36) == "core long | best=1 (trial-1) | waits"
    assert fit.fit_parts(parts, 26) == "core long | best=1 | waits"
    assert fit.fit_parts(parts, 20) == "core long | best=1"  # the wait left out
    assert fit.fit_parts(parts, 10) == "core long"  # back to its long form once alone
    assert fit.fit_parts(parts, 5) == "core"


def test_a_table_clips_loose_columns_then_drops_then_clips_the_last_resort() -> None:
    table = [Column("id", narrowest=8, last=True), Column("text", narrowest=6),
             Column("when", drop=1)]
    rows = [["job-0123456789", "a long description", "12:00"]]
    assert fit.fit_table(table, rows, 100) == [
        "id              text                when", "-" * 14 + "  " + "-" * 18 + "  -----",
        "job-0123456789  a long description  12:00"]
    assert fit.fit_table(table, rows, 30)[2] == "job-0123456789  a long…  12:00"
    assert fit.fit_table(table, rows, 22)[2] == "job-0123456789  a lon…"  # 'when' dropped
    assert fit.fit_table(table, rows, 16)[2] == "job-012…  a lon…"

"""What the browser tests measure of a page (the browser itself: ``tests/conftest.py``)."""

from __future__ import annotations

import time
from typing import Any


def box_of(element: Any, within: float = 10.0) -> dict[str, float]:
    """Where a Playwright locator's element is drawn, once it is: a job page redraws its
    trials table at each poll, and between two draws a cell may be gone for a moment, when
    Playwright gives no box for it."""
    deadline = time.monotonic() + within
    while (box := element.bounding_box()) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert box is not None, f"{element} was never drawn"
    return dict(box)

"""What the browser tests measure of a page (the browser itself: ``tests/conftest.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
import time
from typing import Any


LAPTOP = {"width": 1366, "height": 768}
"""A laptop's window: every page is checked at this size."""


@contextmanager
def watched_page(browser: Any, viewport: dict[str, int] = LAPTOP,
                 failed_requests: bool = True) -> Iterator[tuple[Any, list[str]]]:
    """A new page of ``browser`` in a window of ``viewport``, and the errors it has while the
    block runs: console errors, uncaught exceptions and (``failed_requests``) requests that
    failed."""
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    if failed_requests:
        page.on("requestfailed", lambda r: errors.append(f"failed {r.url}"))
    try:
        yield page, errors
    finally:
        context.close()


def box_of(element: Any, within: float = 10.0) -> dict[str, float]:
    """Where a Playwright locator's element is drawn, once it is: a job page redraws its
    trials table at each poll, and between two draws a cell may be gone for a moment, when
    Playwright gives no box for it."""
    deadline = time.monotonic() + within
    while (box := element.bounding_box()) is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert box is not None, f"{element} was never drawn"
    return dict(box)

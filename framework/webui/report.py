"""``report.html``: the job page as one self-contained file, written when the job ends.

The page, its style, its script, plotly.min.js and the job's data (``views.page_data``) are
inlined, so the file opens from disk with no server and no network.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from disauto.common import paths
from disauto.framework.webui.server import static_bytes
from disauto.framework.webui.views import REPORT_WAIT
from disauto.framework.webui.views import Record
from disauto.framework.webui.views import page_data
from disauto.framework.webui.views import to_json


logger = logging.getLogger(__name__)

_CSS = '<link rel="stylesheet" href="/static/job.css">'
_PLOTLY = '<template id="plotly-script" data-src="/static/plotly.min.js"></template>'
_JS = '<script src="/static/job.js"></script>'


def _script(text: str) -> str:
    # "</script" inside inline text would end the element early; "<\/" means "</" in JS.
    return "<script>" + text.replace("</script", "<\\/script") + "</script>"


def render(record: Record) -> str:
    """The report's HTML for ``record``."""
    html = static_bytes("job.html").decode()
    for tag in (_CSS, _PLOTLY, _JS):
        if tag not in html:
            raise ValueError(f"job.html lacks {tag}")
    data = to_json(settled(page_data(record, wait=REPORT_WAIT, rows=True))).replace(
        "</", "<\\/")
    html = html.replace(_CSS, "<style>" + static_bytes("job.css").decode() + "</style>")
    html = html.replace(_PLOTLY, _script(static_bytes("plotly.min.js").decode()))
    return html.replace(_JS, _script(f"window.DISAUTO_DATA = {data};") + "\n"
                        + _script(static_bytes("job.js").decode()))


UNSETTLED_NOTE = ("parameter importance was not computed before the job ended (the machine was "
                  "busy); `da-job ui` computes it")


def settled(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` for a page that polls no more: importance still pending at the end is the last
    answer computed during the job (its basis says over which trials) or a note."""
    importance = data.get("importance")
    if not isinstance(importance, dict) or not importance.get("pending"):
        return data
    if "values" in importance:
        kept = {key: value for key, value in importance.items() if key != "pending"}
        kept["basis"] = f"{kept.get('basis', '')} (computed while the job ran)".strip()
        return {**data, "importance": kept}
    return {**data, "importance": {"note": UNSETTLED_NOTE}}


def write(folder: Path, record: Record) -> Path | None:
    """Write ``<folder>/report.html`` (atomically); None when it cannot be written."""
    target = folder / paths.REPORT
    try:
        text = render(record)
        tmp = target.with_suffix(".tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)
    except (OSError, ValueError) as err:
        logger.warning("cannot write %s: %s", target, err)
        return None
    return target

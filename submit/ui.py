"""``da-job ui``: every job under ``$DISAUTO_HOME`` in the browser, from the records.

The same page the framework serves while a job runs (:mod:`framework.webui`), read from each
job's folder: an index of jobs at ``/``, each job's page at ``/jobs/<id>/``. Ended and
interrupted jobs are shown as recorded; a job running in another process can still be killed
from here (its token needed), through its record as ``da-job kill`` does.
"""

from __future__ import annotations

from collections.abc import Iterator
from collections.abc import Mapping
from pathlib import Path
from typing import IO
import webbrowser

from disauto.common import paths
from disauto.framework.webui import JobPageServer
from disauto.framework.webui import JobSource
from disauto.framework.webui import RecordedJob
from disauto.framework.webui import compute_importance_in_worker
from disauto.framework.webui import stop_importance_worker
from disauto.submit.fit import columns
from disauto.submit.fit import short_path
from disauto.submit.jobs import load


class RecordedJobs(Mapping[str, JobSource]):
    """The jobs under ``$DISAUTO_HOME``, looked up as they are asked for (new jobs appear)."""

    def __init__(self, root: Path) -> None:
        self._root = root

    def _folders(self) -> list[Path]:
        if not self._root.is_dir():
            return []
        # A dot folder is not a job: da-job import's or rm's, on its way in or out.
        return sorted(p for p in self._root.iterdir()
                      if not p.name.startswith(".") and (p / paths.JOB_DB).is_file())

    def __getitem__(self, job_id: str) -> JobSource:
        folder = self._root / job_id
        if "/" in job_id or job_id.startswith(".") or not (folder / paths.JOB_DB).is_file():
            raise KeyError(job_id)
        return RecordedJob(job_id, folder, lambda: load(folder).state)

    def __iter__(self) -> Iterator[str]:
        return iter([folder.name for folder in self._folders()])

    def __len__(self) -> int:
        return len(self._folders())


def serve(host: str, port: int, out: IO[str], open_browser: bool = False) -> None:
    """Serve until interrupted (Ctrl-C); with ``open_browser``, open the index in this machine's
    web browser (Python's ``webbrowser``: ``$BROWSER``, else the desktop's) once listening."""
    jobs = RecordedJobs(paths.jobs_dir())
    compute_importance_in_worker()
    server = JobPageServer(lambda: jobs, host, host, port=port)
    count = f"{len(jobs)} job{'' if len(jobs) == 1 else 's'}"
    print(f"da-job ui: {count} of {short_path(paths.jobs_dir(), columns() - 40)}, "
          "served until Ctrl-C; open in a browser:", file=out)
    print(f"  {server.url}", file=out, flush=True)
    if open_browser and not webbrowser.open(server.url):
        print("da-job ui: no web browser found here (set $BROWSER); open the address above",
              file=out, flush=True)
    try:
        server.serve_forever()
    finally:
        server.stop()
        stop_importance_worker()

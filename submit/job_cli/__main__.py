"""``python -m disauto.submit.job_cli``: the da-job command."""

import sys

from disauto.submit.job_cli import main


sys.exit(main())

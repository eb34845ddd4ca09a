"""The job page: a job's trials, plots, logs and kill buttons in a browser (docs/ui.md).

``views`` turns a job's record into the page's JSON (no server needed), ``importance`` asks
Optuna which parameters mattered, ``server`` serves the page and its JSON over HTTP (the
framework while the job runs, ``da-job ui`` from the records), ``report`` writes the
self-contained ``report.html``; ``static/`` holds the page itself.
"""

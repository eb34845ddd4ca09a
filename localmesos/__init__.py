"""localmesos: an embedded, single-machine Mesos master and agents (see docs/local-mode.md).

It stands on ``common`` and ``protos`` alone, and of the other packages only ``submit.local``
imports it (``tests/test_architecture.py`` keeps both so).
"""

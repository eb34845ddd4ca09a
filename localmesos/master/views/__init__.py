"""What the embedded master shows, in Mesos 1.11's JSON shapes (apache/mesos
``src/master/http.cpp``, ``src/master/metrics.cpp``, ``src/master/flags.cpp``).

Each view reads the master's records under its lock and changes nothing: ``/master/state``
(:mod:`~localmesos.master.views.state`), the other read-only endpoints
(:mod:`~localmesos.master.views.endpoints`), ``/metrics/snapshot``
(:mod:`~localmesos.master.views.metrics`), the flags (:mod:`~localmesos.master.views.flags`)
and the operator API's read calls (:mod:`~localmesos.master.views.operator_api` over
:mod:`~localmesos.master.views.operator_views`). The HTTP server (:mod:`localmesos.server`) serves
them.
"""

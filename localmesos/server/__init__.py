"""The embedded cluster's HTTP server: one loopback port for the master, its agents and the web
UI, as libprocess serves a Mesos master.

:mod:`~localmesos.server.server` owns the socket and the connections,
:mod:`~localmesos.server.wire` reads requests and writes answers and event streams,
:mod:`~localmesos.server.routes` decides who answers a path:
:mod:`~localmesos.server.master_routes` (the scheduler and operator APIs, the read-only
endpoints), :mod:`~localmesos.server.agent_routes` (the executor API, an agent's state and
usage), :mod:`~localmesos.server.files_routes` (the sandboxes) or the web UI
(:mod:`localmesos.webui`). :mod:`~localmesos.server.messages` holds a request, an answer and the
header rules they all share.

(Not named ``http``: a folder of that name shadows the standard library's ``http`` for any
script run beside it.)
"""

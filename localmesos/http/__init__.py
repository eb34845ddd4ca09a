"""The embedded cluster's HTTP server: one loopback port for the master, its agents and the web
UI, as libprocess serves a Mesos master.

:mod:`~localmesos.http.server` owns the socket and the connections, :mod:`~localmesos.http.wire`
reads requests and writes answers and event streams, :mod:`~localmesos.http.routes` decides who
answers a path: :mod:`~localmesos.http.master_routes` (the scheduler and operator APIs, the
read-only endpoints), :mod:`~localmesos.http.agent_routes` (the executor API, an agent's state
and usage), :mod:`~localmesos.http.files_routes` (the sandboxes) or the web UI
(:mod:`localmesos.webui`). :mod:`~localmesos.http.messages` holds a request, an answer and the
header rules they all share.
"""

"""The media types the embedded master speaks, and its one wording for refusing protobuf.

Mesos serves JSON and protobuf on every API and refuses anything else with "Expecting
'Content-Type' of application/json or application/x-protobuf" (or 'Accept' to allow either).
This master speaks JSON only, so its refusals name only what it serves: 415 for a protobuf
body, 406 for an ``Accept`` that rules JSON out — on the scheduler and the operator API alike.
"""

from __future__ import annotations


APPLICATION_JSON = "application/json"
APPLICATION_PROTOBUF = "application/x-protobuf"

JSON_ONLY_CONTENT_TYPE = (
    f"Expecting 'Content-Type' of {APPLICATION_JSON} (localmesos speaks JSON only, "
    f"not {APPLICATION_PROTOBUF})"
)
JSON_ONLY_ACCEPT = (
    f"Expecting 'Accept' to allow '{APPLICATION_JSON}' (localmesos speaks JSON only, "
    f"not '{APPLICATION_PROTOBUF}')"
)

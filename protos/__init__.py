"""DisAuto's gRPC contract: the .proto files, and the code tools/gen_protos.py generates."""

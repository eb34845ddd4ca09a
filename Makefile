# The two commands a newcomer runs: `make demo` and `make test`. Each sets itself up in .venv.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
WHEELS := build/wheels
STAMP := $(VENV)/.installed
PROTO_STAMP := protos/.generated
PACKAGES := appcore apprunner_sdk common executor framework localmesos protos submit bench

.PHONY: all venv protos bytecode lint test test-fast test-long test-mesos demo bench clean bench-suggest bench-quality bench-early-stopping
.PHONY: bench-paper bench-paper-full bench-scale bench-scale-short bench-default-path bench-pbt
.PHONY: bench-quick

all: test

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip>=23.2" "setuptools>=68" wheel

# pymesos 0.3.15 -> http-parser 0.9.0 cannot build on Python >= 3.11: build its pure-Python
# part as a wheel first, then let pip resolve pymesos' dependency to it.
$(WHEELS)/http_parser-0.9.0-py3-none-any.whl: tools/build_http_parser_wheel.py | $(VENV)/bin/python
	$(PY) tools/build_http_parser_wheel.py --out $(WHEELS)

$(STAMP): setup.cfg setup.py pyproject.toml $(WHEELS)/http_parser-0.9.0-py3-none-any.whl | $(VENV)/bin/python
	$(PY) -m pip install --quiet "grpcio-tools==1.85.1"
	$(PY) tools/gen_protos.py
	$(PY) -m pip install --quiet --find-links $(WHEELS) -e ".[test]"
	touch $(STAMP)

$(PROTO_STAMP): $(wildcard protos/*.proto) tools/gen_protos.py $(STAMP)
	$(PY) tools/gen_protos.py
	touch $(PROTO_STAMP)

venv: $(STAMP) $(PROTO_STAMP)

protos: $(PROTO_STAMP)

lint: venv
	$(VENV)/bin/ruff check .

# Three workers on the 2-core machine: the suite is whole jobs, partly waiting on their
# processes, and two workers left the CPU a fifth idle. The tests that start Docker or the
# browser share one worker (tests/conftest.py). A fresh clone: 3,123 tests, 518 s of pytest,
# 10 min 6 s with the venv (2026-11-28, later the same day: docs/benchmarks.md).
WORKERS ?= 3
test: venv bytecode
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup -m "not long" --durations=25

# The long scenarios (marked `long`: 20 s or more each, their path covered in make test too),
# kept out of make test so that it stays within 15 minutes on the 2-core machine.
test-long: venv bytecode
	$(PY) -m pytest -n $(WORKERS) --dist loadgroup -m long

# The conformance scenarios (tests/conformance) against a real Mesos as well as the embedded
# cluster: MESOS_HOME is a prefix built by tools/mesos/build.sh SRC PREFIX (docs/real-mesos.md).
# make test runs the embedded half alone.
test-mesos: venv bytecode
	@test -x "$(MESOS_HOME)/sbin/mesos-master" || { echo "make test-mesos: MESOS_HOME must be a \
	prefix built by tools/mesos/build.sh SRC PREFIX (docs/real-mesos.md)" >&2; exit 2; }
	MESOS_HOME="$(MESOS_HOME)" $(PY) -m pytest -n 2 --dist loadgroup tests/conformance -rs \
	  --durations=0

# Every job of the suite starts several Python processes of this checkout (da-submit, AppCore,
# runners, the importance worker): where PYTHONDONTWRITEBYTECODE is set (as on the CI machine)
# each of them compiled its modules again. Compiled once here, they are read from __pycache__.
bytecode: venv
	$(PY) -m compileall -q -j 0 $(PACKAGES) disauto

# The unit tests alone: nothing starts a process or a server (tests/conftest.py enforces it).
# About 45 s of CPU in one process, 9 s of it collecting, most of that compiling: where
# PYTHONDONTWRITEBYTECODE is set (as on this machine) each run compiled every module again, and
# pytest rewrote and compiled every test module again, in each worker. Unset here, and with
# make bytecode, they are compiled once (collection 9 s -> 3.5 s of CPU). Two workers on the
# 2-core machine, each module's functions and each class's methods on one worker (--dist
# loadscope: the architecture tests parse the tree once, a class's fixtures are made once);
# it beat --dist load in interleaved runs on the shared machine (docs/benchmarks.md, "The fast
# tier"). (Nothing of this tier is in a --dist loadgroup group: it starts no engine.)
FAST_WORKERS ?= 2
test-fast: venv bytecode
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n $(FAST_WORKERS) --dist loadscope \
	  -m "not integration and not slow"

# A real random search on the embedded cluster with the fast example (4 trials in flight).
demo: venv
	cd examples && ../$(VENV)/bin/da-submit --app-name digits-demo \
	  --files sklearn_digits.py --app-runner-launch-cmd "python sklearn_digits.py" \
	  --app-runner-cpus 0.5 --app-runner-memory 256M --app-core-cpus 0.5 --app-core-memory 256M \
	  --trail-steps 16 --parallelism 4 --tuning-type random-search \
	  --tuning-parameters sklearn_digits_params.json --seed 7

bench: venv bench-suggest bench-quality bench-early-stopping bench-paper
	$(PY) -m bench.offer_cycle

# Issue 4's benchmarks (docs/benchmarks.md): each one command; on 2 cores bench-suggest takes
# about 10 minutes (4 of them the GP backend), bench-quality 45, bench-early-stopping 2.
bench-suggest: venv
	$(PY) -m bench.suggest_latency

bench-quality: venv
	$(PY) -m bench.search_quality --seeds 10 --budget 200 --gp-budget 25

bench-early-stopping: venv
	$(PY) -m bench.early_stopping

# Population Based Training against random search, the same trial-steps, 5 seeds (a second).
bench-pbt: venv
	$(PY) -m bench.pbt --seeds 5

# Issue 36 (docs/benchmarks.md, The default path): make demo's search with a task per trial
# and with the default (warm slots, --slot-preload auto), interleaved; about 3 minutes on 2 cores.
bench-default-path: venv
	$(PY) -m bench.default_path --runs 3

# Issue 29 (docs/benchmarks.md, Scale): a 10,000-trial job, 50 jobs on 20 agents, 500 agents x
# 50 frameworks, and TPE's window. bench-scale takes hours on 2 cores; bench-scale-short minutes.
bench-scale: venv
	$(PY) -m bench.scale
	$(PY) -m bench.tpe_window
bench-scale-short: venv
	$(PY) -m bench.scale --short

# The performance targets in a few minutes on 2 cores (docs/benchmarks.md): reduced versions of
# bench.warm_slots (task mode, preloaded slots) and bench.scale's job, each figure beside its
# target, with the load average.
bench-quick: venv
	$(PY) -m bench.quick

# Issue 5: the paper's Tables 2-4 (FIFO, dynamic, dynamic-plus) and the plots in docs/.
# bench-paper is the reduced matrix (3 runs per cell, about 1.2 h on 2 cores); bench-paper-full
# is the paper's method (10 runs per cell, drop the highest and lowest; about 4 h, 25 minutes a
# run of all 30 cells). Both resume an interrupted run from bench/results/paper/runs.jsonl.
BENCH_EXTRA = $(PY) -c "import matplotlib" 2>/dev/null || \
	$(PY) -m pip install --quiet --find-links $(WHEELS) -e ".[bench]"
bench-paper: venv
	$(BENCH_EXTRA)
	$(PY) -m bench.priority_sim
	$(PY) -m bench.paper --runs 3

bench-paper-full: venv
	$(BENCH_EXTRA)
	$(PY) -m bench.paper --runs 10

clean:
	rm -rf $(VENV) build protos/*_pb2*.py* $(PROTO_STAMP)

# Containers (issue 6): a Docker engine (installed and started if missing, as root), and the
# images built from Debian packages and PyPI wheels on this machine (reused while unchanged).
.PHONY: docker image-small image-apprunner
docker:
	bash tools/ensure_docker.sh

image-small: venv docker
	$(PY) tools/docker_images.py apprunner-small

# The AppRunner image for a real cluster (TensorFlow with CUDA: several GB; TENSORFLOW=
# tensorflow-cpu==2.21.0 for CPU-only agents).
TENSORFLOW ?= tensorflow[and-cuda]==2.21.0
image-apprunner: venv docker
	$(PY) tools/docker_images.py apprunner --tensorflow "$(TENSORFLOW)"

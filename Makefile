# Stoker's entry points. Each target installs what it needs itself (system packages
# included) into .venv at the repository root.
#   make demo   set up, build, generate a demo dataset, benchmark it
#   make test   set up, build, run the C++ (ctest) and Python (pytest) tests

PYTHON   ?= python3
VENV     := .venv
PY       := $(VENV)/bin/python
JOBS     ?= $(shell nproc)
CPP_DIR  := build/cpp
DEPS     := $(VENV)/.deps-installed
SYSDEPS  := build/.system-deps-installed
DEMO_DIR := demo-data/criteo
DEMO_ROWS ?= 2000000

.PHONY: all setup build build-cpp test test-cpp test-python demo lint lint-threads clean

all: build

$(SYSDEPS): scripts/install-system-deps.sh
	bash scripts/install-system-deps.sh
	@mkdir -p $(dir $@) && touch $@

$(DEPS): requirements-dev.txt $(SYSDEPS)
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	@touch $@

setup: $(DEPS)

# The Python package with its extension, built against the venv's pinned pyarrow.
build: $(DEPS)
	$(PY) -m pip install -q --no-build-isolation --no-deps .

# The C++ library, unit tests and example, built apart from the extension.
build-cpp: $(DEPS)
	PATH=$(abspath $(VENV))/bin:$$PATH cmake -S . -B $(CPP_DIR) -G Ninja \
	  -DPython_EXECUTABLE=$(abspath $(PY)) -DSTOKER_BUILD_PYTHON=OFF \
	  -DSTOKER_BUILD_TESTS=ON -DSTOKER_BUILD_BENCHMARKS=ON -DSTOKER_WARNINGS_AS_ERRORS=ON
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(CPP_DIR) -j $(JOBS)

test-cpp: build-cpp
	PATH=$(abspath $(VENV))/bin:$$PATH ctest --test-dir $(CPP_DIR) --output-on-failure -j $(JOBS)

test-python: build
	$(PY) -m pytest -q --timeout=300

test: test-cpp test-python

demo: build
	$(VENV)/bin/stoker gen $(DEMO_DIR) --preset criteo --rows $(DEMO_ROWS) --files 4 --overwrite
	$(VENV)/bin/stoker bench $(DEMO_DIR) --batch-size 4096

CPP_SOURCES = $(wildcard include/stoker/*.h src/*/*.h src/*/*.cc src/*/*/*.h src/*/*/*.cc tests/cpp/*.h \
                         tests/cpp/*.cc examples/*.cc benchmarks/cpp/*.cc)

lint: $(DEPS) lint-threads
	command -v clang-format >/dev/null || apt-get install -y -qq clang-format
	clang-format --dry-run --Werror $(CPP_SOURCES)
	$(VENV)/bin/ruff check python tests benchmarks

# The engine and its tests built by Clang, whose thread-safety analysis checks the lock
# annotations (GUARDED_BY, REQUIRES, ...: src/util/thread_annotations.h); any finding fails.
# A Debug build, so the ARROW_DCHECKs compile as checks too.
CLANG_TSA_DIR := build/clang-tsa
lint-threads: $(DEPS)
	command -v clang++ >/dev/null || apt-get install -y -qq clang
	PATH=$(abspath $(VENV))/bin:$$PATH CC=clang CXX=clang++ cmake -S . -B $(CLANG_TSA_DIR) -G Ninja \
	  -DPython_EXECUTABLE=$(abspath $(PY)) -DSTOKER_BUILD_PYTHON=OFF \
	  -DSTOKER_BUILD_TESTS=ON -DSTOKER_WARNINGS_AS_ERRORS=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DCMAKE_CXX_FLAGS="-Wthread-safety -Werror=thread-safety"
	PATH=$(abspath $(VENV))/bin:$$PATH cmake --build $(CLANG_TSA_DIR) -j $(JOBS)

clean:
	rm -rf build demo-data

# `make bench`: Stoker against the loaders users would pick instead (benchmarks/harness.py;
# the figures and how to read them: docs/benchmarks.md). Stoker, plain PyArrow and the PyTorch
# DataLoader run in .venv as `make build` installed it; the peers get environments of their
# own so the product's stays lean: .bench-venv (Ray Data, matplotlib, the harness itself),
# .bench-petastorm-venv (Petastorm 0.13 needs pyarrow < 15 and numpy < 2),
# .bench-streaming-venv (Mosaic Streaming needs numpy < 2.2 and torchvision, installed from the
# package index alone: see requirements-streaming.txt) and .bench-grain-venv (Grain). BENCH_ARGS
# passes options to the harness, e.g. BENCH_ARGS="--scale 0.1 --repeats 1" for a quick look.
BENCH_VENV      := .bench-venv
BENCH_PY        := $(BENCH_VENV)/bin/python
BENCH_DEPS      := $(BENCH_VENV)/.deps-installed
PETASTORM_VENV  := .bench-petastorm-venv
PETASTORM_PY    := $(PETASTORM_VENV)/bin/python
PETASTORM_DEPS  := $(PETASTORM_VENV)/.deps-installed
PETASTORM       := petastorm==0.13.1
STREAMING_VENV  := .bench-streaming-venv
STREAMING_PY    := $(STREAMING_VENV)/bin/python
STREAMING_DEPS  := $(STREAMING_VENV)/.deps-installed
GRAIN_VENV      := .bench-grain-venv
GRAIN_PY        := $(GRAIN_VENV)/bin/python
GRAIN_DEPS      := $(GRAIN_VENV)/.deps-installed
BENCH_ARGS      ?=

.PHONY: bench

$(BENCH_DEPS): benchmarks/requirements-bench.txt benchmarks/constraints.txt $(SYSDEPS)
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_PY) -m pip install -q --upgrade pip
	$(BENCH_PY) -m pip install -q -c benchmarks/constraints.txt -r benchmarks/requirements-bench.txt
	@touch $@

$(PETASTORM_DEPS): benchmarks/requirements-petastorm.txt benchmarks/constraints.txt $(SYSDEPS)
	$(PYTHON) -m venv $(PETASTORM_VENV)
	$(PETASTORM_PY) -m pip install -q --upgrade pip
	$(PETASTORM_PY) -m pip install -q -c benchmarks/constraints.txt \
	  -r benchmarks/requirements-petastorm.txt
	$(PETASTORM_PY) -m pip install -q --no-deps $(PETASTORM)
	@touch $@

# --isolated: this environment's torch and torchvision come from the package index, never from
# a local wheel directory a machine's pip configuration may add (a CPU-only torch there cannot
# load the index's torchvision).
$(STREAMING_DEPS): benchmarks/requirements-streaming.txt benchmarks/constraints.txt $(SYSDEPS)
	$(PYTHON) -m venv $(STREAMING_VENV)
	$(STREAMING_PY) -m pip install -q --isolated --upgrade pip
	$(STREAMING_PY) -m pip install -q --isolated -c benchmarks/constraints.txt \
	  -r benchmarks/requirements-streaming.txt
	@touch $@

$(GRAIN_DEPS): benchmarks/requirements-grain.txt benchmarks/constraints.txt $(SYSDEPS)
	$(PYTHON) -m venv $(GRAIN_VENV)
	$(GRAIN_PY) -m pip install -q --upgrade pip
	$(GRAIN_PY) -m pip install -q -c benchmarks/constraints.txt -r benchmarks/requirements-grain.txt
	@touch $@

bench: build $(BENCH_DEPS) $(PETASTORM_DEPS) $(STREAMING_DEPS) $(GRAIN_DEPS)
	$(BENCH_PY) benchmarks/harness.py --default-python $(PY) \
	  --python ray-data=$(BENCH_PY) --python petastorm=$(PETASTORM_PY) \
	  --python streaming=$(STREAMING_PY) --python grain=$(GRAIN_PY) \
	  --charts docs/img --doc docs/benchmarks.md $(BENCH_ARGS)

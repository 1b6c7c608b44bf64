# Every target runs from the repository root and uses the project's own .venv.
PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python

.PHONY: venv demo test lint bench bench-gpu

venv: $(VENV)/.installed

# The stamp makes a second `make venv` a no-op until the package metadata changes.
$(VENV)/.installed: setup.cfg pyproject.toml
	test -x $(VENV_PYTHON) || $(PYTHON) -m venv $(VENV)
	$(VENV_PYTHON) -m pip install --no-input -e '.[test]'
	touch $@

demo: venv
	$(VENV_PYTHON) -m apps.demo

# `make bench BENCH_ARGS="--apps blur,matmul --repeats 3"` passes options through.
BENCH_ARGS ?=

# The GPU benchmark (benchmarks/gpu.py): needs an NVIDIA GPU, PyTorch and PyCUDA (Triton if
# installed); `make bench-gpu BENCH_ARGS="--cases blur,softmax"`.
bench-gpu: $(VENV)/.installed
	$(VENV_PYTHON) -m benchmarks.gpu $(BENCH_ARGS)

bench: $(VENV)/.bench-installed
	$(VENV_PYTHON) -m benchmarks.run $(BENCH_ARGS)

# Halide for the benchmarks' Halide variants, installed once like the venv itself.
$(VENV)/.bench-installed: $(VENV)/.installed
	$(VENV_PYTHON) -m pip install --no-input -e '.[bench]'
	touch $@

# The tests run after the lint: ruff, and the layers contract of pyproject.toml.
test: lint
	$(VENV_PYTHON) -m pytest -n 2 -q

lint: venv
	$(VENV)/bin/ruff check halo tests apps benchmarks
	$(VENV)/bin/lint-imports

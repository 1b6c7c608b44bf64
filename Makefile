# Every target runs from the repository root and uses the project's own .venv.
PYTHON ?= python3
VENV := .venv
VENV_PYTHON := $(VENV)/bin/python
PYTEST := $(VENV_PYTHON) -m pytest -n 2 -q
# Lint only the top-level folders that exist (apps/ and benchmarks/ come later).
LINT_PATHS := $(wildcard halo tests apps benchmarks)

.PHONY: venv demo test lint bench

venv: $(VENV)/.installed

# The stamp makes a second `make venv` a no-op until the package metadata changes.
$(VENV)/.installed: setup.cfg pyproject.toml
	test -x $(VENV_PYTHON) || $(PYTHON) -m venv $(VENV)
	$(VENV_PYTHON) -m pip install --no-input -e '.[test]'
	touch $@

demo: venv
	$(VENV_PYTHON) -m apps.demo

# pytest exits 5 when it collects no tests; HALO_ALLOW_NO_TESTS=1 (set by .ci/run) turns
# that into success so that CI reports "no tests ran" instead of failing.
test: venv
	@echo $(PYTEST)
	@$(PYTEST) || { status=$$?; \
	  if [ $$status -eq 5 ] && [ -n "$$HALO_ALLOW_NO_TESTS" ]; then exit 0; fi; exit $$status; }

lint: venv
	$(VENV)/bin/ruff check $(LINT_PATHS)

bench: venv
	$(VENV_PYTHON) -m benchmarks.run

# esbench developer entry points. `make test` installs everything it needs first.
SHELL := /bin/bash
export ESBENCH_CACHE ?= $(HOME)/.cache/esbench
VENV := .venv
PYTHON := $(VENV)/bin/python

.PHONY: deps test unit bench clean sync-chart-crds

deps:
	bash scripts/system-packages.sh
	bash scripts/python-env.sh $(VENV)
	bash scripts/rally-env.sh
	bash scripts/k8s-binaries.sh
	bash scripts/eck-crds.sh
	bash scripts/helm.sh

test: deps
	$(PYTHON) -m pytest tests

unit:
	$(PYTHON) -m pytest tests/unit

bench: deps
	$(PYTHON) bench/operator_overhead.py

clean:
	rm -rf $(VENV) .pytest_cache

# crds/ is the single source of truth; the chart ships a copy (tests/chart fails on drift).
sync-chart-crds:
	bash scripts/sync-chart-crds.sh

# esbench developer entry points. `make test` installs everything it needs first.
SHELL := /bin/bash
export ESBENCH_CACHE ?= $(HOME)/.cache/esbench
VENV := .venv
PYTHON := $(VENV)/bin/python

.PHONY: deps lint test unit e2e e2e-kind demo demo-local node-up node-down bench studies figures api clean

# Everything the tests need, cached under $(ESBENCH_CACHE); fast when already there.
deps:
	bash scripts/system-packages.sh
	bash scripts/node/packages.sh
	bash scripts/python-env.sh $(VENV)
	bash scripts/rally-env.sh
	bash scripts/otava-env.sh
	bash scripts/k8s-binaries.sh
	bash scripts/etcd.sh >/dev/null
	bash scripts/coredns.sh >/dev/null
	bash scripts/eck-crds.sh
	bash scripts/eck-operator.sh
	bash scripts/local-path-provisioner.sh
	bash scripts/helm.sh

# All tests: unit, API server (admission, operator lifecycle, chart), real Elasticsearch +
# esrally (runner, CLI), and end to end on a real single node with real pods (root). Two
# phases (scripts/test.sh): the suite side by side, then what measures with nothing else busy.
test: deps lint
	bash scripts/test.sh $(PYTHON)

# ruff (ruff.toml), the import contracts between roles (operator/pyproject.toml), checkov on
# the chart and the Rally Job as rendered (.checkov.yaml), and shellcheck (.shellcheckrc).
lint:
	bash scripts/system-packages.sh
	bash scripts/python-env.sh $(VENV)
	$(VENV)/bin/ruff check .
	cd operator && ../$(VENV)/bin/lint-imports
	bash scripts/checkov.sh $(VENV)
	shellcheck scripts/*.sh scripts/*/*.sh

unit:
	$(PYTHON) -m pytest tests/unit

# Only the end-to-end suite: offline on a single node built from source (root).
e2e: deps
	ESBENCH_E2E_CLUSTER=node $(PYTHON) -m pytest tests/e2e -v

# The same suite on the kind cluster of the current KUBECONFIG, with the real ECK operator
# installed (machines with a registry; see .github/workflows/e2e.yaml).
e2e-kind:
	bash scripts/python-env.sh $(VENV)
	bash scripts/k8s-binaries.sh
	bash scripts/helm.sh
	ESBENCH_E2E_CLUSTER=kind $(PYTHON) -m pytest tests/e2e -v

# The main job: a local single-node Kubernetes, the chart, examples/quickstart.yaml, its results.
demo: deps
	bash scripts/node/demo.sh $(PYTHON)

# The same Experiment without Kubernetes (esbench run).
demo-local:
	bash scripts/system-packages.sh
	bash scripts/python-env.sh $(VENV)
	bash scripts/rally-env.sh
	ESBENCH_ESRALLY=$(CURDIR)/.venv-rally/bin/esrally $(VENV)/bin/esbench run examples/quickstart.yaml

# The seed studies at full size, on this machine (root, and nothing else running): their
# figures go to examples/studies/*/results/. STUDIES="001-range-queries-cpu" for one study's verdict,
# STUDIES="002-best-compression-io/sweep-map.yaml" for a sweep that runs only when named.
studies:
	bash scripts/system-packages.sh
	bash scripts/python-env.sh $(VENV)
	bash scripts/rally-env.sh
	$(PYTHON) scripts/studies.py $(STUDIES)

# Each study's results/figures.md, made from its results/ (the verdicts, regimes and per-run ranges its
# README quotes); tests/unit/test_study_figures.py fails when one is stale.
figures:
	$(PYTHON) scripts/study-figures.py

node-up: deps
	bash scripts/node/up.sh

node-down:
	bash scripts/node/down.sh

bench: deps
	$(PYTHON) bench/operator_overhead.py
	$(PYTHON) bench/sweep_reuse.py

# The API models (operator/esbench/api/models/) make the CRDs in crds/, the chart's copy and
# docs/api.md; tests/unit/test_generated_api.py fails when one of them is stale.
api:
	$(PYTHON) scripts/generate-api.py

clean:
	rm -rf $(VENV) .venv-rally .venv-checkov .pytest_cache

# The two commands of the README's quick start are `make demo` and `make test`.
SHELL := /bin/bash
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test unit e2e soak lint typecheck bench bench-e2e controlplane parity-versions crds clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip
	@$(BIN)/pip install --quiet -e '.[test]'
	@touch $(STAMP)

# Build etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kubectl, kwok and helm once
# (cached under ~/.cache/policy-scheduler, a folder per version; a rerun returns in seconds).
# POLICY_SCHEDULER_K8S_VERSION=v1.36.3 chooses another supported version here, for `make demo`
# and for the e2e suite (devcluster/versions.py lists them).
controlplane: $(STAMP)
	@PATH="$$(scripts/ensure-go.sh):$$PATH" $(BIN)/policy-scheduler dev-cluster build

# Main job: local control plane with kwok nodes, the operator, example workload, placements.
demo: controlplane
	@$(BIN)/policy-scheduler demo

lint: $(STAMP)
	$(BIN)/ruff check operator tests e2e
	$(BIN)/ruff format --check operator tests e2e
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

unit: $(STAMP)
	$(BIN)/pytest tests -q

e2e: controlplane
	$(BIN)/pytest e2e -q

# The long churn soak of the fault suite (docs/reliability.md): 10,000 pods; not part of `make test`
# (which runs a 300-pod version). Figures are printed and appended to soak-results.txt.
soak: controlplane
	SOAK_PODS=$${SOAK_PODS:-10000} FAULT_RESULTS=soak-results.txt $(BIN)/pytest e2e/test_faults_soak.py -q -s

# Every test: lint, types, unit and e2e on the real control plane.
test: controlplane lint typecheck
	$(BIN)/pytest tests e2e -q

bench: $(STAMP)
	$(BIN)/python -m policy_scheduler.bench

# End-to-end throughput on the dev cluster: no-op binder vs kube-scheduler vs policy-scheduler
# (docs/benchmarks.md). Long; not part of `make test`. Options: BENCH_E2E_ARGS="--nodes 1000 ...".
bench-e2e: controlplane
	$(BIN)/python -m policy_scheduler.bench_e2e $(BENCH_E2E_ARGS)

# The parity harness (docs/parity.md) against each supported version's kube-scheduler, with that
# version's defaults: builds each version's control plane (one build at a time), then runs
# PARITY_ARGS on a cluster of that version. Long; not part of `make test`.
PARITY_ARGS ?= --count 30 --seed 4 --no-shrink --show 3
PARITY_VERSIONS ?= $(shell $(BIN)/python -c 'from policy_scheduler.devcluster.versions import supported_kubernetes_versions as s; print(*s())')
parity-versions: $(STAMP)
	@failed=""; for version in $(PARITY_VERSIONS); do \
	  echo "== parity against kube-scheduler $$version"; \
	  PATH="$$(scripts/ensure-go.sh):$$PATH" $(BIN)/policy-scheduler dev-cluster build --kubernetes-version $$version || exit 1; \
	  $(BIN)/python -m policy_scheduler.parity run --kubernetes-version $$version $(PARITY_ARGS) || failed="$$failed $$version"; \
	done; \
	if [ -n "$$failed" ]; then echo "parity: disagreements or harness errors on:$$failed"; exit 1; fi

# The generated CRDs, and the Helm chart's copies of them and of the PodGroup CRD (tests/deploy/test_helm_chart.py).
crds: $(STAMP)
	$(BIN)/policy-scheduler crds --write crds
	$(BIN)/python -m policy_scheduler.policy.crdgen --write charts/policy-scheduler/files/crds
	cp manifests/podgroup-crd/scheduling.x-k8s.io_podgroups.yaml charts/policy-scheduler/crds/

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache

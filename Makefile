# kubevirtci.dra_cpu: the two set-up commands are `make demo` (main job) and `make test` (all tests).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
CLUSTER := $(PY) tests/cluster/cluster.py
# outside the checkout: inside it, ansible-test would ask git for the files and find none
SANITY_ROOT ?= $(or $(TMPDIR),/tmp)/kubevirtci-dra-cpu-sanity
COLL_BUILD := $(SANITY_ROOT)/ansible_collections/kubevirtci/dra_cpu
# the test harness (cluster, simulator, pytest integration suites, benchmark, scripts) is not
# part of the collection artifact (galaxy.yml build_ignore) and is checked by pytest, not sanity
SANITY_EXCLUDES := --exclude tests/cluster/ --exclude tests/fixtures/ --exclude tests/integration/ \
	--exclude bench/ --exclude hack/

.PHONY: build-first build-binaries build-1.35 build-1.37 build-helm-old build-real-node build-cri-o build-upstream newest deps build cluster-up cluster-down cluster-status demo test unit sanity lint \
        integration integration-real-nodes integration-others integration-third molecule docs-check bench lock clean check

deps:                       ## Debian packages, .venv, collection symlink (idempotent)
	@hack/setup.sh

build: deps build-binaries  ## real etcd, helm, kube-* (1.36, and 1.35 + 1.37 for their tests), the real nodes' binaries (cached by version outside the checkout)

build-first: deps           ## what every test cluster needs: etcd, helm, Kubernetes 1.36 (cached)
	@tests/cluster/build.sh all >/dev/null

# The builds in the order the suite first needs them (no deps: `make test` runs this behind its
# stages, see hack/build_behind.sh; the integration tests that need a later one run last and wait
# for it, tests/integration/late_builds.py). The real-node binaries first: every molecule scenario,
# in the other lane of `make test`, runs on real nodes; then 1.37.2 and its kubelet before 1.35.4:
# molecule's 1.37 scenario needs them about 15 min before the 1.35 tests come at the end of
# integration; those run on a real 1.35.4 kubelet, built last. The other Kubernetes versions take about 7 min each on a
# new machine, then are cached: built by default, so a new machine runs their cases instead of
# skipping them.
build-binaries:
	@tests/cluster/build.sh all >/dev/null
	@tests/cluster/build.sh real-node >/dev/null
	@tests/cluster/build.sh cri-o >/dev/null
	@tests/cluster/build.sh upstream >/dev/null
	@tests/cluster/build.sh helm-old >/dev/null
	@CLUSTER_K8S_VERSION=v1.37.2 tests/cluster/build.sh kubernetes >/dev/null
	@CLUSTER_K8S_VERSION=v1.37.2 tests/cluster/build.sh real-node >/dev/null
	@CLUSTER_K8S_VERSION=v1.35.4 tests/cluster/build.sh kubernetes >/dev/null
	@CLUSTER_K8S_VERSION=v1.35.4 tests/cluster/build.sh real-node >/dev/null

build-cri-o: deps          ## CRI-O v1.36.3 + pinns for real nodes with `runtime: cri-o` (part of build; cached; conmon is Debian's)
	tests/cluster/build.sh cri-o

build-upstream: deps        ## upstream's dra-driver-cpu v0.2.0 from the Go module proxy: driver and test image programs (also in build-real-node), 0.2.0 chart, compiled e2e suite (part of build; cached; ~7 min first time)
	tests/cluster/build.sh upstream

build-helm-old: deps        ## the older helm(s) of tests/cluster/tools/helm-v*/ (the "too old helm" tests; cached)
	tests/cluster/build.sh helm-old

build-real-node: deps       ## kubelet, containerd, runc, CNI plugins, crane, pause, the project driver and upstream v0.2.0 binaries for CLUSTER_REAL_NODES (part of build; cached; ~8 min first time)
	tests/cluster/build.sh real-node

cluster-up: build-first     ## start the hermetic test cluster, `make demo`'s: one real node real01, no simulated one (CLUSTER_NODES=N adds simulated ones; idempotent; the real node's binaries build on first use)
	@$(CLUSTER) up

cluster-down: deps          ## stop it and remove everything it started
	@$(CLUSTER) down

cluster-status: deps
	@$(CLUSTER) status

demo: deps                  ## main job: bring up the local test cluster and install into it (nothing else is read)
	@hack/demo.sh

unit: deps                  ## pytest unit tests (no cluster)
	$(PY) -m pytest tests/unit -q -rs

sanity: deps                ## ansible-test sanity on a copy laid out as ansible_collections/kubevirtci/dra_cpu
	@rm -rf $(SANITY_ROOT) && mkdir -p $(COLL_BUILD) $(SANITY_ROOT)/ansible_collections/kubernetes
	@git ls-files --cached --others --exclude-standard | tar -cf - -T - | tar -xf - -C $(COLL_BUILD)
	@cp -r $$($(PY) -c 'import ansible_collections.kubernetes.core as m, os; print(list(m.__path__)[0])') \
	  $(SANITY_ROOT)/ansible_collections/kubernetes/core
	cd $(COLL_BUILD) && $(CURDIR)/$(VENV)/bin/ansible-test sanity --venv --python 3.11 --color no \
	  $(SANITY_EXCLUDES)

lint: deps                  ## ansible-lint (production profile), the variable table (docs/usage.md), doc links, antsibull-docs lint, mypy (mypy.ini), vulture (dead code)
	$(VENV)/bin/ansible-lint
	$(VENV)/bin/mypy
	@# dead code in plugins/; hack/vulture_whitelist.py names only what Ansible reads by name
	$(PY) hack/dead_code.py
	$(PY) hack/check_variables.py
	$(PY) hack/check_doc_links.py
	VENV=$(VENV) hack/lint_collection_docs.sh

INTEGRATION_PYTEST = CLUSTER_SLICE_DELETE_DELAY=3 $(PY) -m pytest tests/integration -q -rs --durations=15 -p no:cacheprovider

integration: build-first    ## pytest against the hermetic test clusters (brings them up and down; the tests needing a later build run last, building or waiting for it)
	CLUSTER_STATE_DIR=$(CURDIR)/.cluster-integration $(INTEGRATION_PYTEST)

# `make test` splits `integration` over its two lanes (clusters with real nodes run side by side):
# the real-node tests in the first lane before molecule (on a new machine their binaries are built
# right after the first cluster's, while molecule's 1.37 scenario waits for 1.37.2), the others in
# the second after lint, sanity and newest (the lanes balanced on the fresh-clone runs' stage times)
# With every binary cached `make test` runs a third lane (MAKE_TEST_LANES=3): the files of
# tests/integration/conftest.py's THIRD_LANE_FILES leave the first two for integration-third
THIRD_LANE := $(if $(filter 3,$(MAKE_TEST_LANES)),--third-lane=skip,)

integration-real-nodes: build-first ## the integration tests on real nodes only (late_build("real-node"))
	CLUSTER_STATE_DIR=$(CURDIR)/.cluster-integration-real $(INTEGRATION_PYTEST) --real-nodes=only $(THIRD_LANE)

integration-others: build-first ## the integration tests other than the real-node ones
	CLUSTER_STATE_DIR=$(CURDIR)/.cluster-integration $(INTEGRATION_PYTEST) --real-nodes=skip $(THIRD_LANE)

integration-third: build-first ## make test's third lane (binaries cached): the files of THIRD_LANE_FILES (tests/integration/conftest.py)
	CLUSTER_STATE_DIR=$(CURDIR)/.cluster-integration-third $(INTEGRATION_PYTEST) --third-lane=only

molecule: build-first       ## molecule test --all on Kubernetes 1.36, and the default scenario on 1.37 too (real nodes: their kubelet and kube-proxy of the same version, built on first use)
	$(VENV)/bin/molecule test --all
	@# 1.37.2: cached after the first time; waits for the build behind when it is building it
	@CLUSTER_K8S_VERSION=v1.37.2 tests/cluster/build.sh kubernetes >/dev/null
	CLUSTER_K8S_VERSION=v1.37.2 $(VENV)/bin/molecule test -s default

build-1.37: deps            ## build Kubernetes v1.37.2 for the test cluster (cached)
	CLUSTER_K8S_VERSION=v1.37.2 tests/cluster/build.sh kubernetes

build-1.35: deps            ## build Kubernetes v1.35.4 (extended target: the version finding; cached)
	CLUSTER_K8S_VERSION=v1.35.4 tests/cluster/build.sh kubernetes

NEWEST_PYTHON ?= $(firstword $(wildcard /root/.pyenv/versions/3.13.*/bin/python3.13) $(shell command -v python3.13 python3.12 2>/dev/null))

# the unit tests but the Go driver's and the harness's (`unit` runs them; they do not use Ansible: 70 s saved)
newest: build-first         ## the newest Ansible (ansible 14 / ansible-core 2.21, Python >= 3.12): unit + a live install
	@# no Python >= 3.12: say so in a SKIPPED line (hack/stages.sh repeats those under its summary)
	@if [ -z "$(NEWEST_PYTHON)" ]; then \
	  echo "newest Ansible (unit + live install): SKIPPED, no Python >= 3.12 found (set NEWEST_PYTHON=/path/to/python3.12+)"; \
	  exit 0; fi; \
	hack/venv.sh .venv-newest $(NEWEST_PYTHON) requirements-newest.lock || exit 1; \
	.venv-newest/bin/ansible --version | awk 'NR==1'; \
	.venv-newest/bin/python -m pytest tests/unit -q -rs -p no:cacheprovider \
	  --ignore=tests/unit/driver --ignore=tests/unit/harness && \
	CLUSTER_STATE_DIR=$(CURDIR)/.cluster-newest .venv-newest/bin/python -m pytest -q -rs -p no:cacheprovider \
	  "tests/integration/test_role_install.py::test_install_defaults_reports_the_sizing_rule_and_is_idempotent"

# Lanes: with every binary cached (the build behind ends at once) three, since one lane of the
# integration suite keeps about a third of the 2 CPUs busy (tests/integration/conftest.py
# THIRD_LANE_FILES); while binaries build, two, the build behind being the critical path
test: deps                  ## everything CI runs, in lanes side by side (unit, the real-node integration tests | lint, sanity, newest, the other integration tests | molecule, the third lane's integration tests; two lanes, molecule and those tests in the first two, while binaries build behind the stages), with each stage's wall time at the end
	@hack/build_behind.sh start
	@trap 'hack/build_behind.sh stop' EXIT; \
	if hack/build_behind.sh cached; then \
	  MAKE_TEST_LANES=3 hack/stages.sh unit integration-real-nodes --lane lint sanity newest integration-others \
	    --lane molecule integration-third; \
	else \
	  hack/stages.sh unit integration-real-nodes molecule --lane lint sanity newest integration-others; \
	fi

check: deps                 ## quick feedback: unit + sanity + lint (no cluster)
	@hack/stages.sh unit sanity lint

bench: build                ## benchmark vs the shell installer's waiting rule -> bench/results.md (its packages are in requirements-dev.lock)
	$(PY) bench/run.py

lock: deps                  ## regenerate every lock (the drop-in's, requirements-dev.lock, requirements-newest.lock) with uv: hack/installer_lock.py
	$(PY) hack/installer_lock.py

clean: cluster-down
	rm -rf build tests/output

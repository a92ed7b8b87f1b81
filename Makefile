# kubevirtci.dra_cpu: the two set-up commands are `make demo` (main job) and `make test` (all tests).
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
CLUSTER := $(PY) tests/cluster/cluster.py
COLL_BUILD := build/ansible_collections/kubevirtci/dra_cpu
# the test harness (cluster, simulator, pytest integration suites, benchmark, scripts) is not
# part of the collection artifact (galaxy.yml build_ignore) and is checked by pytest, not sanity
SANITY_EXCLUDES := --exclude tests/cluster/ --exclude tests/fixtures/ --exclude tests/integration/ \
	--exclude bench/ --exclude hack/

.PHONY: deps build cluster-up cluster-down cluster-status demo test unit sanity lint \
        integration molecule docs-check bench clean

deps:                       ## Debian packages, .venv, collection symlink (idempotent)
	@hack/setup.sh

build: deps                 ## real etcd, helm, kube-* binaries (cached by version outside the checkout)
	@tests/cluster/build.sh all >/dev/null

cluster-up: build           ## start the hermetic test cluster (idempotent)
	@$(CLUSTER) up

cluster-down: deps          ## stop it and remove everything it started
	@$(CLUSTER) down

cluster-status: deps
	@$(CLUSTER) status

demo: deps                  ## main job: install into $$KUBECONFIG, or into a local test cluster if none
	@hack/demo.sh

unit: deps                  ## pytest unit tests (no cluster)
	$(PY) -m pytest tests/unit -q

sanity: deps                ## ansible-test sanity on a copy laid out as ansible_collections/kubevirtci/dra_cpu
	@rm -rf build && mkdir -p $(COLL_BUILD) build/ansible_collections/kubernetes
	@git ls-files --cached --others --exclude-standard | tar -cf - -T - | tar -xf - -C $(COLL_BUILD)
	@cp -r $$($(PY) -c 'import ansible_collections.kubernetes.core as m, os; print(list(m.__path__)[0])') \
	  build/ansible_collections/kubernetes/core
	cd $(COLL_BUILD) && $(CURDIR)/$(VENV)/bin/ansible-test sanity --venv --python 3.11 --color no \
	  $(SANITY_EXCLUDES)

lint: deps                  ## ansible-lint (production profile) and docs checks
	$(VENV)/bin/ansible-lint
	$(PY) hack/check_variables.py

integration: build          ## pytest against the hermetic test cluster (brings it up and down)
	$(PY) -m pytest tests/integration -q

molecule: build             ## molecule test --all against the hermetic test cluster
	$(VENV)/bin/molecule test --all

test: unit sanity lint integration molecule  ## everything CI runs

bench: build                ## benchmark vs the shell installer's waiting rule -> bench/results.md
	$(PY) bench/run.py

clean: cluster-down
	rm -rf build tests/output

#!/usr/bin/env bash
# `antsibull-docs lint-collection-docs` on the checkout (part of `make lint`): the plugin and role
# docs (schema, markup, references to this collection and its dependencies), changelog fragments
# and collection links. antsibull-docs finds collections with `ansible-galaxy collection list`, so
# this lays out a temporary collections path outside the checkout: the checkout as
# kubevirtci.dra_cpu (a symlink) and a copy of the venv's kubernetes.core. A copy, not a link:
# antsibull-docs copies a collection that lives in a git checkout with git (tracked files only),
# and the venv is ignored by git, so a linked kubernetes.core would arrive empty.
# Knob: VENV (.venv).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
venv=$top/${VENV:-.venv}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dra-cpu-docs-lint.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/ansible_collections/kubevirtci" "$tmp/ansible_collections/kubernetes"
ln -s "$top" "$tmp/ansible_collections/kubevirtci/dra_cpu"
core=$("$venv/bin/python" -c 'import ansible_collections.kubernetes.core as m; print(list(m.__path__)[0])')
cp -r "$core" "$tmp/ansible_collections/kubernetes/core"
# --validate-collection-refs dependent: references to this collection, kubernetes.core and
# ansible.builtin must resolve (kubernetes.core's own auth doc fragment names community.okd, so
# unknown collections are not refused)
# (run from the temporary dir without the repository's ansible.cfg, whose collections_path would
# add the checkout's .collections link)
cd "$tmp"
env -u ANSIBLE_CONFIG PATH="$venv/bin:$PATH" ANSIBLE_COLLECTIONS_PATH="$tmp" \
  "$venv/bin/antsibull-docs" lint-collection-docs --plugin-docs --check-extra-docs-refs \
  --validate-collection-refs dependent "$tmp/ansible_collections/kubevirtci/dra_cpu"
echo "antsibull-docs lint-collection-docs: no findings"

#!/usr/bin/env bash
# `antsibull-docs lint-collection-docs` on the checkout (part of `make lint`): the plugin and role
# docs (schema, markup, references to this collection and its dependencies), changelog fragments
# and collection links. antsibull-docs finds collections with `ansible-galaxy collection list`, so
# this lays out a temporary collections path outside the checkout: the checkout as
# kubevirtci.dra_cpu (a symlink) and a copy of the venv's kubernetes.core. A copy, not a link:
# antsibull-docs copies a collection that lives in a git checkout with git (tracked files only),
# and the venv is ignored by git, so a linked kubernetes.core would arrive empty.
# antsibull-docs takes each dependency from the first `ansible-galaxy collection list` entry, and
# that list is sorted by path: with the checkout at a path that sorts before the temporary dir
# (CI's did), the venv's own kubernetes.core (inside the checkout, git-ignored) won and arrived
# empty ("unknown doc_fragment kubernetes.core.k8s_auth_options"). So the venv's collections are
# hidden (ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false), git may not look above the temporary dir for a
# repository (GIT_CEILING_DIRECTORIES; GIT_DIR/GIT_WORK_TREE from a caller would override that
# search, so they are unset), and the listing is checked before the lint runs.
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
lint_env=(env -u ANSIBLE_CONFIG -u GIT_DIR -u GIT_WORK_TREE PATH="$venv/bin:$PATH"
  ANSIBLE_COLLECTIONS_PATH="$tmp" ANSIBLE_COLLECTIONS_SCAN_SYS_PATH=false
  GIT_CEILING_DIRECTORIES="$tmp")
seen=$("${lint_env[@]}" ansible-galaxy collection list kubernetes.core --format json 2>/dev/null |
  "$venv/bin/python" -c 'import json, sys; print(" ".join(json.loads(sys.stdin.read().splitlines()[-1])))')
if [ "$seen" != "$tmp/ansible_collections" ]; then
  echo "lint_collection_docs: kubernetes.core must come only from $tmp/ansible_collections, found in: $seen" >&2
  exit 1
fi
"${lint_env[@]}" "$venv/bin/antsibull-docs" lint-collection-docs --plugin-docs --check-extra-docs-refs \
  --validate-collection-refs dependent "$tmp/ansible_collections/kubevirtci/dra_cpu"
echo "antsibull-docs lint-collection-docs: no findings"

#!/usr/bin/env bash
# Everything a fresh machine needs, idempotent and quiet on a second run:
#  - Debian packages the test cluster uses (docker-registry, iproute2, openssl, time, iptables, conmon,
#    busybox-static) and shellcheck
#  - the Python virtualenv with the pinned Ansible bundle and test tools (.venv, a link to the one
#    built for requirements-dev.lock in the cache: hack/venv.sh)
#  - the collection symlink that makes the checkout importable as kubevirtci.dra_cpu
# Knobs: PYTHON (interpreter for the venv, default python3.11 from pyenv if present),
#        VENV (.venv), SETUP_SKIP_APT=true (no apt-get).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
log() { printf '[setup] %s\n' "$*"; }

if [ "${SETUP_SKIP_APT:-false}" != true ]; then
  need=()
  [ -x /usr/bin/docker-registry ] || need+=(docker-registry)
  command -v ip >/dev/null || need+=(iproute2)
  command -v openssl >/dev/null || need+=(openssl)
  [ -x /usr/bin/time ] || need+=(time)
  # ansible-test sanity's shellcheck test (scripts/install_dra_driver_cpu.sh) skips without it
  command -v shellcheck >/dev/null || need+=(shellcheck)
  # the real nodes' kube-proxy (tests/cluster/cluster_kube_proxy.py) programs iptables (nf_tables backend)
  command -v iptables >/dev/null || need+=(iptables)
  # the CRI-O real nodes' container monitor (tests/cluster/cluster_real_node.py, runtime cri-o):
  # bookworm's conmon 2.1.6+ds1-1, the version those nodes were measured with; their OCI runtime is
  # Debian's runc, unpacked by tests/cluster/build.sh runc (pinned there), as for containerd nodes
  [ -x /usr/bin/conmon ] || need+=(conmon=2.1.6+ds1-1)
  # the real nodes' busybox image (verify's default test image, tests/cluster/cluster_images.py): the
  # static binary, which runs in an image of its own
  dpkg -s busybox-static >/dev/null 2>&1 || need+=(busybox-static)
  if [ ${#need[@]} -gt 0 ]; then
    log "installing Debian packages: ${need[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    # the packaged registry starts a system service; the test cluster runs its own instance
    systemctl disable --now docker-registry >/dev/null 2>&1 || true
  fi
fi

venv=${VENV:-.venv}
py=${PYTHON:-}
if [ -z "$py" ]; then
  for cand in /root/.pyenv/versions/3.11.*/bin/python3.11 "$(command -v python3.11 || true)" "$(command -v python3 || true)"; do
    [ -n "$cand" ] && [ -x "$cand" ] && { py=$cand; break; }
  done
fi
# the venv is built once per interpreter + lock in the cache and linked here (hack/venv.sh): exactly
# the packages of requirements-dev.lock (requirements-dev.txt, requirements.txt, bench/requirements.txt)
hack/venv.sh "$venv" "$py" requirements-dev.lock

mkdir -p .collections/ansible_collections/kubevirtci
ln -sfn ../../.. .collections/ansible_collections/kubevirtci/dra_cpu
log "ready: $("$venv/bin/ansible" --version | awk "NR==1"), $("$venv/bin/python" --version)"

# ansible-test sanity bootstraps pip from a host this machine cannot reach: give it the offline
# equivalent (see hack/get_pip_offline.py) for the pip version this ansible-test pins.
for v in $("$venv/bin/python" -c "
import os, re, ansible_test
src = open(os.path.join(os.path.dirname(ansible_test.__file__), '_internal', 'python_requirements.py')).read()
print(' '.join(sorted(set(re.findall(r\"pip='([0-9.]+)'\", src)))))"); do
  target="$HOME/.ansible/test/cache/get_pip_${v//./_}.py"
  mkdir -p "$(dirname "$target")"
  cmp -s hack/get_pip_offline.py "$target" 2>/dev/null || cp hack/get_pip_offline.py "$target"
done

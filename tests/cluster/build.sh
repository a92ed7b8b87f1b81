#!/usr/bin/env bash
# Builds (once) the real programs of the test cluster from pinned Go modules into a cache keyed by
# version, outside the checkout. A second run, or a fresh clone on the same machine, builds nothing.
#
#   build.sh [all|etcd|helm|helm-old|kubernetes|real-node]   prints the directory holding the binaries
#   (helm-old, not part of all: every tools/helm-v*/ pin, helms older than the cluster's that the
#   tests use as the "too old helm on PATH"; one directory per line; `make build` builds it)
#   (real-node, not part of all: what a real node (CLUSTER_REAL_NODES) runs: kubelet, containerd +
#   shim + ctr, runc (Debian's, unpacked), CNI plugins, crane, the pause binary, kube-proxy, the
#   project's driver (tests/cluster/driver) and upstream's v0.2.0 binaries (below: the image of every
#   0.2.0 install on a real node), one directory per line; `make build-real-node` builds it)
#   (runc: only real-node's runc, unpacked from Debian's package)
#   (cri-o, not part of all or real-node: crio v1.36.3 and its pinns, for real nodes whose spec says
#   `runtime: cri-o`; one directory; `make build-cri-o` builds it, conmon comes from Debian)
#   (driver: only the project's driver, whose `dracpu publish` the simulator runs for simulated nodes)
#   (upstream: upstream's own dra-driver-cpu v0.2.0 from the Go module proxy
#   (tools/dra-driver-cpu-v0.2.0): its driver as its image lays it out (/dracpu and
#   /dracpu-gatherinfo) and its test image's programs (dracpuinfo, dracputester), both in real-node
#   too, its packaged 0.2.0 chart (chart/) and its compiled e2e suite (e2e/e2e.test); one directory;
#   `make build-upstream`)
#   (upstream-chart: only upstream's packaged 0.2.0 chart, which every cluster's registry serves as
#   0.2.0; the control plane asks for it; one directory, the chart's)
#
# Knobs: CLUSTER_K8S_VERSION (v1.36.3), CLUSTER_ETCD_VERSION (from tools/etcd/go.mod),
#        CLUSTER_RUNC_DEB_VERSION (1.1.5+ds1-1+deb12u1, Debian bookworm's runc; real-node),
#        CLUSTER_CACHE_DIR (${XDG_CACHE_HOME:-$HOME/.cache}/kubevirtci-dra-cpu)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${CLUSTER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/kubevirtci-dra-cpu}
k8s_version=${CLUSTER_K8S_VERSION:-v1.36.3}
what=${1:-all}

log() { printf '[build] %s\n' "$*" >&2; }

mod_version() { # module path, go.mod -> pinned version
  awk -v m="$1" '$1==m || ($1=="require" && $2==m) {print ($1=="require") ? $3 : $2; exit}' "$2"
}

go_build() { # name, module dir, out dir, extra -ldflags, packages...
  # .complete holds the build recipe (ldflags); a different recipe rebuilds (mostly a relink: the
  # Go build cache keeps the compiled packages)
  # GO_BUILD_TAGS (environment): -tags for this build, part of the recipe; GO_CGO=1: a cgo build
  # (CRI-O), also part of the recipe
  local name=$1 dir=$2 out=$3 xflags=$4; shift 4
  local tags=${GO_BUILD_TAGS:-} cgo=${GO_CGO:-0}
  local ldflags="-s -w${xflags:+ $xflags}"
  local recipe="$ldflags${tags:+ tags=$tags}"
  [ "$cgo" = 0 ] || recipe+=" cgo=$cgo"
  if [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$recipe" ]; then return 0; fi
  mkdir -p "$out"
  # one build per output dir at a time: a second caller waits, then finds it complete
  exec 9>"$out.lock"
  if ! flock -n 9; then
    log "$name: another build is running; waiting for it"
    flock 9
  fi
  if [ -f "$out/.complete" ] && [ "$(cat "$out/.complete")" = "$recipe" ]; then exec 9>&-; return 0; fi
  log "building $name into $out (first run only; kubernetes takes many minutes on 2 cores)"
  [ -f "$out/.build-stats" ] && mv -f "$out/.build-stats" "$out/.build-stats.prev"
  rm -rf "$out/.new" && mkdir -p "$out/.new"
  local start=$SECONDS
  ( cd "$dir" && GOFLAGS=-mod=mod CGO_ENABLED=$cgo /usr/bin/time -f "%e s wall, %M KiB peak RSS" \
      -o "$out/.build-stats" go build -trimpath ${tags:+-tags "$tags"} -ldflags="$ldflags" -o "$out/.new/" "$@" ) &
  local pid=$! said=$SECONDS
  # look every second (a 30-second sleep made every build last at least 30 s: about 170 s of a new
  # machine's `make demo`), say so every 30
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    if kill -0 "$pid" 2>/dev/null && [ $((SECONDS - said)) -ge 30 ]; then
      said=$SECONDS; log "$name: still building ($((SECONDS - start)) s)"
    fi
  done
  wait "$pid"
  # rename into place: binaries that are running right now stay valid (no "text file busy")
  local f; for f in "$out/.new/"*; do mv -f "$f" "$out/"; done
  rmdir "$out/.new"
  log "$name built: $(cat "$out/.build-stats" 2>/dev/null)"
  printf '%s' "$recipe" > "$out/.complete"
  exec 9>&-
}

k8s_ldflags() { # version -> the -X flags Kubernetes' own build sets (hack/lib/version.sh); no build
  # date or commit (unknown from a module zip), so the recipe, and with it the cache, stays stable
  local v=$1 major minor pkg out=""
  major=${v#v}; major=${major%%.*}
  minor=${v#v*.}; minor=${minor%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    out+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  echo "${out# }"
}

build_etcd() {
  local v; v=$(mod_version go.etcd.io/etcd/server/v3 "$here/tools/etcd/go.mod")
  go_build "etcd $v" "$here/tools/etcd" "$cache/etcd/$v" "" .
  echo "$cache/etcd/$v"
}

build_helm() {
  local v; v=$(mod_version helm.sh/helm/v3 "$here/tools/helm/go.mod")
  go_build "helm $v" "$here/tools/helm" "$cache/helm/$v" \
    "-X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
    helm.sh/helm/v3/cmd/helm
  echo "$cache/helm/$v"
}

build_helm_old() { # each tools/helm-v*/ (a go.mod pinning an older helm v3) -> $cache/helm/<version>
  local dir v
  for dir in "$here"/tools/helm-v*/; do
    [ -f "$dir/go.mod" ] || continue
    v=$(mod_version helm.sh/helm/v3 "$dir/go.mod")
    go_build "helm $v" "$dir" "$cache/helm/$v" \
      "-X helm.sh/helm/v3/internal/version.version=$v -X helm.sh/helm/v3/internal/version.gitTreeState=clean" \
      helm.sh/helm/v3/cmd/helm
    echo "$cache/helm/$v"
  done
}

build_kubernetes() {
  local dir="$here/tools/kubernetes/$k8s_version"
  if [ ! -f "$dir/go.mod" ]; then
    echo "no build files for Kubernetes $k8s_version under $dir (have: $(ls "$here/tools/kubernetes"))" >&2
    exit 2
  fi
  # one go build for all three commands, so they share compiled packages
  go_build "kubernetes $k8s_version" "$dir" "$cache/kubernetes/$k8s_version" "$(k8s_ldflags "$k8s_version")" \
    k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager \
    k8s.io/kubernetes/cmd/kube-scheduler
  echo "$cache/kubernetes/$k8s_version"
}

build_kubelet() { # same module and version stamps as the control plane; its own output dir, so
  # the control plane's cached build stays valid
  local dir="$here/tools/kubernetes/$k8s_version"
  [ -f "$dir/go.mod" ] || { echo "no build files for Kubernetes $k8s_version under $dir" >&2; exit 2; }
  go_build "kubelet $k8s_version" "$dir" "$cache/kubelet/$k8s_version" "$(k8s_ldflags "$k8s_version")" \
    k8s.io/kubernetes/cmd/kubelet
  echo "$cache/kubelet/$k8s_version"
}

build_kube_proxy() { # kube-proxy for the real nodes' in-cluster clients (the `kubernetes` Service)
  local dir="$here/tools/kubernetes/$k8s_version"
  [ -f "$dir/go.mod" ] || { echo "no build files for Kubernetes $k8s_version under $dir" >&2; exit 2; }
  go_build "kube-proxy $k8s_version" "$dir" "$cache/kube-proxy/$k8s_version" "$(k8s_ldflags "$k8s_version")" \
    k8s.io/kubernetes/cmd/kube-proxy
  echo "$cache/kube-proxy/$k8s_version"
}

build_driver() { # the project's simulated dra-driver-cpu, a real kubelet plugin (tests/cluster/driver)
  "$here/driver/build.sh" "$cache/driver/$(cd "$here/driver" && cat go.mod go.sum $(find . -name '*.go' | sort) | sha256sum | cut -c1-12)"
}

build_containerd() {
  local dir="$here/tools/containerd-v2.4.2" v
  v=$(mod_version github.com/containerd/containerd/v2 "$dir/go.mod")
  GO_BUILD_TAGS="no_btrfs no_devmapper no_zfs" go_build "containerd $v" "$dir" "$cache/containerd/$v" \
    "-X github.com/containerd/containerd/v2/version.Version=$v" \
    github.com/containerd/containerd/v2/cmd/containerd github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2 \
    github.com/containerd/containerd/v2/cmd/ctr
  echo "$cache/containerd/$v"
}

build_cni() {
  local dir="$here/tools/cni-plugins-v1.9.1" v
  v=$(mod_version github.com/containernetworking/plugins "$dir/go.mod")
  go_build "cni-plugins $v" "$dir" "$cache/cni-plugins/$v" "" \
    github.com/containernetworking/plugins/plugins/main/bridge \
    github.com/containernetworking/plugins/plugins/ipam/host-local \
    github.com/containernetworking/plugins/plugins/main/loopback
  echo "$cache/cni-plugins/$v"
}

build_crane() {
  local dir="$here/tools/crane-v0.22.1" v
  v=$(mod_version github.com/google/go-containerregistry "$dir/go.mod")
  go_build "crane $v" "$dir" "$cache/crane/$v" "" github.com/google/go-containerregistry/cmd/crane
  echo "$cache/crane/$v"
}

build_pause() { # the sandbox image's only file; keyed by the source's hash
  local dir="$here/tools/pause" h
  h=$(cat "$dir/go.mod" "$dir/main.go" | sha256sum | cut -c1-12)
  go_build "pause $h" "$dir" "$cache/pause/$h" "" .
  echo "$cache/pause/$h"
}

build_runc() { # Debian's runc, pinned (dynamically linked against libseccomp2, which these hosts
  # have): apt-get download + dpkg -x into the cache, nothing installed
  local v=${CLUSTER_RUNC_DEB_VERSION:-1.1.5+ds1-1+deb12u1} out
  out="$cache/runc/$v"
  if [ -x "$out/runc" ]; then echo "$out"; return 0; fi
  # one unpack at a time, as go_build's builds: on a new machine the build behind, `newest` and the
  # integration suite all ask for the real-node binaries at once (their .tmp dirs once collided)
  mkdir -p "$cache/runc"
  exec 8>"$out.lock"
  if ! flock -n 8; then
    log "runc $v: another unpack is running; waiting for it"
    flock 8
  fi
  if [ ! -x "$out/runc" ]; then
    log "unpacking Debian runc $v into $out"
    rm -rf "$out.tmp" && mkdir -p "$out.tmp" && chmod 755 "$out.tmp"
    # a machine whose package lists were never fetched (every package of hack/setup.sh preinstalled)
    # gets them once here
    if ! ( cd "$out.tmp" && { apt-get download -q "runc=$v" >&2 2>&1 ||
             { apt-get update -qq >&2 && apt-get download -q "runc=$v" >&2 2>&1; }; } &&
           dpkg -x runc_*.deb root ); then
      echo "apt-get download runc=$v failed (apt-get update? apt-cache policy runc;" \
           "CLUSTER_RUNC_DEB_VERSION picks another)" >&2
      rm -rf "$out.tmp"; exit 2
    fi
    mkdir -p "$out" && mv -f "$out.tmp/root/usr/sbin/runc" "$out/runc" && rm -rf "$out.tmp"
  fi
  exec 8>&-
  echo "$out"
}

build_crio() { # CRI-O for the real nodes that run it instead of containerd (node spec `runtime: cri-o`):
  # crio from tools/cri-o-v1.36.3 (cgo; the tags need no libseccomp, gpgme or btrfs headers, so
  # seccomp is off), then pinns (C, the same module's pinns/, static, the system compiler) beside it.
  # conmon is Debian's (hack/setup.sh), the OCI runtime Debian's runc (build_runc).
  local dir="$here/tools/cri-o-v1.36.3" v out src
  v=$(mod_version github.com/cri-o/cri-o "$dir/go.mod")
  out="$cache/cri-o/$v"
  GO_CGO=1 GO_BUILD_TAGS="containers_image_ostree_stub exclude_graphdriver_btrfs containers_image_openpgp" \
    go_build "cri-o $v" "$dir" "$out" "" github.com/cri-o/cri-o/cmd/crio
  if [ ! -x "$out/pinns" ]; then
    exec 7>"$out.pinns.lock"
    flock 7
    if [ ! -x "$out/pinns" ]; then
      src=$(cd "$dir" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' github.com/cri-o/cri-o)
      log "building pinns $v (C, $src/pinns) into $out"
      rm -rf "$out/.pinns" && mkdir -p "$out/.pinns" && cp -r "$src/pinns/." "$out/.pinns/" && chmod -R u+w "$out/.pinns"
      ( cd "$out/.pinns" && /usr/bin/time -f "%e s wall, %M KiB peak RSS" -o "$out/.build-stats-pinns" \
          make -s >&2 ) || { echo "pinns build failed (gcc, libc6-dev for -static?)" >&2; exit 2; }
      mv -f "$out/bin/pinns" "$out/pinns" && rmdir "$out/bin" && rm -rf "$out/.pinns"
      log "pinns built: $(cat "$out/.build-stats-pinns")"
    fi
    exec 7>&-
  fi
  echo "$out"
}

upstream_version() { mod_version github.com/kubernetes-sigs/dra-driver-cpu "$here/tools/dra-driver-cpu-v0.2.0/go.mod"; }

# the module's directory in the Go module cache, downloaded first (`go list -m` prints an empty Dir for a
# module not in the cache yet: a new machine)
upstream_src() {
  (cd "$here/tools/dra-driver-cpu-v0.2.0" && GOFLAGS=-mod=mod go mod download -json github.com/kubernetes-sigs/dra-driver-cpu) |
    sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p'
}

build_upstream_binaries() { # upstream's v0.2.0 driver and its test image's programs (part of real-node)
  local dir="$here/tools/dra-driver-cpu-v0.2.0" v out
  v=$(upstream_version); out="$cache/dra-driver-cpu/$v"
  go_build "dra-driver-cpu $v" "$dir" "$out" "" github.com/kubernetes-sigs/dra-driver-cpu/cmd/dracpu \
    github.com/kubernetes-sigs/dra-driver-cpu/test/image/dracpuinfo \
    github.com/kubernetes-sigs/dra-driver-cpu/test/image/dracputester
  # upstream's Dockerfile copies the binary a second time as /dracpu-gatherinfo (it dispatches on its name);
  # a temporary of this process's own: two callers (the build behind, a test's build.sh real-node) may
  # both find it missing at once (a shared name failed one of them on a new machine, 8c3c3ad)
  [ -x "$out/dracpu-gatherinfo" ] || { cp "$out/dracpu" "$out/.gatherinfo.$$" && mv -f "$out/.gatherinfo.$$" "$out/dracpu-gatherinfo"; }
  echo "$out"
}

build_upstream_chart() { # upstream's 0.2.0 chart as its release packages it (every cluster's registry holds it)
  local dir="$here/tools/dra-driver-cpu-v0.2.0" v out src helm_dir
  v=$(upstream_version); out="$cache/dra-driver-cpu/$v"
  if [ ! -f "$out/chart/.complete" ]; then
    mkdir -p "$out"
    exec 6>"$out.chart.lock"
    flock 6
    if [ ! -f "$out/chart/.complete" ]; then
      src=$(upstream_src)
      [ -d "$src/deployment/helm/dra-driver-cpu" ] || { echo "no upstream chart in the module ($src)" >&2; exit 2; }
      helm_dir=$(build_helm)
      rm -rf "$out/chart" && mkdir -p "$out/chart"
      "$helm_dir/helm" package "$src/deployment/helm/dra-driver-cpu" -d "$out/chart" >&2
      ls "$out/chart" > "$out/chart/.complete"
    fi
    exec 6>&-
  fi
  echo "$out/chart"
}

build_upstream() { # upstream's dra-driver-cpu v0.2.0 (the module zip is the repository at the tag)
  local dir="$here/tools/dra-driver-cpu-v0.2.0" out src
  out=$(build_upstream_binaries)
  build_upstream_chart >/dev/null
  if [ ! -f "$out/e2e/.complete" ]; then
    exec 6>"$out.e2e.lock"
    flock 6
    if [ ! -f "$out/e2e/.complete" ]; then
      # the e2e suite: go test -c from a writable copy of the module (its own go.mod and go.sum)
      src=$(upstream_src)
      log "compiling upstream's e2e suite $(upstream_version) into $out/e2e"
      rm -rf "$out/.src" "$out/e2e" && mkdir -p "$out/e2e" && cp -r "$src/." "$out/.src/" && chmod -R u+w "$out/.src"
      ( cd "$out/.src" && GOFLAGS=-mod=mod CGO_ENABLED=0 /usr/bin/time -f "%e s wall, %M KiB peak RSS" \
          -o "$out/e2e/.build-stats" go test -c -trimpath -o "$out/e2e/e2e.test" ./test/e2e >&2 )
      rm -rf "$out/.src"
      log "e2e suite compiled: $(cat "$out/e2e/.build-stats")"
      echo "$(upstream_version)" > "$out/e2e/.complete"
    fi
    exec 6>&-
  fi
  echo "$out"
}

build_real_node() { # one line per directory: kubelet containerd runc cni crane pause kube-proxy driver upstream
  build_kubelet; build_containerd; build_runc; build_cni; build_crane; build_pause; build_kube_proxy; build_driver
  build_upstream_binaries
}

case "$what" in
  etcd) build_etcd ;;
  helm) build_helm ;;
  helm-old) build_helm_old ;;
  kubernetes) build_kubernetes ;;
  real-node) build_real_node ;;
  runc) build_runc ;;
  cri-o) build_crio ;;
  driver) build_driver ;;
  upstream) build_upstream ;;
  upstream-chart) build_upstream_chart ;;
  all) build_etcd; build_helm; build_kubernetes ;;
  *) echo "usage: $0 [all|etcd|helm|helm-old|kubernetes|real-node|runc|cri-o|driver|upstream|upstream-chart]" >&2; exit 2 ;;
esac

"""What the real nodes change on the host itself, shared by every state dir that runs them.

Owns: the fixed paths that collide between node pairs (FIXED) and the mount points made for them, the
host-wide sysctls the kubelet writes, and /run/dracpu-real-nodes.json (host_state).
Must not: start or stop anything.
"""
import fcntl
import json
import os

from cluster_state import CACHE, STATE, read_json, write_file

# fixed paths that collide between node pairs: each node bind-mounts its own directory over them
# (/run/crio: a CRI-O node's socket, exit files, attach sockets and pinned namespaces: short paths,
# a unix socket's may have 104 characters at most)
FIXED = ["/var/lib/kubelet", "/run/containerd", "/run/netns", "/var/lib/cni", "/run/nri", "/run/cdi",
         "/var/log/pods", "/var/log/containers", "/run/crio"]
HOST_STATE = "/run/dracpu-real-nodes.json"   # shared by all state dirs
# the host-wide sysctls the kubelet writes (setupKernelTunables); ip_forward too, which the CNI bridge
# plugin writes in the namespace it runs in (the host's before the nodes had their own network namespace)
SYSCTLS = ["net/ipv4/ip_forward", "vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic",
           "kernel/panic_on_oops", "kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes"]
# raised while real nodes run: kind's recommended values, far above what
# both lanes of `make test` use at once (about 200 instances at the peak)
FLOORS = {"fs/inotify/max_user_instances": 8192, "fs/inotify/max_user_watches": 524288}
PROC_SYS = "/proc/sys/"


def _read_sysctls():
    out = {}
    for s in SYSCTLS + list(FLOORS):
        try:
            with open(PROC_SYS + s) as f:
                out[s] = f.read().strip()
        except OSError:
            pass
    return out


def _raise_floors():
    """FLOORS where the host is lower; returns the problems (a sysctl that could not be written)."""
    problems = []
    for k, floor in FLOORS.items():
        try:
            with open(PROC_SYS + k) as f:
                if int(f.read().strip()) >= floor:
                    continue
            with open(PROC_SYS + k, "w") as f:
                f.write(str(floor))
        except (OSError, ValueError) as e:
            problems.append(f"could not raise {k} to {floor} ({e}): a kubelet may exit at once with "
                            "'inotify_init: too many open files' when many nodes run")
    return problems


def host_state(join):
    """Host-wide changes shared by every state dir running real nodes (HOST_STATE, under a lock):
    the first one in records the sysctls and creates the missing bind-mount targets, the last one
    out restores and removes them (a state dir whose real-nodes.json is gone no longer counts)."""
    problems = []
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, "real-nodes.lock"), "w") as lk:   # machine-wide (the cache is)
        fcntl.flock(lk, fcntl.LOCK_EX)
        hs = read_json(HOST_STATE) or {"sysctls": _read_sysctls(),
                                       "created": [f for f in FIXED if not os.path.lexists(f)], "users": []}
        hs["users"] = [u for u in hs["users"] if u != STATE and os.path.exists(os.path.join(u, "real-nodes.json"))]
        if join:
            hs["users"].append(STATE)
            # a FIXED path missing now is made and recorded too (one added to FIXED while another
            # state dir, started by an older cluster.py, keeps the record open)
            hs["created"] += [f for f in FIXED if not os.path.lexists(f) and f not in hs["created"]]
            for f in hs["created"]:
                os.makedirs(f, exist_ok=True)
            problems += _raise_floors()
        if hs["users"]:
            write_file(HOST_STATE, json.dumps(hs, indent=1))
        else:
            for k, v in hs["sysctls"].items():
                try:
                    with open(PROC_SYS + k, "w") as f:
                        f.write(v)
                except OSError as e:
                    problems.append(f"sysctl {k}={v}: {e}")
            for f in hs["created"]:
                try:
                    os.rmdir(f)
                except OSError:
                    pass
            try:
                os.unlink(HOST_STATE)
            except OSError:
                pass
    return problems

"""The processes of a test cluster, found as `cluster.py down` finds its stragglers: by the id
cluster.py puts in the environment of everything it starts (DRACPU_CLUSTER_ID=<state dir>; every
child inherits it). Not by a mount namespace's number alone: the kernel gives that number to the
next namespace made on the machine (issue 30), which may be another cluster's."""
import os

ID_ENV = "DRACPU_CLUSTER_ID"


def processes_of(state_dir):
    """Pids whose environment carries state_dir's cluster id."""
    needle = f"{ID_ENV}={state_dir}".encode()
    found = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(d))
        except OSError:
            pass
    return found

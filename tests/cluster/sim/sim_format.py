"""Small formatting helpers shared by the simulator's parts (pure).

Owns: timestamps as the API server and the kubelet write them (RFC 3339, micro time), klog-style
log lines for the simulated driver's container log, stable short hashes for ids.
Must not: hold state or talk to the API server.
"""
import datetime
import hashlib


def wall():
    return datetime.datetime.now(datetime.timezone.utc)


def iso(t=None):
    return (t or wall()).strftime("%Y-%m-%dT%H:%M:%SZ")


def micro(t=None):
    return (t or wall()).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(s):
    try:
        return datetime.datetime.strptime(s[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return None


def klog(sev, msg, src="driver.go:1"):
    t = wall()
    return f"{sev}{t.strftime('%m%d %H:%M:%S.%f')}       1 {src}] {msg}"


def h(*parts, n=64):
    return hashlib.sha256("/".join(str(p) for p in parts).encode()).hexdigest()[:n]

"""What a driver on a real node tells about itself besides its slices: its Prometheus text on /metrics
and the operations in its log.

Owns: fetching /metrics from the driver's health port (upstream cmd/dracpu/app.go: beside /healthz on
--bind-address), reading the gauge samples of the families upstream main's e2e "Metrics" spec reads
(test/e2e/metrics_test.go: one unlabelled, whole, non-negative sample each), and grouping a klog text log
into operations by `opID` with the rules of upstream's logcheck (test/pkg/logcheck/ctxlog.go, applied by
its e2e ReportAfterSuite "contextual logging"): no repeated key on a line, begin/end lines balanced per
operation, each opID lower-case hex, each operation's first line "begin: ..." and its last "end: ...".
Must not: start anything or judge which driver runs (real_nodes_lib.py).
"""
import re
import urllib.error
import urllib.request

# upstream main pkg/metrics/metrics.go, the gauges its e2e metrics spec reads
ALLOCATION_GAUGES = ("dra_cpu_allocated_cpus", "dra_cpu_available_cpus", "dra_cpu_reserved_cpus",
                     "dra_cpu_resource_claims_active")
KV_PAIR = re.compile(r'(\w+)=("([^"]*)"|(\S+))')
OPID = re.compile(r"^[0-9a-f]+$")


def http_get(url, timeout=10):
    """(status, body) of a GET; an HTTP error status is returned, not raised."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:   # noqa: S310 (the node's own address)
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def gauges(text, names=ALLOCATION_GAUGES):
    """name -> value of each named gauge in Prometheus text: declared `# TYPE <name> gauge` with exactly
    one unlabelled sample, a whole non-negative number; raises ValueError naming what is wrong."""
    out = {}
    for name in names:
        if not re.search(rf"(?m)^# TYPE {name} gauge$", text):
            raise ValueError(f"{name}: no gauge family")
        samples = re.findall(rf"(?m)^{name}(\{{[^}}]*\}})? (\S+)$", text)
        if len(samples) != 1 or samples[0][0]:
            raise ValueError(f"{name}: want one unlabelled sample, got {samples}")
        value = float(samples[0][1])
        if value < 0 or value != int(value):
            raise ValueError(f"{name}: {value} is not a whole non-negative number")
        out[name] = int(value)
    return out


def _lines(log):
    """(message, key=value text) of each klog line whose payload starts with a quoted message."""
    out = []
    for raw in log.splitlines():
        head, sep, payload = raw.partition("] ")
        if not sep or not payload.startswith('"'):
            continue
        end = payload.find('"', 1)
        if end > 0:
            out.append((payload[1:end], payload[end + 1:].strip()))
    return out


def operations(log):
    """(opID -> the messages of its lines in order, the problems upstream's check would report)."""
    ops, problems, balance = {}, [], {}
    for message, kv in _lines(log):
        keys = set()
        for m in KV_PAIR.finditer(kv):
            if m.group(1) in keys:
                problems.append(f"repeated key {m.group(1)}: {message}")
            keys.add(m.group(1))
            if m.group(1) == "opID":
                if not OPID.match(m.group(3) or ""):
                    problems.append(f"invalid opID {m.group(0)}: {message}")
                ops.setdefault(m.group(3), []).append(message)
        for tag, step in (("begin: ", 1), ("end: ", -1)):
            if message.startswith(tag):
                op = message[len(tag):]
                balance[op] = balance.get(op, 0) + step
    problems += [f"begin/end imbalance of {op!r}: {n:+d}" for op, n in sorted(balance.items()) if n]
    for op_id, messages in ops.items():
        if not (messages[0].startswith("begin: ") and messages[-1].startswith("end: ")):
            problems.append(f"operation {op_id} does not run from begin: to end: {messages}")
    return ops, problems

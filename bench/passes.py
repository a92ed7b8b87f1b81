"""One pass of the benchmark: a scenario's timeline published while the waiters wait, and its record
(each waiter's latency or false ready, requests, CPU seconds, peak memory); the crosscheck of the
API server's request attribution; the profiled module run."""
from __future__ import annotations

import os
import time

import cluster_ctl
import timeline
import waiters
from cluster_ctl import log
from publisher import Publisher
from waiters import REPO, VENV_BIN


def run_pass(cl, sc, reps_idx, workdir, lead, ready_timeout, who=waiters.ALL, profile=False):
    """Publish one scenario's timeline while the waiters in `who` wait, concurrently."""
    wd = os.path.join(workdir, f"{sc.name}-r{reps_idx}" + ("-" + "-".join(who) if who != waiters.ALL else ""))
    os.makedirs(wd, exist_ok=True)
    cl.delete_all_slices()
    cl.wait_rollout(120 + 0.2 * sc.nodes)          # every driver pod running (a no-driver pass healed)
    if sc.kind == "no-driver":
        cl.driver_pod_never_starts(sc.special_node)  # its pod stays ContainerCreating during the pass
    try:
        return _run_pass(cl, sc, reps_idx, wd, lead, ready_timeout, who, profile)
    finally:
        if sc.kind == "no-driver":
            cl.driver_pod_never_starts(sc.special_node, never=False)


def _run_pass(cl, sc, reps_idx, wd, lead, ready_timeout, who, profile):
    pub = Publisher(cl.pub_api)
    pub.apply_now(sc.pre)
    time.sleep(0.5)
    load_start = host_load()
    before = cl.snapshot()
    if sc.ready_possible:
        timeout = int(lead + sc.span + ready_timeout)
    else:
        timeout = int(lead + sc.span + 5)          # the no-driver case: time out soon after the timeline
    t_launch = time.time()
    children = {}
    for w in who:
        if profile and w == "module":
            children[w] = start_profiled_module(cl, sc, wd, timeout)
        else:
            children[w] = waiters.start(w, cl.kubeconfigs[w], sc.targets, wd, timeout)
    t0 = t_launch + lead
    pub.run(sc.events, t0)
    t_pub_end = time.time()
    deadline = t0 + sc.span + timeout + 60
    finished = {w: c.join(deadline) for w, c in children.items()}
    time.sleep(0.3)
    after = cl.snapshot()
    flows = cluster_ctl.delta(after["flows"], before["flows"])
    reqs = cluster_ctl.delta(after["requests"], before["requests"])
    errors = [r for r in pub.records if r.get("error")]
    req = [r for r in pub.records if r["required"]]
    last = max(req, key=lambda r: r["stored"]) if (req and sc.ready_possible) else None
    lag = max((r["sent"] - (t0 + r["t"]) for r in pub.records), default=0.0)
    rec = {"scenario": sc.name, "kind": sc.kind, "realism": timeline.REALISM[sc.kind], "nodes": sc.nodes, "cells": sc.cells, "rep": reps_idx,
           "seed": sc.seed, "span": sc.span, "lead": lead, "special_node": sc.special_node,
           "t_launch": t_launch, "t0": t0, "t_pub_end": t_pub_end, "publisher_errors": errors[:5],
           "publisher_max_lag": round(lag, 3), "publisher_ops": len(pub.records),
           "t_ready_stored": last["stored"] if last else None, "t_ready_sent": last["sent"] if last else None,
           "last_required": {k: last[k] for k in ("key", "note", "t")} if last else None,
           "request_delta": {f"{v} {r}": n for (v, r), n in sorted(reqs.items())},
           "read_requests_total": cluster_ctl.read_requests(reqs),
           "publisher_requests": flows.get("dracpu-bench-publisher", 0),
           "load_start": load_start, "load_end": host_load(), "waiters": {}}
    for w, c in children.items():
        o = waiters.outcome(c, sc.special_node)
        r = {"ready": o["ready"], "rc": c.rc, "finished": finished[w], "exit": c.end,
             "exit_after_t0": round(c.end - t0, 3) if c.end else None,
             "startup": None, "named": o["named"], "stats": o["stats"],
             "requests": flows.get(cluster_ctl.flow_name(w), 0), "msg": o["msg"][-600:]}
        if c.rusage is not None:
            r["cpu_s"] = round(c.rusage.ru_utime + c.rusage.ru_stime, 3)
        rss = c.peak_rss_kib()          # the waiter's own peak (GNU time), not wait4's (see waiters.py)
        r["maxrss_mib"] = round(rss / 1024.0, 1) if rss is not None else None
        if not finished[w]:
            r["ready"] = False
            r["msg"] = "killed: did not return before the pass deadline"
        if sc.ready_possible:
            r["false_ready"] = bool(r["ready"] and c.end is not None and c.end < last["sent"])
            r["latency"] = round(c.end - last["stored"], 3) if (r["ready"] and c.end and not r["false_ready"]) else None
            r["missed"] = not r["ready"]
        else:
            r["false_ready"] = bool(r["ready"])
            r["latency"] = None
            r["missed"] = False
        if r["false_ready"] and last:
            r["early_by"] = round(last["stored"] - c.end, 3)
        rec["waiters"][w] = r
    summary = ", ".join(
        f"{w}: " + ("FALSE READY" if r["false_ready"] else
                    (f"{r['latency']:+.2f}s" if r["latency"] is not None else ("timeout" + (
                        " (named)" if r["named"] else "")))) + f" {r['requests']:.0f}req"
        for w, r in rec["waiters"].items())
    log(f"{sc.label} rep {reps_idx}: {summary}; pub lag {lag:.2f}s"
        + (f"; PUBLISHER ERRORS {len(errors)}: {errors[0]['error']}" if errors else ""))
    return rec


def host_load():
    """1-min load average and the number of kube-apiservers running on the host (other clusters)."""
    try:
        with open("/proc/loadavg") as f:
            la = float(f.read().split()[0])
    except (OSError, ValueError):
        la = None
    n = 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/comm") as f:
                    if f.read().strip() == "kube-apiserver":
                        n += 1
            except OSError:
                pass
    return {"loadavg1": la, "apiservers": n}


def start_profiled_module(cl, sc, wd, timeout):
    """The direct module run, with the measured waiter's arguments, under pyinstrument (text profile
    in <wd>/module.profile.txt)."""
    args = waiters.write_module_args(os.path.join(wd, "module-args.json"), "module", cl.kubeconfigs["module"],
                                     sc.targets, timeout)
    prof = os.path.join(wd, "module.profile.txt")
    argv = [os.path.join(VENV_BIN, "python"), "-m", "pyinstrument", "-r", "text", "--show-all", "-o", prof,
            waiters.MODULE, args]
    return waiters.Child("module", argv, waiters.module_env(), REPO, wd)


def crosscheck(cl, sc_base, workdir, lead, ready_timeout):
    """Each waiter alone on the same timeline; apiserver_request_total (GET/LIST/WATCH) delta minus a
    publisher-only pass: validates the FlowSchema attribution with the metric the brief names."""
    out = {}
    base = run_pass(cl, sc_base, 0, workdir, lead, ready_timeout, who=())
    out["baseline_reads"] = base["read_requests_total"]
    for w in waiters.ALL:
        rec = run_pass(cl, sc_base, 0, workdir, lead, ready_timeout, who=(w,))
        out[w] = {"reads_minus_baseline": rec["read_requests_total"] - base["read_requests_total"],
                  "flowschema": rec["waiters"][w]["requests"],
                  "request_delta": rec["request_delta"]}
    return out

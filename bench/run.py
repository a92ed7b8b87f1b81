#!/usr/bin/env python3
"""Benchmark: readiness detection, API cost and run time of kubevirtci.dra_cpu.cpu_topology against
the shell installer's waiting rule and upstream CI's rule, on the hermetic test cluster.

    make bench                              # = .venv/bin/python bench/run.py  -> bench/results.md, .png
    .venv/bin/python bench/run.py --smoke   # N=1 and 10, 1 repetition, short timeline (< 3 min)

Bench-only dependencies (bench/requirements.txt: matplotlib, pyinstrument) are in requirements-dev.lock: `make deps`.
Needs root (the test cluster uses a network namespace) and the binaries of tests/cluster/build.sh.
See bench/README.md for the method.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

try:
    import matplotlib  # noqa: F401
except ImportError:
    matplotlib = None

import cluster_ctl  # noqa: E402
import timeline  # noqa: E402
import waiters  # noqa: E402
from cluster_ctl import log  # noqa: E402
from publisher import Publisher  # noqa: E402

VENV_BIN = os.path.join(REPO, ".venv", "bin")


def deps_hint():
    return ("bench dependencies missing: run `make deps` (.venv from requirements-dev.lock, which holds "
            "bench/requirements.txt: matplotlib for the plot, pyinstrument for profiles)")


# ------------------------------------------------------------------------------------ one pass

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


# ------------------------------------------------------------------------------------ whole run

def helm_revisions(env, helm):
    r = subprocess.run([helm, "history", "dra-driver-cpu", "-n", "dra-driver-cpu", "-o", "json"], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        return 0
    return len(json.loads(r.stdout or "[]"))


def timed(argv, env, log_path, timeout=900):
    t = time.monotonic()
    with open(log_path, "w") as f:
        r = subprocess.run(argv, env=env, cwd=REPO, stdout=f, stderr=subprocess.STDOUT, timeout=timeout)
    wall = time.monotonic() - t
    with open(log_path, errors="replace") as f:
        text = f.read()
    return wall, r.returncode, text


def recap_changed(text):
    import re
    m = re.findall(r"localhost\s+:\s+ok=(\d+)\s+changed=(\d+)", text)
    return int(m[-1][1]) if m else None


def wait_gone(cl, timeout=180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ns = None
        try:
            ns = cl.api.get("/api/v1/namespaces/dra-driver-cpu")
        except cluster_ctl.sim_api.ApiError as e:
            if e.status != 404:
                raise
        sl = cl.api.get(cluster_ctl.SLICES, query={"fieldSelector": "spec.driver=dra.cpu", "limit": "1"})
        if ns is None and not sl.get("items"):
            return time.monotonic()
        time.sleep(0.5)
    raise RuntimeError("the driver's namespace/slices did not go away")


def whole_run(state_dir, workdir, reps):
    """From empty to ready and a no-op re-run, on twin 1-node clusters with the simulated driver:
    cluster a runs playbooks/install.yml, cluster b the hand-written kubernetes.core playbook
    (bench/handwritten_install.yml) and then the shell installer's sequence. Which twin goes first
    alternates between repetitions."""
    twins = {side: cluster_ctl.Cluster(f"{state_dir}-{side}", 1, simulate_driver=True, vcpu=12, numa=2,
                                       extra={"CLUSTER_SLICE_DELETE_DELAY": "2"}) for side in ("a", "b")}
    res = {"reps": [], "cluster_up_s": None, "notes": [], "twins": True}
    os.makedirs(workdir, exist_ok=True)
    try:
        for side, cl in twins.items():
            cl.up()
        res["cluster_up_s"] = round(max(cl.up_seconds for cl in twins.values()), 1)
        envs = {side: _whole_env(cl, os.path.join(workdir, side)) for side, cl in twins.items()}

        def helm_of(side):
            return twins[side].env["CLUSTER_HELM_BINARY"]

        def cleanup(side):
            env = envs[side]
            subprocess.run([helm_of(side), "uninstall", "dra-driver-cpu", "-n", "dra-driver-cpu", "--wait"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            subprocess.run([waiters.KUBECTL, "delete", "namespace", "dra-driver-cpu", "--ignore-not-found",
                            "--wait=true", "--timeout=120s"], env=env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            wait_gone(twins[side])

        def pair(side, name, argv, env, rep, changed=True):
            out = {}
            r0 = helm_revisions(env, helm_of(side))
            for phase in ("install", "noop"):
                wall, rc, text = timed(argv, env, os.path.join(workdir, f"{name}-{phase}-{rep}.log"))
                r1 = helm_revisions(env, helm_of(side))
                out[phase] = {"wall": round(wall, 2), "rc": rc, "new_revisions": r1 - r0}
                if changed:
                    out[phase]["changed"] = recap_changed(text)
                r0 = r1
            log(f"whole run rep {rep}: {name} {out}")
            return out

        def side_a(rep):
            cl, env = twins["a"], envs["a"]
            evars = json.dumps({"dra_cpu_kubeconfig": cl.env["KUBECONFIG"], "dra_cpu_chart": cl.env["DRA_CPU_CHART"],
                                "dra_cpu_chart_plain_http": True, "dra_cpu_helm_binary": helm_of("a")})
            play = [os.path.join(VENV_BIN, "ansible-playbook"), os.path.join(REPO, "playbooks", "install.yml"),
                    "-e", evars]
            out = {"ansible": pair("a", "install", play, env, rep)}
            wall, rc, _ = timed([os.path.join(VENV_BIN, "ansible-playbook"),
                                 os.path.join(REPO, "playbooks", "uninstall.yml"), "-e", evars], env,
                                os.path.join(workdir, f"uninstall-{rep}.log"))
            if rc != 0:
                res["notes"].append(f"uninstall.yml failed (rc {rc}) in rep {rep}; cleaned up with helm/kubectl")
            cleanup("a")
            return out

        def side_b(rep):
            cl, env = twins["b"], envs["b"]
            hw = [os.path.join(VENV_BIN, "ansible-playbook"), os.path.join(HERE, "handwritten_install.yml"), "-e",
                  json.dumps({"hw_kubeconfig": cl.env["KUBECONFIG"], "hw_chart": cl.env["DRA_CPU_CHART"],
                              "hw_helm": helm_of("b")})]
            out = {"handwritten": pair("b", "handwritten", hw, env, rep)}
            cleanup("b")
            shell_env = dict(env, KUBECTL=waiters.KUBECTL, HELM=helm_of("b"), DRA_CPU_CHART=cl.env["DRA_CPU_CHART"],
                             KUBEVIRT_PROVIDER="k8s-1.36")
            out["shell"] = pair("b", "shell", ["bash", os.path.join(HERE, "shell_install.sh")], shell_env, rep,
                                changed=False)
            cleanup("b")
            return out

        for rep in range(reps):
            one = {}
            for side in (("a", "b") if rep % 2 == 0 else ("b", "a")):
                one.update(side_a(rep) if side == "a" else side_b(rep))
            res["reps"].append(one)
    finally:
        for cl in twins.values():
            res["notes"] += cl.notes
            cl.down()
    return res


def _whole_env(cl, workdir):
    env = dict(os.environ)
    env.update({"KUBECONFIG": cl.env["KUBECONFIG"], "KUBEVIRT_USE_DRA_CPU": "true",
                "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
                "PATH": VENV_BIN + os.pathsep + os.environ.get("PATH", ""),
                "HELM_CONFIG_HOME": os.path.join(workdir, "helm", "config"),
                "HELM_CACHE_HOME": os.path.join(workdir, "helm", "cache"),
                "HELM_DATA_HOME": os.path.join(workdir, "helm", "data"),
                "KUBECACHEDIR": os.path.join(workdir, "kubectl-cache"),
                "ANSIBLE_LOCAL_TEMP": os.path.join(workdir, "ansible-tmp")})
    return env


# ------------------------------------------------------------------------------------ plan

def plan(args):
    adversarial = [(k, 2) for k in timeline.KINDS[1:]]
    if args.smoke:
        return {
            "span": 5.0, "lead": 2.5, "ready_timeout": 40, "reps": 1, "adv_reps": 1,
            "clusters": [
                {"nodes": 1, "scenarios": [("spread", 2)]},
                {"nodes": 10, "scenarios": [("spread", 2)] + adversarial},
            ],
            "whole_run_reps": args.whole_run_reps if args.whole_run_reps_given else 0,
            "crosscheck": None, "profile": None,
        }
    return {
        "span": 20.0, "lead": 3.0, "ready_timeout": 40, "reps": args.reps, "adv_reps": args.adv_reps,
        "clusters": [
            {"nodes": 1, "scenarios": [("spread", 2), ("spread", 8)]},
            {"nodes": 10, "scenarios": [("spread", 2), ("spread", 8)] + adversarial},
            {"nodes": 100, "scenarios": [("spread", 2), ("spread", 8)] + adversarial},
            {"nodes": 1000, "scenarios": [("spread", 2), ("spread", 8)] + adversarial},
        ],
        "whole_run_reps": args.whole_run_reps, "crosscheck": (100, 8), "profile": (1000, 8),
    }


def ready_timeout(p, n):
    """Seconds the waiters get beyond the timeline: more at 1000 nodes, where the publisher itself can
    lag behind its schedule on a loaded host (the waiters must not time out before the last slice)."""
    return p["ready_timeout"] + (200 if n >= 1000 else 0)


def machine():
    info = {"uname_r": platform.release(), "python": platform.python_version()}
    try:
        lscpu = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout
        for line in lscpu.splitlines():
            k, _, v = line.partition(":")
            if k.strip() in ("Model name", "CPU(s)", "Thread(s) per core", "Hypervisor vendor", "Architecture"):
                info[k.strip()] = v.strip()
    except OSError:
        pass
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
        info["memory_gib"] = round(kb / 1024 / 1024, 1)
    except (OSError, ValueError):
        pass
    for name, argv in (("kubectl", [waiters.KUBECTL, "version", "--client", "-o", "json"]),
                       ("ansible", [os.path.join(VENV_BIN, "ansible"), "--version"])):
        try:
            out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
            info[name] = (json.loads(out)["clientVersion"]["gitVersion"] if name == "kubectl"
                          else out.splitlines()[0])
        except (OSError, ValueError, KeyError, IndexError):
            pass
    return info


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="N=1 and 10, 1 repetition, 6 s timeline (< 3 min)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per workload (default 5)")
    ap.add_argument("--adv-reps", type=int, default=3, help="repetitions per adversarial case (default 3)")
    ap.add_argument("--whole-run-reps", type=int, default=None,
                    help="whole-run repetitions (default 3; 0 in --smoke unless given)")
    ap.add_argument("--only-kinds", action="append", help="run only these scenario kinds")
    ap.add_argument("--only-nodes", type=int, action="append", help="run only these cluster sizes")
    ap.add_argument("--only-cells", type=int, action="append", help="run only the workloads with these cells")
    ap.add_argument("--no-whole-run", action="store_true")
    ap.add_argument("--out", help="output directory for results.md/results.png/results.json "
                                  "(default: bench/ for a full run, bench/out/smoke for --smoke)")
    ap.add_argument("--state-prefix", default="/tmp/dracpu-bench", help="cluster state dirs: <prefix>-<n>")
    ap.add_argument("--report-only", metavar="RESULTS_JSON",
                    help="only re-write results.md/results.png (into --out or next to the file) from a results.json")
    ap.add_argument("--whole-run-only", action="store_true",
                    help="only the whole-run comparison; merged into the results.json in --out when present")
    ap.add_argument("--merge", metavar="RESULTS_JSON",
                    help="merge another run's results.json (e.g. --only-nodes 1000) into --out's results.json: "
                         "its cluster sizes replace the same sizes there")
    args = ap.parse_args(argv)
    args.whole_run_reps_given = args.whole_run_reps is not None
    if args.whole_run_reps is None:
        args.whole_run_reps = 3
    if args.merge:
        out_dir = os.path.abspath(args.out or HERE)
        with open(os.path.join(out_dir, "results.json")) as f:
            base = json.load(f)
        with open(args.merge) as f:
            other = json.load(f)
        sizes = {c["nodes"] for c in other["clusters"]}
        replaced = [p for p in base["passes"] if p["nodes"] in sizes]
        base["passes"] = [p for p in base["passes"] if p["nodes"] not in sizes] + other["passes"]
        base.setdefault("replaced_passes", []).extend(replaced)
        base["clusters"] = [c for c in base["clusters"] if c["nodes"] not in sizes] + other["clusters"]
        base["notes"] = [n for n in base["notes"] if not any(n.startswith(f"N={s}:") or f"N={s} " in n
                                                            for s in sizes)] + other["notes"]
        base["notes"].append(f"N={'/'.join(map(str, sorted(sizes)))}: measured in a separate run started "
                             f"{other['started']} ({other['plan']['reps']} repetitions, "
                             f"{other['duration_s'] / 60:.1f} min) and merged (bench/run.py --merge)")
        if other.get("profile"):
            base["profile"] = other["profile"]
        base["merged_runs"] = base.get("merged_runs", []) + [{k: other[k] for k in ("started", "duration_s", "plan")}]
        dump_raw(base, out_dir)
        import report
        print(report.write(base, out_dir))
        return 0
    if args.report_only:
        import report
        with open(args.report_only) as f:
            results = json.load(f)
        print(report.write(results, os.path.abspath(args.out or os.path.dirname(os.path.abspath(args.report_only)))))
        return 0

    if os.geteuid() != 0:
        print("bench/run.py needs root: the test cluster creates a network namespace", file=sys.stderr)
        return 2
    if matplotlib is None:
        print(deps_hint(), file=sys.stderr)
    out_dir = os.path.abspath(args.out or (os.path.join(HERE, "out", "smoke") if args.smoke else HERE))
    os.makedirs(out_dir, exist_ok=True)
    workdir = os.path.join(args.state_prefix + "-work", time.strftime("%Y%m%d-%H%M%S"))
    os.makedirs(workdir, exist_ok=True)
    p = plan(args)
    started = time.time()
    if args.whole_run_only:
        path = os.path.join(out_dir, "results.json")
        results = json.load(open(path)) if os.path.exists(path) else None
        wr = whole_run(f"{args.state_prefix}-whole", os.path.join(workdir, "whole"), args.whole_run_reps)
        if results is None:
            print(json.dumps(wr, indent=1))
            return 0
        results["whole_run"] = wr
        results.setdefault("notes", []).append(
            f"whole run measured separately (bench/run.py --whole-run-only) at {time.strftime('%Y-%m-%d %H:%M:%S %Z')}")
        dump_raw(results, out_dir)
        import report
        print(report.write(results, out_dir))
        return 0
    results = {"smoke": args.smoke, "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine(),
               "plan": {k: v for k, v in p.items() if k != "clusters"}, "clusters": [], "passes": [],
               "crosscheck": None, "whole_run": None, "notes": [], "profile": None}
    results["plan"]["clusters"] = [{"nodes": c["nodes"], "scenarios": c["scenarios"]} for c in p["clusters"]]
    log(f"bench start: {'smoke' if args.smoke else 'full'}; work dir {workdir}; output {out_dir}")
    try:
        for cdef in p["clusters"]:
            n = cdef["nodes"]
            if args.only_nodes and n not in args.only_nodes:
                continue
            state = f"{args.state_prefix}-{n}"
            cl = cluster_ctl.Cluster(state, n, simulate_driver=False, vcpu=timeline.VCPU, numa=8)
            cinfo = {"nodes": n, "state_dir": state}
            results["clusters"].append(cinfo)
            try:
                cl.up()
                cinfo["up_s"] = round(cl.up_seconds, 1)
                t = time.monotonic()
                uids = cl.ensure_nodes()
                cinfo["nodes_ready_s"] = round(time.monotonic() - t, 1)
                cwd = os.path.join(workdir, f"n{n}")
                cl.setup_identities(os.path.join(cwd, "identities"))
                cl.pub_api = cluster_ctl.sim_api.Api(cl.kubeconfigs["publisher"], qps=0, burst=0, pool_size=32)
                cinfo["driver_pods_ready_s"] = cl.ensure_driver_daemonset()
                for kind, cells in cdef["scenarios"]:
                    if args.only_cells and cells not in args.only_cells:
                        continue
                    if args.only_kinds and kind not in args.only_kinds:
                        continue
                    for rep in range(p["reps"] if kind == "spread" else p["adv_reps"]):
                        seed = n * 1000 + cells * 100 + rep * 10 + timeline.KINDS.index(kind)
                        sc = timeline.build(kind, n, cells, seed, span=p["span"], uids=uids)
                        try:
                            results["passes"].append(run_pass(cl, sc, rep, cwd, p["lead"], ready_timeout(p, n)))
                        except Exception as e:  # noqa: BLE001 -- keep going, report the broken pass
                            log(f"pass {sc.label} rep {rep} broke: {e}\n{traceback.format_exc()}")
                            results["notes"].append(f"pass {sc.label} rep {rep} broke: {e}")
                if p["crosscheck"] and p["crosscheck"][0] == n:
                    sc = timeline.build("spread", n, p["crosscheck"][1], 4242, span=p["span"], uids=uids)
                    results["crosscheck"] = {"scenario": sc.label,
                                             **crosscheck(cl, sc, os.path.join(cwd, "crosscheck"), p["lead"],
                                                          p["ready_timeout"])}
                if p["profile"] and p["profile"][0] == n:
                    sc = timeline.build("spread", n, p["profile"][1], 4343, span=p["span"], uids=uids)
                    pdir = os.path.join(cwd, "profile")
                    rec = run_pass(cl, sc, 0, pdir, p["lead"], ready_timeout(p, n), who=("module",), profile=True)
                    prof = os.path.join(pdir, f"{sc.name}-r0-module", "module.profile.txt")
                    if os.path.exists(prof):
                        dst = os.path.join(out_dir, "profile-module-1000x8.txt")
                        shutil.copy(prof, dst)
                        results["profile"] = {"file": os.path.relpath(dst, REPO), "pass": rec["waiters"]["module"]}
            except Exception as e:  # noqa: BLE001
                log(f"cluster N={n} failed: {e}\n{traceback.format_exc()}")
                results["notes"].append(f"cluster N={n} failed: {str(e)[-1500:]}")
            finally:
                cinfo["notes"] = cl.notes
                results["notes"] += [f"N={n}: {x}" for x in cl.notes]
                cl.down()
            dump_raw(results, out_dir)
        if p["whole_run_reps"] and not args.no_whole_run and not args.only_nodes:
            try:
                results["whole_run"] = whole_run(f"{args.state_prefix}-whole", os.path.join(workdir, "whole"),
                                                 p["whole_run_reps"])
            except Exception as e:  # noqa: BLE001
                log(f"whole run failed: {e}\n{traceback.format_exc()}")
                results["notes"].append(f"whole run failed: {str(e)[-1500:]}")
    finally:
        results["duration_s"] = round(time.time() - started, 1)
        dump_raw(results, out_dir)
        import report
        md = report.write(results, out_dir)
        log(f"bench done in {results['duration_s']:.0f}s: {md}")
    return 0


def dump_raw(results, out_dir):
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)


def _terminate(signum, _frame):
    raise SystemExit(f"terminated by signal {signum}")   # so that every `finally` (cluster down) runs


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())

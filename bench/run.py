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
from passes import crosscheck, run_pass  # noqa: E402
from waiters import VENV_BIN  # noqa: E402
from whole_run import whole_run  # noqa: E402


def deps_hint():
    return ("bench dependencies missing: run `make deps` (.venv from requirements-dev.lock, which holds "
            "bench/requirements.txt: matplotlib for the plot, pyinstrument for profiles)")


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


def parse_args(argv):
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
    return args


def main(argv=None):
    args = parse_args(argv)
    if args.merge:
        return merge(args)
    if args.report_only:
        return report_only(args)
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
        return whole_run_only(args, out_dir, workdir)
    return full_run(args, p, out_dir, workdir, started)


def write_report(results, out_dir):
    import report
    return report.write(results, out_dir)


def merge(args):
    """--merge: another run's cluster sizes (passes, clusters, notes, profile) replace the same sizes in
    --out's results.json; the report is written again."""
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
    print(write_report(base, out_dir))
    return 0


def report_only(args):
    """--report-only: results.md and the plot again from a results.json."""
    with open(args.report_only) as f:
        results = json.load(f)
    print(write_report(results, os.path.abspath(args.out or os.path.dirname(os.path.abspath(args.report_only)))))
    return 0


def whole_run_only(args, out_dir, workdir):
    """--whole-run-only: the whole run alone, into --out's results.json when there is one (else printed)."""
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
    print(write_report(results, out_dir))
    return 0


def full_run(args, p, out_dir, workdir, started):
    """Every cluster size of the plan, then the whole run; results.json after each size, the report at the end
    (also when interrupted)."""
    results = {"smoke": args.smoke, "started": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "machine": machine(),
               "plan": {k: v for k, v in p.items() if k != "clusters"}, "clusters": [], "passes": [],
               "crosscheck": None, "whole_run": None, "notes": [], "profile": None}
    results["plan"]["clusters"] = [{"nodes": c["nodes"], "scenarios": c["scenarios"]} for c in p["clusters"]]
    log(f"bench start: {'smoke' if args.smoke else 'full'}; work dir {workdir}; output {out_dir}")
    try:
        for cdef in p["clusters"]:
            if args.only_nodes and cdef["nodes"] not in args.only_nodes:
                continue
            run_cluster(args, p, cdef, results, workdir, out_dir)
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
        md = write_report(results, out_dir)
        log(f"bench done in {results['duration_s']:.0f}s: {md}")
    return 0


def run_cluster(args, p, cdef, results, workdir, out_dir):
    """One cluster size: up, its nodes, identities and driver DaemonSet, its passes, the crosscheck and
    profile when the plan puts them at this size, down. A failure is a note; the next size still runs."""
    n = cdef["nodes"]
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
        run_scenarios(args, p, cdef, cl, uids, cwd, results)
        run_extras(p, n, cl, uids, cwd, results, out_dir)
    except Exception as e:  # noqa: BLE001
        log(f"cluster N={n} failed: {e}\n{traceback.format_exc()}")
        results["notes"].append(f"cluster N={n} failed: {str(e)[-1500:]}")
    finally:
        cinfo["notes"] = cl.notes
        results["notes"] += [f"N={n}: {x}" for x in cl.notes]
        cl.down()


def run_scenarios(args, p, cdef, cl, uids, cwd, results):
    """The repetitions of every scenario of this size (--only-cells/--only-kinds apply); a pass that breaks
    is a note."""
    n = cdef["nodes"]
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


def run_extras(p, n, cl, uids, cwd, results, out_dir):
    """The crosscheck and the profiled module run, at the sizes the plan names."""
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


def dump_raw(results, out_dir):
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=1, default=str)


def _terminate(signum, _frame):
    raise SystemExit(f"terminated by signal {signum}")   # so that every `finally` (cluster down) runs


if __name__ == "__main__":
    import signal
    signal.signal(signal.SIGTERM, _terminate)
    sys.exit(main())

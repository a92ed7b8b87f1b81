"""results.json -> results.md (tables, goals) and results.png (plot)."""
from __future__ import annotations

import os
import statistics

import timeline
import waiters

W = waiters.ALL
GOAL_LATENCY = 0.5
GOAL_1000_LATENCY = 2.0
GOAL_RSS = 150.0
GOAL_NOOP = 10.0


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(xs, unit="", nd=2):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    m = statistics.median(xs)
    if len(xs) == 1:
        return f"{m:.{nd}f}{unit}"
    return f"{m:.{nd}f}{unit} [{min(xs):.{nd}f}-{max(xs):.{nd}f}]"


def group(passes, kind=None):
    out = {}
    for p in passes:
        if kind and p["kind"] != kind:
            continue
        if not kind and p["kind"] == "spread":
            pass
        out.setdefault((p["kind"], p["nodes"], p["cells"]), []).append(p)
    return out


def wvals(ps, w, key):
    return [p["waiters"][w].get(key) for p in ps if w in p["waiters"]]


def present(ps):
    return [w for w in W if any(w in p["waiters"] for p in ps)]


def goals(results):
    passes = [p for p in results["passes"] if set(waiters.CORE) <= set(p["waiters"])]
    spread = group(passes, "spread")
    rows = []
    # 1. detection latency p50 <= 0.5 s at every N
    worst = None
    per_n = []
    for (k, n, c), ps in sorted(spread.items(), key=lambda x: (x[0][1], x[0][2])):
        m = med(wvals(ps, "module", "latency"))
        per_n.append(f"N={n}x{c}: {m:.2f}s" if m is not None else f"N={n}x{c}: -")
        if m is None or worst is None or m > worst:
            worst = m if m is not None else float("inf")
    if per_n:
        rows.append(("Detection latency p50 <= 0.5 s at every N (module, direct run)",
                     "; ".join(per_n), worst is not None and worst <= GOAL_LATENCY))
        pb = []
        ok_pb = True
        for (k, n, c), ps in sorted(spread.items(), key=lambda x: (x[0][1], x[0][2])):
            m = med(wvals(ps, "playbook", "latency"))
            pb.append(f"N={n}x{c}: {m:.2f}s" if m is not None else f"N={n}x{c}: -")
            ok_pb = ok_pb and m is not None and m <= GOAL_LATENCY
        rows.append(("(same, through ansible-playbook: process and callback overhead included)", "; ".join(pb), ok_pb))
    # 2. zero false ready in every adversarial case
    adv = [p for p in passes if p["kind"] != "spread"] + [p for p in passes if p["kind"] == "spread"]
    fr = {w: sum(1 for p in adv if p["waiters"].get(w, {}).get("false_ready")) for w in W}
    n_adv = len([p for p in passes if p["kind"] != "spread"])
    if n_adv:
        named = [p["waiters"][w]["named"] for p in passes if p["kind"] == "no-driver"
                 for w in ("module", "playbook") if w in p["waiters"]]
        rows.append(("Zero false ready in every adversarial case (module)",
                     f"module {fr['module']}, via playbook {fr['playbook']} false ready in {len(adv)} passes "
                     f"({n_adv} adversarial); no-driver node named in {sum(1 for x in named if x)}/{len(named)} "
                     f"timeouts; measured for comparison: rule 1 {fr['rule1']}, rule 2 {fr['rule2']}",
                     fr["module"] == 0 and fr["playbook"] == 0 and all(named)))
    # 3. requests per wait O(1)
    req = []
    meds = []
    for (k, n, c), ps in sorted(spread.items(), key=lambda x: (x[0][1], x[0][2])):
        m = med(wvals(ps, "module", "requests"))
        meds.append(m)
        req.append(f"N={n}x{c}: {m:.0f}" if m is not None else "-")
    if meds and all(m is not None for m in meds):
        r1 = [med(wvals(ps, "rule1", "requests")) for ps in spread.values()]
        rows.append(("Requests per wait O(1) (a list plus a watch, + re-lists after 410), not O(polls)",
                     "module: " + "; ".join(req) + f" (rule 1: {min(r1):.0f}-{max(r1):.0f})",
                     max(meds) <= 6 and max(meds) - min(meds) <= 2))
    # 4. 1000 x 8
    big = spread.get(("spread", 1000, 8))
    if big:
        lat = wvals(big, "module", "latency")
        rss = wvals(big, "module", "maxrss_mib")
        cpu = wvals(big, "module", "cpu_s")
        ok = (med(lat) is not None and max(x for x in lat if x is not None) <= GOAL_1000_LATENCY
              and all(x is not None for x in lat) and all(x is not None for x in rss) and max(rss) <= GOAL_RSS)
        rows.append(("1000 nodes x 8 cells: module returns <= 2 s after the last slice; peak RSS <= 150 MiB",
                     f"latency {fmt(lat, ' s')} (max {max(x for x in lat if x is not None) if any(x is not None for x in lat) else float('nan'):.2f} s); "
                     f"peak RSS {fmt(rss, ' MiB', 1)}; CPU {fmt(cpu, ' s')}", ok))
    # 5. no-op re-run
    wr = results.get("whole_run")
    if wr and wr.get("reps"):
        noop = [r["ansible"]["noop"] for r in wr["reps"]]
        walls = [x["wall"] for x in noop]
        revs = [x["new_revisions"] for x in noop]
        changed = [x.get("changed") for x in noop]
        sh = [r["shell"]["noop"] for r in wr["reps"]]
        rows.append(("No-op re-run of install.yml: no change (no new helm revision), <= 10 s",
                     f"{fmt(walls, ' s', 1)}, new revisions {revs}, changed tasks {changed}; shell sequence re-run "
                     f"{fmt([x['wall'] for x in sh], ' s', 1)}, new revisions {[x['new_revisions'] for x in sh]}",
                     med(walls) <= GOAL_NOOP and all(r == 0 for r in revs) and all(c == 0 for c in changed)))
    return rows


def spread_table(results):
    passes = [p for p in results["passes"] if p["kind"] == "spread" and set(waiters.CORE) <= set(p["waiters"])]
    g = group(passes, "spread")
    lines = ["| N x cells | reps | host load | waiter | detection latency s, median [min-max] | false ready | missed "
             "| started late | API requests per wait, median [min-max] |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (k, n, c), ps in sorted(g.items(), key=lambda x: (x[0][1], x[0][2])):
        load = fmt([(p.get("load_start") or {}).get("loadavg1") for p in ps], nd=1)
        for w in present(ps):
            late = "-"
            if w in ("module", "playbook"):
                late = str(sum(1 for p in ps if started_late(p["waiters"][w])))
            lines.append(f"| {n} x {c} | {len(ps)} | {load} | {waiters.SHORT[w]} | {fmt(wvals(ps, w, 'latency'))} | "
                         f"{sum(1 for x in wvals(ps, w, 'false_ready') if x)} | "
                         f"{sum(1 for x in wvals(ps, w, 'missed') if x)} | {late} | {fmt(wvals(ps, w, 'requests'), nd=0)} |")
    lines += ["", "host load: 1-min load average of the 2-core host at the start of the passes (see Notes for "
              "anything else that ran on it). started late: passes in which the module's "
              "wait was already satisfied by its initial list (wait_stats.watches == 0), i.e. every slice had "
              "landed before the module process had even started listening; its latency there is start-up time, "
              "not detection."]
    return lines


def started_late(r):
    st = r.get("stats") or {}
    return r.get("ready") and st.get("watches") == 0


def adversarial_table(results):
    passes = [p for p in results["passes"] if p["kind"] != "spread" and set(waiters.CORE) <= set(p["waiters"])]
    g = group(passes)
    lines = ["| case | N x cells | reps | waiter | false ready | outcome | detection latency s (or time to fail) "
             "| requests |", "|---|---|---|---|---|---|---|---|"]
    for (k, n, c), ps in sorted(g.items(), key=lambda x: timeline.KINDS.index(x[0][0])):
        for w in present(ps):
            vals = [p["waiters"][w] for p in ps]
            fr = sum(1 for v in vals if v["false_ready"])
            if k == "no-driver":
                outc = []
                t_out = [v["exit_after_t0"] for v in vals if not v["ready"]]
                nt = len(t_out)
                outc.append(f"{nt} timed out")
                if w in ("module", "playbook"):
                    outc.append(f"node named {sum(1 for v in vals if v['named'])}/{nt}")
                lat = fmt(t_out, nd=1) + " after t0" if t_out else "-"
            else:
                early = [v.get("early_by") for v in vals if v["false_ready"]]
                outc = [f"{len(vals) - fr - sum(1 for v in vals if v['missed'])} correct"]
                if early:
                    outc.append(f"early by {fmt(early, ' s', 1)}")
                missed = sum(1 for v in vals if v["missed"])
                if missed:
                    outc.append(f"{missed} timed out")
                lat = fmt([v["latency"] for v in vals])
            lines.append(f"| {k} | {n} x {c} | {len(ps)} | {waiters.SHORT[w]} | {fr}/{len(vals)} | "
                         f"{', '.join(outc)} | {lat} | {fmt([v['requests'] for v in vals], nd=0)} |")
    return lines


def resources_table(results):
    passes = [p for p in results["passes"] if p["kind"] == "spread" and "module" in p["waiters"]]
    g = group(passes, "spread")
    lines = ["| N x cells | module CPU s (user+sys) | module peak RSS MiB | ansible-playbook CPU s (incl. module) "
             "| ansible-playbook peak RSS MiB (largest process) | module wait_stats (last rep) |",
             "|---|---|---|---|---|---|"]
    for (k, n, c), ps in sorted(g.items(), key=lambda x: (x[0][1], x[0][2])):
        st = ps[-1]["waiters"]["module"].get("stats") or {}
        st = {k2: v for k2, v in st.items() if k2 in ("lists", "watches", "relists", "reconnects", "node_checks", "events")}
        lines.append(f"| {n} x {c} | {fmt(wvals(ps, 'module', 'cpu_s'))} | {fmt(wvals(ps, 'module', 'maxrss_mib'), nd=1)} | "
                     f"{fmt(wvals(ps, 'playbook', 'cpu_s'))} | {fmt(wvals(ps, 'playbook', 'maxrss_mib'), nd=1)} | "
                     f"{st} |")
    return lines


def whole_table(results):
    wr = results.get("whole_run")
    if not wr or not wr.get("reps"):
        return ["(not run)"]
    lines = ["| sequence | reps | wall s, median [min-max] | new helm revisions per run | changed tasks | rc |",
             "|---|---|---|---|---|---|"]
    for side, label in (("ansible", "install.yml"), ("shell", "shell installer (helm upgrade -i --wait + rule 1)")):
        for phase, pl in (("install", "from empty to ready"), ("noop", "no-op re-run")):
            xs = [r[side][phase] for r in wr["reps"]]
            lines.append(f"| {label}, {pl} | {len(xs)} | {fmt([x['wall'] for x in xs], nd=1)} | "
                         f"{[x['new_revisions'] for x in xs]} | {[x.get('changed', '-') for x in xs]} | "
                         f"{[x['rc'] for x in xs]} |")
    return lines


def plot(results, out_dir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    passes = [p for p in results["passes"] if set(waiters.CORE) <= set(p["waiters"])]
    spread = group(passes, "spread")
    fig, axes = plt.subplots(1, 3, figsize=(17, 5.2))
    colors = {"rule1": "tab:red", "rule2": "tab:orange", "module": "tab:blue", "playbook": "tab:green"}
    for cells, style in ((2, "--"), (8, "-")):
        keys = sorted(k for k in spread if k[2] == cells)
        if not keys:
            continue
        ns = [k[1] for k in keys]
        for w in present(passes):
            meds, lo, hi = [], [], []
            for k in keys:
                xs = [x for x in wvals(spread[k], w, "latency") if x is not None]
                m = statistics.median(xs) if xs else float("nan")
                meds.append(m)
                lo.append(m - min(xs) if xs else 0)
                hi.append(max(xs) - m if xs else 0)
            axes[0].errorbar(ns, meds, yerr=[lo, hi], fmt="o" + style, color=colors[w], capsize=3,
                             label=f"{waiters.SHORT[w]}, {cells} cells")
            rq = [med(wvals(spread[k], w, "requests")) or float("nan") for k in keys]
            axes[1].plot(ns, rq, "o" + style, color=colors[w], label=f"{waiters.SHORT[w]}, {cells} cells")
    axes[0].axhline(GOAL_LATENCY, color="gray", lw=0.8, ls=":")
    axes[0].set_xscale("log")
    axes[0].set_yscale("log")
    axes[0].set_xlabel("nodes")
    axes[0].set_ylabel("return time - last slice stored (s)")
    axes[0].set_title("Detection latency (median, min-max); rule 2 returns early: false ready")
    axes[0].legend(fontsize=6.5)
    axes[1].set_xscale("log")
    axes[1].set_yscale("log")
    axes[1].set_xlabel("nodes")
    axes[1].set_ylabel("API requests per wait (median)")
    axes[1].set_title("API requests per wait (FlowSchema-attributed)")
    axes[1].legend(fontsize=6.5)
    adv = group([p for p in passes if p["kind"] != "spread"])
    cases = sorted(adv, key=lambda k: timeline.KINDS.index(k[0]))
    width = 0.16
    for i, w in enumerate(present(passes)):
        ys = [sum(1 for p in adv[k] if p["waiters"].get(w, {}).get("false_ready")) for k in cases]
        axes[2].bar([j + (i - (len(W) - 1) / 2) * width for j in range(len(cases))], ys, width, color=colors[w],
                    label=waiters.SHORT[w])
    axes[2].set_xticks(range(len(cases)))
    axes[2].set_xticklabels([f"{k[0]}\nN={k[1]}" for k in cases])
    axes[2].set_ylabel("false ready (passes)")
    axes[2].set_title("False ready in adversarial cases")
    axes[2].legend(fontsize=7)
    fig.suptitle(f"kubevirtci.dra_cpu bench, {results.get('started', '')}", fontsize=10)
    fig.tight_layout()
    path = os.path.join(out_dir, "results.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def write(results, out_dir):
    os.makedirs(out_dir, exist_ok=True)
    m = results["machine"]
    p = results["plan"]
    lines = ["# Benchmark results: readiness detection, API cost and run time", ""]
    lines.append(f"{'SMOKE run (not the committed figures). ' if results.get('smoke') else ''}"
                 f"Run started {results['started']}, took {results.get('duration_s', 0) / 60:.1f} min "
                 f"(`make bench` = `.venv/bin/python bench/run.py`).")
    lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in m.items()) + ".", ""]
    lines.append(f"Timeline: per-node publish times spread over 0-{p['span']:.0f} s after t0; waiters started "
                 f"{p['lead']:.0f} s before t0; {p['reps']} repetitions per workload (seeded, so each repetition "
                 f"is a different but reproducible timeline; all four waiters wait concurrently on the same one).")
    lines += ["", "## Goals", "", "| goal | measured | met |", "|---|---|---|"]
    for g, meas, ok in goals(results):
        lines.append(f"| {g} | {meas} | {'yes' if ok else '**no**'} |")
    lines += ["", "## Detection latency, false ready, API requests (spread workloads)", ""]
    lines += ["Latency = waiter process exit (reaped by the bench) minus the moment the create call of the last "
              "required slice returned (`time.time()`, same clock). Negative values cannot occur: such a return is "
              "counted as false ready instead (exit before that call was sent). Requests: "
              "`apiserver_flowcontrol_dispatched_requests_total` of the waiter's own FlowSchema (one ServiceAccount "
              "per waiter), see the cross-check below.", ""]
    lines += spread_table(results)
    lines += ["", "## Adversarial cases", ""]
    for k in timeline.KINDS[1:]:
        lines.append(f"- **{k}**: {timeline.DESCRIPTIONS[k]}.")
    lines += [""] + adversarial_table(results)
    lines += ["", "## Module process resources", ""] + resources_table(results)
    prof = results.get("profile")
    if prof:
        lines += ["", f"Profile of the direct module run at 1000 x 8 (pyinstrument, one extra pass): "
                      f"`{prof['file']}` (that pass: latency {prof['pass'].get('latency')} s, "
                      f"CPU {prof['pass'].get('cpu_s')} s, peak RSS {prof['pass'].get('maxrss_mib')} MiB; "
                      "the profiler adds overhead)."]
    cc = results.get("crosscheck")
    if cc:
        lines += ["", "## Cross-check of the request attribution", "",
                  f"{cc['scenario']}, one pass per waiter with that waiter alone, plus a pass with no waiter. "
                  "`apiserver_request_total` GET+LIST+WATCH delta of the pass minus the no-waiter pass, next to "
                  "the FlowSchema count:", "", "| waiter | apiserver_request_total reads - baseline | FlowSchema count |",
                  "|---|---|---|"]
        for w in W:
            if w in cc:
                lines.append(f"| {waiters.SHORT[w]} | {cc[w]['reads_minus_baseline']:.0f} | {cc[w]['flowschema']:.0f} |")
        lines.append(f"\n(no-waiter pass: {cc['baseline_reads']:.0f} reads by the control plane and simulator)")
    lines += ["", "## Whole run (1 node, simulated driver)", ""] + whole_table(results)
    wr = results.get("whole_run") or {}
    for n in wr.get("notes", []):
        lines.append(f"- {n}")
    lines += ["", "## Clusters", ""]
    for c in results["clusters"]:
        lines.append(f"- N={c['nodes']}: `cluster.py up` {c.get('up_s', '-')} s, Node objects there "
                     f"{c.get('nodes_ready_s', '-')} s later" + (f"; {'; '.join(c['notes'])}" if c.get("notes") else ""))
    if wr.get("cluster_up_s"):
        lines.append(f"- whole run, 1 node with the simulated driver: `cluster.py up` {wr['cluster_up_s']} s")
    lag = [p["publisher_max_lag"] for p in results["passes"]]
    errs = sum(len(p["publisher_errors"]) for p in results["passes"])
    lines.append(f"- publisher: max lag behind schedule {max(lag) if lag else 0:.2f} s, errors {errs}")
    if results.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in results["notes"]]
    png = plot(results, out_dir)
    if png:
        lines += ["", f"![plot]({os.path.basename(png)})"]
    lines += ["", "Method and caveats: bench/README.md. Raw data: results.json.", ""]
    path = os.path.join(out_dir, "results.md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path

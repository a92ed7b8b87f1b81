"""results.json -> results.md (tables, goals) and results.png (plot)."""
from __future__ import annotations

import os
import statistics

import timeline
import waiters

W = waiters.ALL
GOAL_LATENCY = 0.3          # module, p50 at every N up to 1000 x 8
GOAL_ROLE_1000 = 1.5        # through ansible-playbook (the role's tasks), p50 at 1000 x 8
GOAL_RSS = 150.0            # the module's own peak RSS (MiB) at 1000 x 8
GOAL_NOOP_RATIO = 0.42      # install.yml no-op re-run / the hand-written playbook's (issue 45: no slower than 1.44/3.42 s)
GOAL_INSTALL_RATIO = 0.9    # install.yml first install / the hand-written playbook's (issue 45)
# one colour per waiter of the plot (tests/unit/bench/test_report.py: every waiter has one)
COLORS = {"rule1": "tab:red", "rule2": "tab:orange", "module": "tab:blue", "module_pods": "tab:purple",
          "playbook": "tab:green"}
CAUSES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "goal_causes.json")


def causes():
    """Why a goal was missed, written down after a run (bench/goal_causes.json: {goal id: text})."""
    try:
        import json
        with open(CAUSES) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


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
    """[(id, goal, measured, met)]: every goal of the issue, measured in this run (a goal without data
    stays in the table as not measured)."""
    passes = [p for p in results["passes"] if set(waiters.CORE) <= set(p["waiters"])]
    spread = group(passes, "spread")
    keys = sorted(spread, key=lambda x: (x[1], x[2]))
    rows = []
    # 1. detection latency
    for w in ("module", "module_pods"):
        per_n, ok = [], bool(keys)
        for k in keys:
            m = med(wvals(spread[k], w, "latency"))
            per_n.append(f"N={k[1]}x{k[2]}: {fmt(wvals(spread[k], w, 'latency'))}")
            ok = ok and m is not None and m <= GOAL_LATENCY
        rows.append((f"latency-{w}", f"Detection latency p50 <= {GOAL_LATENCY} s at every N up to 1000 x 8 "
                     f"({waiters.SHORT[w]})", "; ".join(per_n) or "not measured", ok))
    big = spread.get(("spread", 1000, 8)) or []
    lat = wvals(big, "playbook", "latency")
    rows.append(("latency-role-1000", f"Detection latency p50 <= {GOAL_ROLE_1000} s at 1000 x 8 through "
                 "ansible-playbook (the role's tasks)", fmt(lat, " s") if big else "not measured",
                 (med(lat) is not None and med(lat) <= GOAL_ROLE_1000) if big else None))
    # 2. memory
    for w in ("module", "module_pods"):
        rss = wvals(big, w, "maxrss_mib")
        rows.append((f"rss-{w}", f"The module's own peak RSS <= {GOAL_RSS:.0f} MiB at 1000 x 8 ({waiters.SHORT[w]})",
                     fmt(rss, " MiB", 1) if big else "not measured",
                     (bool(rss) and all(x is not None and x <= GOAL_RSS for x in rss)) if big else None))
    # 3. false ready on every path of the collection
    fr = {w: sum(1 for p in passes if p["waiters"].get(w, {}).get("false_ready")) for w in W}
    seen = {w: sum(1 for p in passes if w in p["waiters"]) for w in W}
    named = [p["waiters"][w]["named"] for p in passes if p["kind"] == "no-driver" for w in waiters.OURS
             if w in p["waiters"]]
    rows.append(("false-ready", "0 false ready on every path (module with and without nodes, the role)",
                 "; ".join(f"{waiters.SHORT[w]} {fr[w]} of {seen[w]} passes" for w in waiters.OURS)
                 + f"; no-driver node named in {sum(1 for x in named if x)}/{len(named)} timeouts; for comparison: "
                 f"rule 1 {fr['rule1']}, rule 2 {fr['rule2']}",
                 all(fr[w] == 0 and seen[w] > 0 for w in waiters.OURS) and all(named)))
    # 4. requests per wait O(1)
    req = [(k, med(wvals(spread[k], "module", "requests"))) for k in keys]
    if req and all(m is not None for _, m in req):
        ms = [m for _, m in req]
        rows.append(("requests", "Requests per wait O(1) (a list plus a watch, + re-lists after 410, + the tick's node and driver-pod "
                     "reads every 10 s while a target is pending), not O(polls)",
                     "module: " + "; ".join(f"N={k[1]}x{k[2]}: {m:.0f}" for k, m in req),
                     max(ms) <= 6 and max(ms) - min(ms) <= 2))
    # 5. whole run against the hand-written playbook
    wr = results.get("whole_run") or {}
    reps = [r for r in wr.get("reps") or [] if "handwritten" in r and "ansible" in r]
    for phase, goal, gid in (("noop", GOAL_NOOP_RATIO, "noop-ratio"), ("install", GOAL_INSTALL_RATIO, "install-ratio")):
        if not reps:
            rows.append((gid, f"install.yml {phase} / hand-written playbook <= {goal}", "not measured", None))
            continue
        ours = [r["ansible"][phase]["wall"] for r in reps]
        theirs = [r["handwritten"][phase]["wall"] for r in reps]
        ratio = med(ours) / med(theirs)
        extra = ""
        if phase == "noop":
            extra = (f"; install.yml new revisions {[r['ansible'][phase]['new_revisions'] for r in reps]}, "
                     f"changed tasks {[r['ansible'][phase].get('changed') for r in reps]}")
        rows.append((gid, f"install.yml {'no-op re-run' if phase == 'noop' else 'first install'} / the hand-written "
                     f"kubernetes.core playbook <= {goal} (medians)",
                     f"{fmt(ours, ' s', 1)} vs {fmt(theirs, ' s', 1)}: ratio {ratio:.2f}{extra}", ratio <= goal))
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
            if w in waiters.OURS:
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
                if w in waiters.OURS:
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
    for side, label in (("ansible", "install.yml (twin a)" if wr.get("twins") else "install.yml"),
                        ("handwritten", "hand-written kubernetes.core playbook (twin b)"),
                        ("shell", "shell installer (helm upgrade -i --wait + rule 1)")):
        for phase, pl in (("install", "from empty to ready"), ("noop", "no-op re-run")):
            xs = [r[side][phase] for r in wr["reps"] if side in r]
            if not xs:
                continue
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
            axes[0].errorbar(ns, meds, yerr=[lo, hi], fmt="o" + style, color=COLORS[w], capsize=3,
                             label=f"{waiters.SHORT[w]}, {cells} cells")
            rq = [med(wvals(spread[k], w, "requests")) or float("nan") for k in keys]
            axes[1].plot(ns, rq, "o" + style, color=COLORS[w], label=f"{waiters.SHORT[w]}, {cells} cells")
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
        axes[2].bar([j + (i - (len(W) - 1) / 2) * width for j in range(len(cases))], ys, width, color=COLORS[w],
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
                 f"is a different but reproducible timeline; all the waiters wait concurrently on the same one).")
    lines += ["", "## Goals", "", "Each a median with [min-max]. A goal missed stays here as missed, with its cause "
              "(bench/goal_causes.json, written after looking at the run).", "",
              "| goal | measured | met | cause when missed |", "|---|---|---|---|"]
    why = causes()
    for gid, g, meas, ok in goals(results):
        met = "not measured" if ok is None else ("yes" if ok else "**no**")
        lines.append(f"| {g} | {meas} | {met} | {why.get(gid, 'not yet analysed') if ok is False else ''} |")
    lines += ["", "## Detection latency, false ready, API requests (spread workloads)", ""]
    lines += ["Latency = waiter process exit (reaped by the bench) minus the moment the create call of the last "
              "required slice returned (`time.time()`, same clock). Negative values cannot occur: such a return is "
              "counted as false ready instead (exit before that call was sent). Requests: "
              "`apiserver_flowcontrol_dispatched_requests_total` of the waiter's own FlowSchema (one ServiceAccount "
              "per waiter), see the cross-check below.", ""]
    lines += spread_table(results)
    lines += ["", "## Adversarial cases", ""]
    for k in timeline.KINDS[1:]:
        lines.append(f"- **{k}** ({timeline.REALISM[k]}): {timeline.DESCRIPTIONS[k]}.")
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
    lines += ["", "## Whole run (1 node, simulated driver)", "",
              "Twin 1-node clusters: install.yml on one, the hand-written playbook (bench/handwritten_install.yml: "
              "namespace with kubernetes.core.k8s, kubernetes.core.helm with wait, k8s_info until a slice per node, "
              "every 2 s) and then the shell sequence on the other; which twin goes first alternates.", ""]
    lines += whole_table(results)
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

"""Bad input (issue 6): every role variable and module option with a wrong type or value fails with
a message naming the variable (or option) and the value, and nothing is written to the API server.

All cases run in ONE ansible-playbook process (a block/rescue per case: the role's argument specs,
the validate module and whatever else fails), with a kubeconfig of its own (a ServiceAccount bound
to cluster-admin, token from the TokenRequest API), so the kube-apiserver audit log
(CLUSTER_AUDIT_LOG=true) can count every write that identity made: the goal is zero.

Nodes: they play no part (every case fails before a write); the 'driver' cluster's two real ones
(shared with the other reliability files).
"""
import json
import os

import pytest
import yaml

from ansible_run import run_playbook
from reliability_lib import FIGURES, NEEDS_REAL_NODES, AuditLog, capture, get_cluster, sa_kubeconfig

pytestmark = [pytest.mark.timeout(900), NEEDS_REAL_NODES]

# (id, role variables, substrings the failure message must contain): the variable with its value as
# the message quotes it (`dra_cpu_x: 'value'`), or Ansible's own argument-spec wording with the value
ROLE_CASES = [
    ("reserved_open_range", {"dra_cpu_reserved_cpus": "0-"}, ["dra_cpu_reserved_cpus: '0-'"]),
    ("reserved_descending", {"dra_cpu_reserved_cpus": "1-0"}, ["dra_cpu_reserved_cpus: '1-0'"]),
    ("reserved_letter", {"dra_cpu_reserved_cpus": "a"}, ["dra_cpu_reserved_cpus: 'a'"]),
    ("reserved_empty_item", {"dra_cpu_reserved_cpus": "0,,1"}, ["dra_cpu_reserved_cpus: '0,,1'"]),
    ("reserved_huge_range", {"dra_cpu_reserved_cpus": "0-99999999"}, ["dra_cpu_reserved_cpus: '0-99999999'"]),
    ("reserved_negative", {"dra_cpu_reserved_cpus": "-1"}, ["dra_cpu_reserved_cpus: '-1'"]),
    ("group_by_unknown", {"dra_cpu_group_by": "cell"}, ["dra_cpu_group_by: 'cell'"]),
    # a grouping the driver knows but that serves no KubeVirt claim (upstream prepares a machine-grouped
    # claim only with an opaque cpuset config an external scheduler adds): refused, saying why
    ("group_by_machine", {"dra_cpu_group_by": "machine"},
     ["dra_cpu_group_by: 'machine' cannot serve a KubeVirt claim", "is targeted by 0 configurations"]),
    ("chart_values_group_by_machine", {"dra_cpu_chart_values": {"driverConfig": {"groupBy": "machine"}}},
     ["dra_cpu_chart_values: driverConfig.groupBy: 'machine' cannot serve a KubeVirt claim"]),
    ("device_mode_unknown", {"dra_cpu_cpu_device_mode": "shared"},
     ["value of dra_cpu_cpu_device_mode must be one of", "got: shared"]),
    ("namespace_invalid", {"dra_cpu_namespace": "Bad_Name"}, ["dra_cpu_namespace: 'Bad_Name'"]),
    ("namespace_too_long", {"dra_cpu_namespace": "n" * 70}, ["dra_cpu_namespace: '%s'" % ("n" * 70)]),
    ("release_invalid", {"dra_cpu_release_name": "My.Release"}, ["dra_cpu_release_name: 'My.Release'"]),
    ("topology_timeout_zero", {"dra_cpu_topology_timeout": 0}, ["dra_cpu_topology_timeout: 0 is not positive"]),
    ("topology_timeout_negative", {"dra_cpu_topology_timeout": -5}, ["dra_cpu_topology_timeout: -5 is not positive"]),
    ("topology_timeout_text", {"dra_cpu_topology_timeout": "soon"},
     ["argument 'dra_cpu_topology_timeout'", '"\'soon\'" cannot be converted']),
    ("uninstall_timeout_negative", {"dra_cpu_uninstall_timeout": -1},
     ["dra_cpu_uninstall_timeout: -1 is not positive"]),
    ("helm_timeout_text", {"dra_cpu_helm_timeout": "forever"}, ["dra_cpu_helm_timeout: 'forever'"]),
    ("helm_timeout_zero", {"dra_cpu_helm_timeout": "0s"}, ["dra_cpu_helm_timeout: '0s'"]),
    ("chart_version_invalid", {"dra_cpu_chart_version": "latest!"}, ["dra_cpu_chart_version: 'latest!'"]),
    ("chart_scheme_invalid", {"dra_cpu_chart": "ftp://example.org/chart"},
     ["dra_cpu_chart: 'ftp://example.org/chart'"]),
    ("chart_unreachable", {"dra_cpu_chart": "oci://127.0.0.1:9/dra-driver-cpu/charts/dra-driver-cpu"},
     ["dra_cpu_chart 'oci://127.0.0.1:9/dra-driver-cpu/charts/dra-driver-cpu'"]),
    ("chart_version_missing", {"dra_cpu_chart_version": "9.9.9"}, ["dra_cpu_chart_version '9.9.9'"]),
    ("helm_version_invalid", {"dra_cpu_helm_version": "3.x"}, ["dra_cpu_helm_version: '3.x'"]),
    ("helm_mirror_http_not_allowed", {"dra_cpu_helm_mirror": "http://mirror.example.org",
                                      "dra_cpu_helm_mirror_allow_http": False},
     ["dra_cpu_helm_mirror: 'http://mirror.example.org'", "dra_cpu_helm_mirror_allow_http"]),
    ("helm_mirror_not_url", {"dra_cpu_helm_mirror": "mirror"}, ["dra_cpu_helm_mirror: 'mirror'"]),
    ("helm_binary_missing", {"dra_cpu_helm_binary": "/nonexistent/helm"}, ["dra_cpu_helm_binary: '/nonexistent/helm'"]),
    ("num_vcpu_text", {"dra_cpu_num_vcpu": "twelve"}, ["dra_cpu_num_vcpu: 'twelve'"]),
    ("num_numa_zero", {"dra_cpu_num_numa_nodes": 0, "dra_cpu_num_vcpu": 12},
     ["dra_cpu_num_numa_nodes: '0' is not positive"]),
    ("min_cell_cpus_negative", {"dra_cpu_min_cell_cpus": -1}, ["dra_cpu_min_cell_cpus: '-1' is negative"]),
    ("chart_values_not_dict", {"dra_cpu_chart_values": "replicas=3"}, ["dra_cpu_chart_values: 'replicas=3'"]),
    ("preflight_ignore_unknown", {"dra_cpu_preflight_ignore": ["no_such_check"]},
     ["dra_cpu_preflight_ignore: ['no_such_check']"]),
    ("state_unknown", {"dra_cpu_state": "gone"}, ["value of dra_cpu_state must be one of", "got: gone"]),
    ("enabled_not_bool", {"dra_cpu_enabled": "maybe"}, ["argument 'dra_cpu_enabled'", "The value 'maybe'"]),
    ("skip_nodes_not_bool", {"dra_cpu_skip_incompatible_nodes": "perhaps"},
     ["argument 'dra_cpu_skip_incompatible_nodes'", "The value 'perhaps'"]),
    ("kubeconfig_missing", {"dra_cpu_kubeconfig": "/nonexistent/kubeconfig"},
     ["dra_cpu_kubeconfig: '/nonexistent/kubeconfig'"]),
    ("context_unknown", {"dra_cpu_context": "no-such-context"}, ["dra_cpu_context: 'no-such-context'"]),
]

# (id, module, options, substrings): options of the modules themselves
MODULE_CASES = [
    ("topology_timeout_zero", "cpu_topology", {"timeout": 0}, ["timeout: 0 is not positive"]),
    ("topology_timeout_negative", "cpu_topology", {"timeout": -3}, ["timeout: -3 is not positive"]),
    ("topology_reserved_bad", "cpu_topology", {"reserved_cpus": "1-0"}, ["reserved_cpus: '1-0'"]),
    ("topology_log_lines_negative", "cpu_topology", {"log_lines": -1}, ["log_lines: -1 is negative"]),
    ("topology_expected_cpus_zero", "cpu_topology", {"expected_cpus_per_node": 0},
     ["expected_cpus_per_node: 0 is not positive"]),
    ("topology_timeout_text", "cpu_topology", {"timeout": "ten"},
     ["argument 'timeout'", '"\'ten\'" cannot be converted']),
    ("preflight_reserved_bad", "preflight", {"reserved_cpus": "0,,1"}, ["reserved_cpus: '0,,1'"]),
    ("preflight_ignore_unknown", "preflight", {"ignore": ["bogus"]},
     ["value of ignore must be one or more of", "Got no match for: bogus"]),
    ("preflight_min_version_bad", "preflight", {"min_version": "one.two"}, ["min_version: 'one.two'"]),
    # Ansible's own argument-spec message for a list of dicts does not repeat the value
    ("preflight_tolerations_bad", "preflight", {"tolerations": "all"},
     ["option 'tolerations' is of type str and we were unable to convert to dict"]),
    ("validate_group_by_bad", "validate", {"group_by": "rack"}, ["dra_cpu_group_by: 'rack'"]),
    ("validate_mode_bad", "validate", {"cpu_device_mode": "x"}, ["dra_cpu_cpu_device_mode: 'x'"]),
    ("validate_state_bad", "validate", {"state": "maybe"}, ["dra_cpu_state: 'maybe'"]),
]


@pytest.fixture(scope="module")
def bad_run(cluster_factory, tmp_path_factory):
    c = get_cluster(cluster_factory, "driver")
    kubeconfig, token, user = sa_kubeconfig(c, "rel-bad-input", cluster_role="cluster-admin")
    tmp = tmp_path_factory.mktemp("bad-input")
    base = {
        "dra_cpu_enabled": True,
        "dra_cpu_kubeconfig": kubeconfig,
        "dra_cpu_chart": c.chart,
        "dra_cpu_chart_plain_http": True,
        "dra_cpu_helm_mirror": c.env["CLUSTER_HELM_MIRROR"],
        "dra_cpu_helm_mirror_allow_http": True,
        "dra_cpu_helm_version": c.env["CLUSTER_HELM_VERSION"],
        "dra_cpu_helm_cache_dir": str(tmp / "helm-cache"),
        "dra_cpu_topology_timeout": 30,
        "dra_cpu_uninstall_timeout": 30,
    }
    tasks = []
    for case_id, variables, _ in ROLE_CASES:
        tasks.append(block(case_id, {"ansible.builtin.include_role": {"name": "kubevirtci.dra_cpu.dra_cpu"},
                                     "vars": variables}))
    for case_id, module, options, _ in MODULE_CASES:
        opts = dict(options)
        if module != "validate":
            opts.setdefault("kubeconfig", kubeconfig)
        tasks.append(block("module_" + case_id, {"kubevirtci.dra_cpu." + module: opts}))
    tasks.append({"name": "Report", "ansible.builtin.debug": {"var": "rel_results"}})
    play = [{"name": "bad input", "hosts": "localhost", "connection": "local", "gather_facts": False,
             "vars": base, "tasks": tasks}]
    path = tmp / "bad_input.yml"
    path.write_text(yaml.safe_dump(play, sort_keys=False))
    audit = AuditLog(c).mark()
    r = capture("bad input", run_playbook(None, str(path), env={"KUBECONFIG": kubeconfig}, timeout=800))
    writes = audit.writes(user=user)
    FIGURES["bad_inputs"] = len(ROLE_CASES) + len(MODULE_CASES)
    FIGURES["bad_input_writes"] = len(writes)
    return {"result": r, "results": r.fact("rel_results") or {}, "writes": writes, "cluster": c,
            "kubeconfig": kubeconfig, "user": user}


RESCUE = ("{{ rel_results | default({}) | combine({%s: "
          "(ansible_failed_result.msg | default('') | string) ~ ' ' ~ "
          "(ansible_failed_result.exception | default('') | string)}) }}")


def block(case_id, task):
    task = dict(task, name="CASE " + case_id)
    return {
        "name": "case " + case_id,
        "block": [task, {"name": "Record that " + case_id + " passed",
                         "ansible.builtin.set_fact": {
                             "rel_results": "{{ rel_results | default({}) | combine({%s: 'NO ERROR'}) }}"
                                            % json.dumps(case_id)}}],
        "rescue": [{"name": "Record the failure of " + case_id,
                    "ansible.builtin.set_fact": {"rel_results": RESCUE % json.dumps(case_id)}}],
    }


def test_all_cases_ran(bad_run):
    r = bad_run["result"]
    assert r.rc == 0, r
    assert len(ROLE_CASES) + len(MODULE_CASES) >= 25
    missing = [c[0] for c in ROLE_CASES if c[0] not in bad_run["results"]]
    missing += ["module_" + c[0] for c in MODULE_CASES if "module_" + c[0] not in bad_run["results"]]
    assert not missing, missing


@pytest.mark.parametrize("case_id,variables,expected", ROLE_CASES, ids=[c[0] for c in ROLE_CASES])
def test_role_variable(bad_run, case_id, variables, expected):
    msg = bad_run["results"].get(case_id, "")
    assert msg != "NO ERROR", f"{variables} was accepted"
    for text in expected:
        assert text in msg, f"{text!r} not in the message for {variables}: {msg}"
    assert "Traceback" not in msg, msg


@pytest.mark.parametrize("case_id,module,options,expected", MODULE_CASES, ids=[c[0] for c in MODULE_CASES])
def test_module_option(bad_run, case_id, module, options, expected):
    msg = bad_run["results"].get("module_" + case_id, "")
    assert msg != "NO ERROR", f"{module} {options} was accepted"
    for text in expected:
        assert text in msg, f"{text!r} not in the message for {module} {options}: {msg}"
    assert "Traceback" not in msg, msg


def test_no_write_reached_the_api_server(bad_run):
    assert bad_run["writes"] == [], bad_run["writes"]
    # the audit log does see this identity's writes (a positive control)
    from kubernetes import client, config
    cfg = client.Configuration()
    config.load_kube_config(config_file=bad_run["kubeconfig"], client_configuration=cfg)
    audit = AuditLog(bad_run["cluster"]).mark()
    core = client.CoreV1Api(client.ApiClient(cfg))
    core.create_namespaced_config_map("default", {"metadata": {"name": "rel-audit-control"}})
    core.delete_namespaced_config_map("rel-audit-control", "default")
    assert len(audit.writes(user=bad_run["user"])) == 2
    assert not os.path.exists(os.path.join(bad_run["cluster"].state_dir, "no-such-thing"))

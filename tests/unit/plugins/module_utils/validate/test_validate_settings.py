# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate import settings as i
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.checks import VARIABLES

GOOD = {
    "reserved_cpus": "0-1",
    "group_by": "",
    "cpu_device_mode": "grouped",
    "chart": "oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu",
    "chart_version": "0.3.0",
    "namespace": "dra-driver-cpu",
    "release_name": "dra-driver-cpu",
    "helm_timeout": "5m",
    "topology_timeout": 300,
    "uninstall_timeout": "120",
    "helm_version": "v3.16.4",
    "helm_mirror": "https://get.helm.sh/",
    "helm_mirror_allow_http": False,
    "num_vcpu": "12",
    "num_numa_nodes": "2",
    "chart_values": {"image": {"tag": "v0.3.0"}},
    "preflight_ignore": ["cpu_manager_policy"],
    "state": "present",
}


def run(**changes):
    params = dict(GOOD)
    params.update(changes)
    return i.validate_inputs(params)


def test_good_inputs_normalised():
    settings, errors = run()
    assert errors == []
    assert settings["reserved_cpus"] == "0-1"
    assert settings["reserved_cpu_list"] == [0, 1]
    assert settings["helm_timeout"] == "5m0s"
    assert settings["helm_timeout_seconds"] == 300
    assert settings["topology_timeout"] == 300
    assert settings["uninstall_timeout"] == 120
    assert settings["helm_mirror"] == "https://get.helm.sh"
    assert settings["num_vcpu"] == 12 and settings["num_numa_nodes"] == 2
    assert settings["chart_values"] == {"image": {"tag": "v0.3.0"}}
    # validate returns only what later stages read: the chart stage maps the values
    assert not set(settings) & {"values_key", "supports_node_affinity"}


@pytest.mark.parametrize("option,value,message", [
    ("reserved_cpus", "3-1",
     "dra_cpu_reserved_cpus: '3-1' is not a valid cpuset (range 3-1 is descending); expected a list like 0-1,4,6-7"),
    ("reserved_cpus", "0-",
     "dra_cpu_reserved_cpus: '0-' is not a valid cpuset (range '0-' has no end); expected a list like 0-1,4,6-7"),
    ("reserved_cpus", "a",
     "dra_cpu_reserved_cpus: 'a' is not a valid cpuset ('a' is not a CPU id or a range a-b); "
     "expected a list like 0-1,4,6-7"),
    ("reserved_cpus", "0-1,1",
     "dra_cpu_reserved_cpus: '0-1,1' is not a valid cpuset (CPU 1 listed more than once); "
     "expected a list like 0-1,4,6-7"),
    ("group_by", "numa",
     "dra_cpu_group_by: 'numa' is not a grouping; expected one of numanode, socket (dra_cpu_group_by or "
     "DRA_CPU_GROUP_BY), or empty for the chart default"),
    ("cpu_device_mode", "shared", "dra_cpu_cpu_device_mode: 'shared' is not a device mode; expected grouped or individual"),
    ("namespace", "Dra_Driver",
     "dra_cpu_namespace: 'Dra_Driver' is not a DNS-1123 label; expected lower-case letters, digits and '-', "
     "starting and ending with a letter or digit, at most 63 characters"),
    ("release_name", "r" * 54,
     "dra_cpu_release_name: '%s' is longer than 53 characters; expected lower-case letters, digits and '-', "
     "starting and ending with a letter or digit, at most 53 characters" % ("r" * 54)),
    ("chart", "ftp://x/y",
     "dra_cpu_chart: 'ftp://x/y' uses an unsupported scheme; expected oci://<registry>/<path>, "
     "an http(s) chart repository URL, or a local path"),
    ("chart", "oci://", None),
    ("chart", "", None),
    ("chart_version", "v0.3", "dra_cpu_chart_version: 'v0.3' is not a semantic version; "
                              "expected a chart version like 0.3.0, or empty for the newest"),
    ("helm_timeout", "0", "dra_cpu_helm_timeout: '0' is not positive; expected a positive number of seconds "
                          "or a Go duration like 5m or 1h30m"),
    ("helm_timeout", "5 minutes", None),
    ("topology_timeout", -5, "dra_cpu_topology_timeout: -5 is not positive; expected a positive number of seconds"),
    ("uninstall_timeout", "soon", None),
    ("helm_version", "3.16", "dra_cpu_helm_version: '3.16' is not a helm release; expected a version like v3.16.4"),
    ("helm_mirror", "http://127.0.0.1:8080",
     "dra_cpu_helm_mirror: 'http://127.0.0.1:8080' uses plain http; expected an https URL, "
     "or set dra_cpu_helm_mirror_allow_http: true"),
    ("helm_mirror", "get.helm.sh", None),
    ("num_vcpu", "0", None),
    ("num_vcpu", "13", "dra_cpu_num_vcpu: '13' cannot be split evenly over 2 NUMA nodes (dra_cpu_num_numa_nodes); "
                       "expected a multiple of 2"),
    ("num_numa_nodes", "two", None),
    ("chart_values", ["a"], "dra_cpu_chart_values: ['a'] is not a mapping; expected a dict of helm values"),
    ("preflight_ignore", ["cpu_manager"], None),
    ("state", "gone", "dra_cpu_state: 'gone' is not a state; expected present or absent"),
])
def test_each_error_names_variable_and_value(option, value, message):
    _settings, errors = run(**{option: value})
    assert len(errors) == 1, errors
    assert errors[0].startswith(VARIABLES[option] + ": ")
    if message is not None:
        assert errors[0] == message


def test_all_errors_collected():
    _s, errors = run(reserved_cpus="3-1", group_by="x", namespace="A", helm_timeout="-1", state="x")
    assert [e.split(":")[0] for e in errors] == [
        "dra_cpu_reserved_cpus", "dra_cpu_group_by", "dra_cpu_namespace", "dra_cpu_helm_timeout", "dra_cpu_state"]


@pytest.mark.parametrize("chart", [
    "oci://127.0.0.1:5000/dra-driver-cpu/charts/dra-driver-cpu",
    "oci://registry.k8s.io/dra-driver-cpu/charts/dra-driver-cpu",
    "https://charts.example.com/dra-driver-cpu-0.3.0.tgz",
    "http://127.0.0.1:8080/charts",
    "./tests/fixtures/charts/dra-driver-cpu/0.3.0",
    "/abs/path/chart",
    "repo/dra-driver-cpu",
])
def test_chart_refs_accepted(chart):
    assert i.validate_chart(chart) == ""


@pytest.mark.parametrize("value,seconds,text", [
    ("5m", 300, "5m0s"), (300, 300, "5m0s"), ("90", 90, "1m30s"), ("1h30m", 5400, "1h30m0s"),
    ("45s", 45, "45s"), ("2m30s", 150, "2m30s"), ("1500ms", None, None),
])
def test_durations(value, seconds, text):
    if seconds is None:
        with pytest.raises(ValueError):
            i.parse_duration(value)
        return
    assert i.parse_duration(value) == seconds
    assert i.format_duration(seconds) == text


def test_reserved_cpus_against_num_vcpu():
    _s, errors = run(reserved_cpus="0-1,12")
    assert errors == ["dra_cpu_reserved_cpus: '0-1,12' names CPUs 12 that a 12-vCPU node does not have "
                      "(dra_cpu_num_vcpu); expected CPU ids between 0 and 11"]
    _s, errors = run(reserved_cpus="0-11")
    assert errors[0].startswith("dra_cpu_reserved_cpus: '0-11' reserves all 12 vCPUs")


def test_optional_blanks():
    settings, errors = i.validate_inputs({"num_vcpu": "", "num_numa_nodes": None, "reserved_cpus": "",
                                          "preflight_ignore": "feature_gate, eligible_nodes",
                                          "helm_version": "3.17.0", "helm_mirror": "http://127.0.0.1:1",
                                          "helm_mirror_allow_http": True})
    assert errors == []
    assert settings["num_vcpu"] is None
    assert settings["reserved_cpus"] == ""
    assert settings["preflight_ignore"] == ["feature_gate", "eligible_nodes"]
    assert settings["helm_version"] == "v3.17.0"
    assert settings["cpu_device_mode"] == "grouped"
    assert settings["state"] == "present"


def test_group_by_lower_cased():
    settings, errors = run(chart_version="0.2.0", group_by="Socket")
    assert errors == []
    assert settings["group_by"] == "socket" and settings["chart_version"] == "0.2.0"


MACHINE_REFUSED = (
    "cannot serve a KubeVirt claim: upstream dra-driver-cpu (v0.2.0 and main) prepares a claim on the "
    "machine-wide device only with an opaque cpuset configuration per request, which an external scheduler "
    "adds (upstream docs/user/configuration.md), so the kubelet fails a KubeVirt VM's claim at "
    "NodePrepareResources ('opaque config: request \"<request>\" is targeted by 0 configurations, must "
    "be targeted by exactly 1') and the pod never starts")


@pytest.mark.parametrize("value", ["machine", "Machine", " MACHINE "])
def test_machine_grouping_is_refused_naming_the_variable_the_value_and_why(value):
    """dra_cpu_group_by (or DRA_CPU_GROUP_BY, which arrives the same way) machine: one error, whatever the
    case, naming the variable, the value as given and upstream's reason, and what is accepted."""
    _settings, errors = run(group_by=value)
    assert errors == ["dra_cpu_group_by: '%s' %s; expected one of numanode, socket (dra_cpu_group_by or "
                      "DRA_CPU_GROUP_BY), or empty for the chart default" % (value, MACHINE_REFUSED)]


@pytest.mark.parametrize("mode", ["grouped", "individual"])
def test_machine_grouping_is_refused_in_either_device_mode(mode):
    _settings, errors = run(group_by="machine", cpu_device_mode=mode)
    assert len(errors) == 1 and errors[0].startswith("dra_cpu_group_by: 'machine' cannot serve a KubeVirt claim")


@pytest.mark.parametrize("value", ["numanode", "socket", "NUMANODE", "Socket", ""])
def test_numanode_and_socket_keep_working(value):
    settings, errors = run(group_by=value)
    assert errors == [] and settings["group_by"] == value.strip().lower()


def test_machine_grouping_through_chart_values_is_refused():
    """A groupBy in dra_cpu_chart_values is merged last and would win: refused the same way, naming the key."""
    _settings, errors = run(chart_values={"driverConfig": {"groupBy": "machine"}})
    assert errors == ["dra_cpu_chart_values: driverConfig.groupBy: 'machine' %s; expected a groupBy of numanode "
                      "or socket, or none" % MACHINE_REFUSED]
    _settings, errors = run(chart_version="0.2.0", chart_values={"args": {"groupBy": "Machine"}})
    assert len(errors) == 1 and errors[0].startswith("dra_cpu_chart_values: args.groupBy: 'Machine' cannot serve")
    # the deprecated args key wins over driverConfig (0.3.0): numanode there is what the driver gets
    _settings, errors = run(chart_values={"args": {"groupBy": "numanode"}, "driverConfig": {"groupBy": "machine"}})
    assert errors == []


def test_uninstalling_a_machine_grouped_release_is_not_refused():
    settings, errors = run(group_by="machine", state="absent")
    assert errors == [] and settings["group_by"] == "machine"


@pytest.mark.parametrize("value,message", [
    (-1, "dra_cpu_min_cell_cpus: -1 is negative"),
    ("four", "dra_cpu_min_cell_cpus: 'four' is not a whole number"),
])
def test_min_cell_cpus(value, message):
    dummy, errors = run(min_cell_cpus=value)
    assert any(message in e for e in errors), errors
    settings, errors = run(min_cell_cpus=0)
    assert not errors and settings["min_cell_cpus"] == 0


def test_kubeconfig_and_context(tmp_path, monkeypatch):
    kc = tmp_path / "kubeconfig"
    kc.write_text("apiVersion: v1\nkind: Config\ncontexts:\n- name: one\n  context: {}\n"
                  "users:\n- name: u\n  user: {token: s3cr3t-token-value}\n")
    dummy, errors = run(kubeconfig=str(tmp_path / "missing"))
    assert errors == ["dra_cpu_kubeconfig: '%s' does not exist or is not a file; expected the path of a kubeconfig "
                      "file, or empty for K8S_AUTH_KUBECONFIG/KUBECONFIG/~/.kube/config" % (tmp_path / "missing")]
    dummy, errors = run(kubeconfig=str(kc), context="two")
    assert len(errors) == 1 and errors[0].startswith("dra_cpu_context: 'two' is not a context of ")
    assert "one" in errors[0] and "s3cr3t" not in errors[0]
    dummy, errors = run(kubeconfig=str(kc), context="one")
    assert not errors
    monkeypatch.setenv("KUBECONFIG", str(kc))
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    dummy, errors = run(context="nope")
    assert errors and "dra_cpu_context: 'nope'" in errors[0]
    bad = tmp_path / "bad"
    bad.write_text("token: s3cr3t: [unbalanced\n")
    dummy, errors = run(kubeconfig=str(bad))
    assert errors and "s3cr3t" not in errors[0]


def test_helm_binary(tmp_path, monkeypatch):
    settings, errors = run(helm_binary="")
    assert errors == [] and settings["helm_binary"] == ""
    helm = tmp_path / "helm"
    helm.write_text("#!/bin/sh\n")
    helm.chmod(0o644)
    settings, errors = run(helm_binary=str(helm))
    assert errors == ["dra_cpu_helm_binary: '%s' is not an executable file; expected the path of a helm v3 >= 3.13 "
                      "binary, or empty to use helm from PATH or download v3.16.4" % helm]
    helm.chmod(0o755)
    monkeypatch.setenv("HOME", str(tmp_path))
    settings, errors = run(helm_binary="~/helm")
    assert errors == [] and settings["helm_binary"] == str(helm)
    settings, errors = run(helm_binary=str(tmp_path))
    assert errors and errors[0].startswith("dra_cpu_helm_binary: '%s' is not an executable file" % tmp_path)


def test_report_dir(tmp_path, monkeypatch):
    settings, errors = run(report_dir="")
    assert errors == [] and settings["report_dir"] == ""
    monkeypatch.setenv("HOME", str(tmp_path))
    settings, errors = run(report_dir="~/artifacts/ ")
    assert errors == [] and settings["report_dir"] == str(tmp_path / "artifacts")
    afile = tmp_path / "afile"
    afile.write_text("x")
    settings, errors = run(report_dir=str(afile))
    assert errors == ["dra_cpu_report_dir: '%s' exists and is not a directory; expected a directory for the "
                      "run's reports (made when missing), or empty for none" % afile]

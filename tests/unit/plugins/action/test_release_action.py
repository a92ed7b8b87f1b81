# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.action import release as action
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import installed

PSA = {"pod-security.kubernetes.io/enforce": "privileged"}
OWNER = {"app.kubernetes.io/managed-by": "kubevirtci.dra_cpu"}
VALUES = {"driverConfig": {"reservedCPUs": "0-1"}}
CHART = {"release_values": VALUES, "version": "0.3.0", "image": "reg/dra:v0.3.0",
         "report": ["chart 0.3.0 (values onto driverConfig.*)"]}


def installed_state(status="deployed", version="0.3.0", values=None, labels=None, exists=True, terminating=False):
    ns = {"name": "dra", "exists": exists, "terminating": terminating, "labels": dict(PSA if labels is None else labels),
          "labels_ok": exists and not terminating and (labels is None)}
    release = {} if status is None else {
        "name": "dra", "revision": 1, "status": status, "chart": "dra-driver-cpu", "chart_version": version,
        "values_sha256": installed.values_digest(VALUES if values is None else values)}
    return {"readable": True, "namespace": ns, "release": release}


def args(**kw):
    base = dict(release_name="dra", namespace="dra", chart_ref="oci://x", chart_version="0.3.0", chart=CHART,
                installed=installed_state(), namespace_labels=PSA, owner_label=OWNER,
                helm={"path": "/h/helm", "cmd": "/h/helm", "missing": False}, kubeconfig="/k/config")
    base.update(kw)
    return base


class Fake(object):
    """A fake _execute_module: answers per module name, records the calls."""

    def __init__(self, answers=None):
        self.answers = answers or {}
        self.calls = []

    def __call__(self, module_name, module_args, task_vars):
        self.calls.append((module_name, module_args))
        answer = self.answers.get(module_name, {"changed": True})
        return answer(module_args) if callable(answer) else dict(answer)

    def names(self):
        return [call[0] for call in self.calls]


def run(task_args, fake=None, check=False):
    fake = fake or Fake()
    task = mock.Mock(args=task_args, async_val=0, check_mode=check, diff=False)
    plugin = action.ActionModule(task, mock.Mock(transport="local"), mock.Mock(), loader=None, templar=None,
                                 shared_loader_obj=None)
    with mock.patch.object(action.ActionBase, "run", return_value={}), \
            mock.patch.object(plugin, "_execute_module", side_effect=fake):
        return plugin.run(task_vars={}), fake


def test_noop_starts_no_module_and_reports_unchanged():
    result, fake = run(args())
    assert fake.calls == [] and result["modules"] == []
    assert result["changed"] is False and result["action"] == "unchanged" and result["revision"] == 1
    assert result["report"][0] == "release dra (namespace dra): unchanged, revision 1"
    # the chart stage's line with the image joined onto it: one line for what is installed
    assert result["report"][1] == "chart 0.3.0 (values onto driverConfig.*), image (the chart's default): reg/dra:v0.3.0"
    assert len(result["report"]) == 2
    assert result["values"] == VALUES and not result.get("failed")


def test_noop_in_check_mode_is_unchanged_too():
    result, fake = run(args(), check=True)
    assert fake.calls == [] and result["changed"] is False and result["action"] == "unchanged"


def test_first_install_creates_the_namespace_with_the_owner_label_then_installs():
    fake = Fake({"kubernetes.core.helm": {"changed": True, "status": {"revision": "1"}}})
    result, fake = run(args(installed=installed_state(status=None, exists=False), kubeconfig="/k/config",
                            context="ctx", plain_http=True), fake)
    assert fake.names() == ["kubernetes.core.k8s", "kubernetes.core.helm"]
    k8s, helm = fake.calls[0][1], fake.calls[1][1]
    assert k8s["definition"]["metadata"]["labels"] == dict(PSA, **OWNER)
    assert k8s["kubeconfig"] == "/k/config" and k8s["context"] == "ctx" and "binary_path" not in k8s
    assert helm["binary_path"] == "/h/helm" and helm["kubeconfig"] == "/k/config" and helm["plain_http"] is True
    assert helm["release_values"] == VALUES and helm["wait"] is True and helm["chart_version"] == "0.3.0"
    assert helm["create_namespace"] is False and helm["release_state"] == "present"
    assert result["action"] == "installed" and result["revision"] == 1 and result["changed"] is True
    assert result["report"][0].startswith("namespace dra: created with ")


def test_check_mode_first_install_writes_nothing_and_says_so():
    result, fake = run(args(installed=installed_state(status=None, exists=False)), check=True)
    assert fake.calls == []
    assert result["action"] == "would install" and result["changed"] is True
    assert any("would create" in line for line in result["report"])


def test_changed_values_upgrade_with_node_affinity_merged():
    affinity = {"nodeAffinity": {"x": 1}}
    fake = Fake({"kubernetes.core.helm": {"changed": True, "status": {"revision": 2}}})
    result, fake = run(args(node_affinity=affinity), fake)
    assert fake.names() == ["kubernetes.core.helm"]
    assert fake.calls[0][1]["release_values"] == dict(VALUES, affinity=affinity)
    assert result["action"] == "upgraded" and result["revision"] == 2


def test_check_mode_upgrade_asks_helm_and_helm_may_say_unchanged():
    fake = Fake({"kubernetes.core.helm": {"changed": False}})
    result, fake = run(args(installed=installed_state(version="0.2.0")), fake, check=True)
    assert fake.names() == ["kubernetes.core.helm"]
    assert result["action"] == "unchanged" and result["changed"] is False
    fake = Fake({"kubernetes.core.helm": {"changed": True}})
    result, unused = run(args(installed=installed_state(version="0.2.0")), fake, check=True)
    assert result["action"] == "would upgrade" and result["changed"] is True


def test_relabel_only_when_a_label_is_missing_and_without_the_owner_label():
    result, fake = run(args(installed=installed_state(labels={"pod-security.kubernetes.io/enforce": "baseline"})),
                       Fake({"kubernetes.core.k8s": {"changed": True}}))
    assert fake.names() == ["kubernetes.core.k8s"]
    assert fake.calls[0][1]["definition"]["metadata"]["labels"] == PSA
    assert result["changed"] is True and result["action"] == "unchanged"


@pytest.mark.parametrize("status, command", [("pending-install", "helm uninstall dra -n dra"),
                                             ("pending-upgrade", "helm rollback dra -n dra --wait")])
def test_pending_without_recover_fails_with_the_way_out(status, command):
    result, fake = run(args(installed=installed_state(status=status)))
    assert fake.calls == [] and result["failed"] is True
    assert "stuck in '%s'" % status in result["msg"] and command in result["msg"]
    assert "dra_cpu_helm_recover=true" in result["msg"]


def test_pending_install_is_uninstalled_then_installed():
    result, fake = run(args(installed=installed_state(status="pending-install"), recover=True),
                       Fake({"kubernetes.core.helm": lambda a: {"changed": True, "status": {"revision": 1}}}))
    assert fake.names() == ["kubernetes.core.helm", "kubernetes.core.helm"]
    assert fake.calls[0][1]["release_state"] == "absent" and fake.calls[1][1]["release_state"] == "present"
    assert result["action"] == "recovered (uninstall) + installed"


def test_pending_upgrade_is_rolled_back_with_the_helm_command_then_upgraded():
    result, fake = run(args(installed=installed_state(status="pending-upgrade"), recover=True, context="ctx",
                            timeout="2m0s"),
                       Fake({"kubernetes.core.helm": {"changed": False}, "ansible.builtin.command": {"rc": 0}}))
    assert fake.names() == ["ansible.builtin.command", "kubernetes.core.helm"]
    assert fake.calls[0][1]["argv"] == ["/h/helm", "rollback", "dra", "--namespace", "dra", "--wait", "--timeout",
                                        "2m0s", "--kubeconfig", "/k/config", "--kube-context", "ctx"]
    assert result["action"] == "recovered (rollback) + unchanged" and result["changed"] is True


def test_pending_in_check_mode_with_recover_writes_nothing():
    result, fake = run(args(installed=installed_state(status="pending-install"), recover=True), check=True)
    assert fake.calls == [] and result["action"] == "would recover (uninstall) + would install"


def test_helm_errors_fail_with_helms_message():
    fake = Fake({"kubernetes.core.helm": {"failed": True, "msg": "Failure when executing Helm command",
                                          "stderr": "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress"}})
    result, unused = run(args(installed=installed_state(version="0.2.0")), fake)
    assert result["failed"] is True and "another operation" in result["stderr"]
    assert result["msg"] == "Failure when executing Helm command"


@pytest.mark.parametrize("given", [{}, {"readable": False, "error": "forbidden: secrets"}])
def test_what_is_installed_is_preflights_reading_only(given):
    result, fake = run(args(installed=given))
    assert fake.calls == [] and result["failed"] is True
    assert result["msg"].startswith("cannot tell what is installed in namespace dra: ")
    assert ("forbidden: secrets" if given else "preflight's result") in result["msg"]


def test_terminating_namespace_is_waited_for(monkeypatch):
    monkeypatch.setattr(action.time, "sleep", lambda s: None)
    answers = iter([{"resources": [{"metadata": {"deletionTimestamp": "x"}}]}, {"resources": []}])
    fake = Fake({"kubernetes.core.k8s_info": lambda a: next(answers),
                 "kubernetes.core.helm": {"changed": True, "status": {"revision": 1}}})
    result, fake = run(args(installed=installed_state(terminating=True)), fake)
    assert fake.names() == ["kubernetes.core.k8s_info", "kubernetes.core.k8s_info", "kubernetes.core.k8s",
                            "kubernetes.core.helm"]
    assert fake.calls[2][1]["definition"]["metadata"]["labels"] == dict(PSA, **OWNER)
    assert result["action"] == "installed" and result["plan"]["namespace"]["wait"] is True


def test_helm_missing_in_check_mode_compares_nothing():
    result, fake = run(args(helm={"missing": True}, installed=installed_state(status=None, exists=False)), check=True)
    assert fake.calls == [] and result["action"] == "would install or upgrade"
    assert "helm is not available yet" in result["report"][1]


def test_bad_options_fail():
    result, unused = run({"namespace": "dra"})
    assert result["failed"] is True and "release_name" in result["msg"]


# ---------------------------------------------------------------- state: absent (plugin_utils/uninstall.py)

def absent(**kw):
    base = dict(state="absent", release_name="dra", namespace="dra", owner_label=OWNER, uninstall_timeout=30,
                helm={"path": "/h/helm", "cmd": "/h/helm", "missing": False}, kubeconfig="/k/config",
                installed=dict(installed_state(labels=dict(PSA, **OWNER)), other_releases=[]))
    base.update(kw)
    return base


def slices_gone_after(polls):
    """A k8s_info answer: the driver's slices are there for ``polls`` reads, then gone."""
    seen = []

    def answer(module_args):
        if module_args.get("kind") != "ResourceSlice":
            return {"resources": []}
        seen.append(1)
        return {"resources": [{"spec": {"nodeName": "node01"}}] if len(seen) <= polls else []}
    return answer


def test_uninstall_removes_the_release_waits_for_the_slices_then_deletes_its_namespace(monkeypatch):
    monkeypatch.setattr("ansible_collections.kubevirtci.dra_cpu.plugins.plugin_utils.uninstall.time.sleep",
                        lambda s: None)
    fake = Fake({"kubernetes.core.helm": {"changed": True}, "kubernetes.core.k8s_info": slices_gone_after(2),
                 "kubernetes.core.k8s": {"changed": True}})
    result, fake = run(absent(), fake)
    assert fake.names() == ["kubernetes.core.helm"] + ["kubernetes.core.k8s_info"] * 3 + ["kubernetes.core.k8s"]
    helm, info, k8s = fake.calls[0][1], fake.calls[1][1], fake.calls[-1][1]
    assert helm["release_state"] == "absent" and helm["wait"] is True and helm["timeout"] == "30s"
    assert helm["binary_path"] == "/h/helm" and helm["release_name"] == "dra" and helm["release_namespace"] == "dra"
    # the slices are only read, by the driver's name
    assert info["field_selectors"] == ["spec.driver=dra.cpu"] and info["kind"] == "ResourceSlice"
    assert k8s == dict(kubeconfig="/k/config", api_version="v1", kind="Namespace", name="dra", state="absent",
                       wait=True, wait_timeout=30)
    assert result["changed"] is True and not result.get("failed")
    assert result["report"] == ["release dra (namespace dra): uninstalled, the driver's ResourceSlices gone",
                                "namespace dra: deleted (created by this collection)"]


def test_uninstall_keeps_a_namespace_it_did_not_create_or_that_holds_another_release():
    fake = Fake({"kubernetes.core.helm": {"changed": True}, "kubernetes.core.k8s_info": {"resources": []}})
    result, fake = run(absent(installed=dict(installed_state(), other_releases=[])), fake)
    assert "kubernetes.core.k8s" not in fake.names()
    assert result["report"][1].startswith("namespace dra: left in place, not created by this collection")
    result, fake = run(absent(installed=dict(installed_state(labels=dict(PSA, **OWNER)), other_releases=["x"])),
                       Fake({"kubernetes.core.helm": {"changed": True}, "kubernetes.core.k8s_info": {"resources": []}}))
    assert "kubernetes.core.k8s" not in fake.names()
    assert result["report"][1].endswith("it also holds helm release(s) x")


def test_uninstall_of_nothing_starts_no_module():
    result, fake = run(absent(installed={"readable": True, "namespace": {"name": "dra", "exists": False},
                                         "release": {}, "other_releases": []}))
    assert fake.calls == [] and result["changed"] is False
    assert result["report"] == ["release dra (namespace dra): not installed", "namespace dra: not there"]


def test_uninstall_in_check_mode_writes_nothing_and_says_what_it_would_remove():
    result, fake = run(absent(), check=True)
    assert fake.calls == [] and result["changed"] is True
    assert result["report"] == ["release dra (namespace dra): would uninstall revision 1",
                                "namespace dra: would delete it (created by this collection)"]


def test_uninstall_fails_naming_the_nodes_whose_slices_outlive_the_driver(monkeypatch):
    monkeypatch.setattr("ansible_collections.kubevirtci.dra_cpu.plugins.plugin_utils.uninstall.time.sleep",
                        lambda s: None)
    fake = Fake({"kubernetes.core.helm": {"changed": True}, "kubernetes.core.k8s_info": slices_gone_after(10 ** 6)})
    result, fake = run(absent(uninstall_timeout=0), fake)
    assert result["failed"] is True and "kubernetes.core.k8s" not in fake.names()
    assert result["msg"].startswith("1 ResourceSlice(s) of driver dra.cpu are still there 0s after the release "
                                    "was removed, on node(s) node01.")


@pytest.mark.parametrize("installed, why", [
    ({}, "no `installed` given (preflight's result)"),
    ({"readable": False, "error": "secrets is forbidden"}, "secrets is forbidden")])
def test_uninstall_acts_on_preflights_reading_only(installed, why):
    """No second reader: without preflight's ``installed`` the uninstall fails as an install does,
    naming preflight's error, and starts no module (it reads nothing itself)."""
    result, fake = run(absent(installed=installed), Fake({"kubernetes.core.helm": {"changed": True}}))
    assert fake.calls == [] and result["failed"] is True
    assert result["msg"] == "cannot tell what is installed in namespace dra: %s" % why
    present = run(args(installed=installed))[0]
    assert present["failed"] is True and present["msg"] == result["msg"]


def test_uninstall_of_a_release_helm_no_longer_has_says_not_installed():
    # preflight saw revision 1, helm removed nothing (gone meanwhile): no wait for slices
    fake = Fake({"kubernetes.core.helm": {"changed": False}, "kubernetes.core.k8s": {"changed": True}})
    result, fake = run(absent(), fake)
    assert fake.names() == ["kubernetes.core.helm", "kubernetes.core.k8s"]
    assert result["report"][0] == "release dra (namespace dra): not installed"


def test_present_still_needs_the_chart():
    result = run(args(chart={}))[0]
    assert result["failed"] is True and "chart_ref and chart" in result["msg"]


def test_a_namespace_that_stays_terminating_fails_after_its_wait(monkeypatch):
    from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import Clock
    clock = Clock()
    monkeypatch.setattr(action.time, "monotonic", clock)
    monkeypatch.setattr(action.time, "sleep", clock.sleep)
    fake = Fake({"kubernetes.core.k8s_info": {"resources": [{"metadata": {"deletionTimestamp": "x"}}]}})
    result, fake = run(args(installed=installed_state(terminating=True), namespace_wait_seconds=10), fake)
    assert result["failed"] is True and result["msg"].startswith("namespace dra is still being deleted after 10 s")
    # read every 3 s: at 0, 3, 6, 9 and at the deadline
    assert fake.names() == ["kubernetes.core.k8s_info"] * 5 and clock.now == 10

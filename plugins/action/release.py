# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Action plugin for kubevirtci.dra_cpu.release: the role's release stage in one task, install or
upgrade (``state: present``) or uninstall (``state: absent``: plugin_utils/uninstall.py). The plan is
module_utils/release/plan.py (pure), made from what preflight read of what is installed (its
``installed``, the one reader) and the chart stage's result; only what the plan needs starts a module
(kubernetes.core.k8s, kubernetes.core.helm, ansible.builtin.command for ``helm rollback``), so a no-op
run starts none. docs/what-a-run-does.md tells the steps.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.chart.types import ChartValues
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject, ModuleParams
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.wait import poll_until
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import installed as inst
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight.types import (
    Installed,
    NamespaceState,
    ReleaseState,
)
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release import plan as release_plan
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release.plan import ReleasePlan
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release.spec import HELM_AUTH_OPTIONS, argument_spec
from ansible_collections.kubevirtci.dra_cpu.plugins.plugin_utils.uninstall import UninstallSteps

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
except ImportError:  # pragma: no cover - kubernetes.core is a dependency of the collection
    AUTH_ARG_SPEC = {}

K8S_INFO = "kubernetes.core.k8s_info"
K8S = "kubernetes.core.k8s"
HELM = "kubernetes.core.helm"
COMMAND = "ansible.builtin.command"
NO_HELM = ("check mode: helm is not available yet, so nothing was compared; a real run would install or "
           "upgrade")
POLL_SECONDS = 3


class StageFailed(Exception):
    def __init__(self, msg: str, result: Mapping[str, Any] | None = None) -> None:
        super(StageFailed, self).__init__(msg)
        self.msg = msg
        self.result = result or {}


def image_line(chart: Mapping[str, Any], image: str, chart_values: ChartValues) -> tuple[str, str]:
    source = ("dra_cpu_image" if image
              else ("dra_cpu_chart_values" if (chart_values or {}).get("image") else "the chart's default"))
    shown = chart.get("image") or image or "the chart's default (not read: no helm in check mode)"
    return shown, source


def image_report(image: str, source: str) -> str:
    """``image (<where it comes from>): <image>``, the image last (no blanks: not folded)."""
    return "image (%s): %s" % (source, image)


def chart_and_image(chart_lines: list[str], image: str, source: str) -> list[str]:
    """The chart stage's lines with the image joined onto the first (``chart 0.3.0 (values onto
    driverConfig.*), image (...): <image>``): one line for what is installed."""
    if not chart_lines:
        return [image_report(image, source)]
    return ["%s, %s" % (chart_lines[0], image_report(image, source))] + chart_lines[1:]


def label_report(labels: Mapping[str, str], params: ModuleParams) -> str:
    """The labels set on the namespace, in words: the Pod Security ones and the owner label."""
    psa = params.get("namespace_labels") or {}
    owner = params.get("owner_label") or {}
    words = []
    if any(k in psa for k in labels):
        words.append("the Pod Security labels (%s)" % ", ".join(sorted(set(psa[k] for k in labels if k in psa))))
    if any(k in owner for k in labels):
        words.append("the owner label")
    other = sorted(k for k in labels if k not in psa and k not in owner)
    return " and ".join(words + other) or "no labels"


def installed_now(p: ModuleParams) -> Installed:
    """Preflight's ``installed``, the one reader of what is installed (to install and to uninstall);
    StageFailed when it could not read it or was not given."""
    installed: Installed = p["installed"] or {}
    if not installed.get("readable") or installed.get("namespace") is None:
        raise StageFailed("cannot tell what is installed in namespace %s: %s" % (
            p["namespace"], installed.get("error") or "no `installed` given (preflight's result)"))
    return installed


@dataclass
class _Run:
    """What the steps of one present run share: the options, the cluster options, the plan and the
    report lines gathered so far."""

    p: ModuleParams
    check: bool
    auth: ModuleParams
    helm_auth: ModuleParams
    task_vars: Mapping[str, Any] | None
    plan: ReleasePlan
    want_version: str
    chart_lines: list[str]
    lines: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return str(self.p["release_name"])

    @property
    def ns(self) -> str:
        return str(self.p["namespace"])

    def report(self, action: str, revision: int | None) -> list[str]:
        """The lines so far, the release's line (short enough not to be folded; the chart's version
        is on its line), then the chart and image line."""
        version = self.want_version or self.plan["release"]["chart_version"] or "newest"
        head = "release %s (namespace %s): %s%s" % (
            self.name, self.ns, action, ", revision %s" % revision if revision is not None else ", chart %s" % version)
        return self.lines + [head] + self.chart_lines


class ActionModule(UninstallSteps, ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def _module(self, name: str, args: ModuleParams, task_vars: Mapping[str, Any] | None) -> dict[str, Any]:
        self._started.append(name)
        return self._execute_module(module_name=name, module_args=args, task_vars=task_vars)

    @staticmethod
    def _fail(msg: str) -> NoReturn:
        raise StageFailed(msg)

    def _checked(self, name: str, args: ModuleParams, task_vars: Mapping[str, Any] | None, what: str) -> dict[str, Any]:
        result = self._module(name, args, task_vars)
        if result.get("failed"):
            raise StageFailed("%s: %s" % (what, result.get("msg") or "%s failed" % name), result)
        return result

    def run(self, tmp: str | None = None, task_vars: Mapping[str, Any] | None = None) -> dict[str, Any]:
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        checked = ArgumentSpecValidator(argument_spec(AUTH_ARG_SPEC)).validate(dict(self._task.args or {}))
        if checked.error_messages:
            result.update(failed=True, msg="; ".join(checked.error_messages))
            return result
        self._started: list[str] = []
        try:
            result.update(self._release(checked.validated_parameters, task_vars or {}))
        except StageFailed as exc:
            result.update(failed=True, msg=exc.msg, modules=list(self._started))
            for key in ("stderr", "stdout", "command", "plan", "report"):
                if key in exc.result:
                    result[key] = exc.result[key]
        return result

    # ------------------------------------------------------------------ the stage

    def _release(self, p: ModuleParams, task_vars: Mapping[str, Any] | None) -> dict[str, Any]:
        auth, helm_auth = self._auth(p, dict(self._task.args or {}))
        if p["state"] == "absent":
            return self._done(self._uninstall(p, installed_now(p), auth, helm_auth, task_vars))
        if not p["chart_ref"] or not p["chart"]:
            raise StageFailed("state=present needs chart_ref and chart (the chart stage's result)")
        installed = installed_now(p)
        ns_state: NamespaceState = installed["namespace"]
        release: ReleaseState = installed.get("release") or ReleaseState()
        chart = p["chart"]
        values = release_plan.release_values(chart.get("release_values"), p["node_affinity"])
        want_version = str(chart.get("version") or p["chart_version"] or "")
        plan = release_plan.plan(ns_state, release, {
            "name": p["release_name"], "namespace": p["namespace"], "chart_version": want_version,
            "values": values, "psa_labels": p["namespace_labels"], "owner_label": p["owner_label"]},
            recover=p["recover"])
        image, source = image_line(chart, p["image"], p["chart_values"])
        run = _Run(p, bool(self._task.check_mode), auth, helm_auth, task_vars, plan, want_version,
                   chart_and_image([str(x) for x in chart.get("report") or []], image, source))
        public_plan = dict(plan, values_sha256=inst.values_digest(values))
        if plan["fail"]:
            stuck = run.report("stuck in '%s'" % plan["pending"], plan["release"]["revision"])
            raise StageFailed(plan["fail"], {"plan": public_plan, "report": stuck})
        changed = self._namespace_step(run)
        out: dict[str, Any] = {"plan": public_plan, "values": values, "image": image, "image_source": source}
        if (p["helm"] or {}).get("missing"):
            # helm not there (check mode before the download): nothing to compare with
            out.update(action="would install or upgrade", revision=plan["release"]["revision"], changed=changed,
                       report=run.lines + ["release %s (namespace %s): %s" % (run.name, run.ns, NO_HELM)]
                       + run.chart_lines)
            return self._done(out)
        out.update(self._helm_step(run, values, changed, public_plan))
        return self._done(out)

    @staticmethod
    def _auth(p: ModuleParams, given: ModuleParams) -> tuple[ModuleParams, ModuleParams]:
        """(the cluster options for kubernetes.core's k8s modules, those for its helm modules)."""
        # only the cluster options the task was given (module_defaults included): kubernetes.core's
        # modules resolve the rest themselves (K8S_AUTH_*, KUBECONFIG, ~/.kube/config)
        auth = dict((k, p[k]) for k in AUTH_ARG_SPEC if given.get(k) not in (None, "") and p.get(k) is not None)
        helm_auth = dict((k, v) for k, v in auth.items() if k in HELM_AUTH_OPTIONS)
        if (p["helm"] or {}).get("path"):
            helm_auth["binary_path"] = p["helm"]["path"]
        return auth, helm_auth

    def _namespace_step(self, run: "_Run") -> bool:
        """Wait while the namespace is being deleted, then create or (re)label it. Returns changed."""
        ns, plan = run.ns, run.plan
        if plan["namespace"]["wait"]:
            self._wait_gone(ns, run.auth, run.p["namespace_wait_seconds"], run.task_vars)
            run.lines.append("namespace %s: waited until its deletion finished" % ns)
        labels = plan["namespace"]["labels"]
        if not labels:
            return False
        verb = "create" if plan["namespace"]["creates"] else "label"
        if run.check:
            run.lines.append("namespace %s: would %s it with %s" % (ns, verb, label_report(labels, run.p)))
            return True
        done = self._checked(K8S, dict(run.auth, state="present", definition={
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}),
            run.task_vars, "cannot %s namespace %s" % (verb, ns))
        run.lines.append("namespace %s: %s with %s" % (ns, "created" if verb == "create" else "labelled",
                                                       label_report(labels, run.p)))
        return bool(done.get("changed"))

    def _helm_step(self, run: "_Run", values: ChartValues, changed: bool,
                   public_plan: Mapping[str, Any]) -> dict[str, Any]:
        """Recover a pending release, then install or upgrade unless nothing differs: the result's
        action, revision, changed and report."""
        plan, check, p = run.plan, run.check, run.p
        revision = plan["release"]["revision"]
        prefix = ""
        if plan["recover"]:
            if not check:
                self._recover(plan["recover"], p, run.name, run.ns, p["helm"] or {}, run.helm_auth, run.auth,
                              run.task_vars)
            prefix = "%s (%s) + " % ("would recover" if check else "recovered", plan["recover"])
            changed = True
        if plan["helm"] == release_plan.SKIP:
            return dict(action="unchanged", revision=revision, changed=changed, report=run.report("unchanged", revision))
        if check and (plan["helm"] == release_plan.INSTALL or plan["recover"]):
            action = prefix + "would %s" % plan["helm"]
            return dict(action=action, revision=revision, changed=True, report=run.report(action, revision))
        args = dict(run.helm_auth, release_state="present", release_name=run.name, release_namespace=run.ns,
                    chart_ref=p["chart_ref"], release_values=values, wait=True, timeout=p["timeout"],
                    create_namespace=False)
        if p["chart_version"]:
            args["chart_version"] = p["chart_version"]
        if p["plain_http"]:
            args["plain_http"] = True
        done = self._module(HELM, args, run.task_vars)
        if done.get("failed"):
            raise StageFailed(done.get("msg") or "helm failed", dict(done, plan=public_plan))
        if done.get("changed"):
            verb = {"install": "installed", "upgrade": "upgraded"}[plan["helm"]]
            action = prefix + ("would %s" % plan["helm"] if check else verb)
            if not check:
                revision = self._revision(done.get("status"), revision)
        else:
            action = prefix + "unchanged"
        return dict(action=action, revision=revision, changed=changed or bool(done.get("changed")),
                    report=run.report(action, revision))

    def _done(self, out: dict[str, Any]) -> dict[str, Any]:
        out["modules"] = list(self._started)
        out["msg"] = "\n".join(out["report"])
        return out

    @staticmethod
    def _revision(status: Mapping[str, Any] | None, default: int | None) -> int | None:
        raw: Any = (status or {}).get("revision")
        try:
            return int(raw)
        except (TypeError, ValueError):
            return default

    # ------------------------------------------------------------------ the steps

    def _namespace(self, ns: str, auth: ModuleParams, task_vars: Mapping[str, Any] | None) -> K8sObject | None:
        found = self._checked(K8S_INFO, dict(auth, api_version="v1", kind="Namespace", name=ns), task_vars,
                              "cannot read namespace %s" % ns)
        resources = found.get("resources") or []
        return resources[0] if resources else None

    def _wait_gone(self, ns: str, auth: ModuleParams, seconds: int, task_vars: Mapping[str, Any] | None) -> None:
        """Until namespace ``ns`` is gone: read through k8s_info (where the connection points, so no
        watch from here) every POLL_SECONDS by k8s/wait.py's polling source."""
        gone = poll_until(lambda: self._namespace(ns, auth, task_vars), lambda seen: seen is None,
                          max(int(seconds or 0), POLL_SECONDS), POLL_SECONDS, time.monotonic, time.sleep)
        if not gone.done:
            raise StageFailed("namespace %s is still being deleted after %d s: nothing can be installed "
                              "into it; re-run once it is gone" % (ns, int(seconds or 0)))

    def _recover(self, how: str, p: ModuleParams, name: str, ns: str, helm: Mapping[str, Any], helm_auth: ModuleParams,
                 auth: ModuleParams, task_vars: Mapping[str, Any] | None) -> None:
        if how == release_plan.UNINSTALL:
            # the half-installed release goes; it is installed again right after
            self._checked(HELM, dict(helm_auth, release_state="absent", release_name=name, release_namespace=ns,
                                     wait=True, timeout=p["timeout"]), task_vars,
                          "cannot uninstall the half-installed release %s" % name)
            return
        argv = [helm.get("cmd") or "helm", "rollback", name, "--namespace", ns, "--wait", "--timeout", p["timeout"]]
        kubeconfig = auth.get("kubeconfig") or os.environ.get("K8S_AUTH_KUBECONFIG")
        if isinstance(kubeconfig, str) and kubeconfig:
            argv += ["--kubeconfig", os.path.expanduser(kubeconfig)]
        if auth.get("context"):
            argv += ["--kube-context", auth["context"]]
        self._checked(COMMAND, {"argv": argv}, task_vars,
                      "cannot roll release %s back to its last deployed revision" % name)

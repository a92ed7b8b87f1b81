# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Action plugin for kubevirtci.dra_cpu.release: the role's release stage in one task, install or
upgrade (``state: present``) or uninstall (``state: absent``: plugin_utils/uninstall.py).

The decision is ``module_utils/release/plan.py`` (pure), made here in the controller's worker from
what preflight read already (namespace, release status, chart version, values digest). Only what
the plan needs starts a module, through ``_execute_module`` (so it runs wherever the connection
points): ``kubernetes.core.k8s_info`` when preflight did not read the namespace or it is being
deleted, ``kubernetes.core.helm_info`` when preflight did not read the release,
``kubernetes.core.k8s`` to label (or create) the namespace, ``kubernetes.core.helm`` to uninstall a
half-installed release and to install or upgrade, and ``ansible.builtin.command`` for
``helm rollback``. A no-op run (namespace labelled, release deployed with the same chart version and
values) starts no module process and writes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import time
from typing import Any, NoReturn

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import installed as inst
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release import plan as release_plan
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.release.spec import HELM_AUTH_OPTIONS, argument_spec
from ansible_collections.kubevirtci.dra_cpu.plugins.plugin_utils.uninstall import UninstallSteps

try:
    from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC
except ImportError:  # pragma: no cover - kubernetes.core is a dependency of the collection
    AUTH_ARG_SPEC = {}

K8S_INFO = "kubernetes.core.k8s_info"
K8S = "kubernetes.core.k8s"
HELM = "kubernetes.core.helm"
HELM_INFO = "kubernetes.core.helm_info"
COMMAND = "ansible.builtin.command"
NO_HELM = ("check mode: helm is not available yet, so nothing was compared; a real run would install or "
           "upgrade")
POLL_SECONDS = 3


class StageFailed(Exception):
    def __init__(self, msg: str, result: dict[str, Any] | None = None) -> None:
        super(StageFailed, self).__init__(msg)
        self.msg = msg
        self.result = result or {}


def chart_version_of(chart: str, version_hint: str = "") -> str:
    """The version in helm_info's ``chart`` (``<name>-<version>``)."""
    chart = str(chart or "")
    if version_hint and chart.endswith("-" + version_hint):
        return version_hint
    found = re.search(r"-(v?\d+\.\d+\.\d+[0-9A-Za-z.+-]*)$", chart)
    return found.group(1) if found else ""


def release_from_helm_info(status: dict[str, Any] | None, version_hint: str = "") -> dict[str, Any]:
    """``release_state``'s shape from kubernetes.core.helm_info's ``status`` ({} for none)."""
    if not status:
        return {}
    try:
        raw: Any = status.get("revision")
        revision: int | None = int(raw)
    except (TypeError, ValueError):
        revision = None
    chart = str(status.get("chart") or "")
    version = chart_version_of(chart, version_hint)
    return {"name": status.get("name", ""), "revision": revision, "status": str(status.get("status") or ""),
            "chart": chart[:-(len(version) + 1)] if version else "", "chart_version": version,
            "values_sha256": inst.values_digest(status.get("values")) if "values" in status else ""}


def image_line(chart: dict[str, Any], image: str, chart_values: dict[str, Any]) -> tuple[str, str]:
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


def label_report(labels: dict[str, Any], params: dict[str, Any]) -> str:
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


class ActionModule(UninstallSteps, ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True

    def _module(self, name: str, args: dict[str, Any], task_vars: dict[str, Any] | None) -> dict[str, Any]:
        self._started.append(name)
        return self._execute_module(module_name=name, module_args=args, task_vars=task_vars)

    @staticmethod
    def _fail(msg: str) -> NoReturn:
        raise StageFailed(msg)

    def _checked(self, name: str, args: dict[str, Any], task_vars: dict[str, Any] | None, what: str) -> dict[str, Any]:
        result = self._module(name, args, task_vars)
        if result.get("failed"):
            raise StageFailed("%s: %s" % (what, result.get("msg") or "%s failed" % name), result)
        return result

    def run(self, tmp: str | None = None, task_vars: dict[str, Any] | None = None) -> dict[str, Any]:
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

    def _release(self, p: dict[str, Any], task_vars: dict[str, Any] | None) -> dict[str, Any]:
        check = bool(self._task.check_mode)
        # only the cluster options the task was given (module_defaults included): kubernetes.core's
        # modules resolve the rest themselves (K8S_AUTH_*, KUBECONFIG, ~/.kube/config)
        given = dict(self._task.args or {})
        auth = dict((k, p[k]) for k in AUTH_ARG_SPEC if given.get(k) not in (None, "") and p.get(k) is not None)
        helm = p["helm"] or {}
        helm_auth = dict((k, v) for k, v in auth.items() if k in HELM_AUTH_OPTIONS)
        if helm.get("path"):
            helm_auth["binary_path"] = helm["path"]
        helm_missing = bool(helm.get("missing"))
        if p["state"] == "absent":
            return self._done(self._uninstall(p, auth, helm_auth, task_vars))
        if not p["chart_ref"] or not p["chart"]:
            raise StageFailed("state=present needs chart_ref and chart (the chart stage's result)")
        name, ns, chart = p["release_name"], p["namespace"], p["chart"] or {}
        installed = p["installed"] if (p["installed"] or {}).get("readable") else {}

        ns_state = installed.get("namespace")
        if ns_state is None:
            ns_state = inst.namespace_state(ns, self._namespace(ns, auth, task_vars), p["namespace_labels"])
        release = installed.get("release")
        if release is None:
            release = {}
            if not helm_missing and ns_state.get("exists") and not ns_state.get("terminating"):
                info = self._checked(HELM_INFO, dict(helm_auth, release_name=name, release_namespace=ns,
                                                     release_state=["all"]), task_vars,
                                     "cannot read release %s in namespace %s" % (name, ns))
                release = release_from_helm_info(info.get("status"), str(chart.get("version") or ""))

        values = release_plan.release_values(chart.get("release_values"), p["node_affinity"])
        want_version = str(chart.get("version") or p["chart_version"] or "")
        plan = release_plan.plan(ns_state, release, {
            "name": name, "namespace": ns, "chart_version": want_version, "values": values,
            "psa_labels": p["namespace_labels"], "owner_label": p["owner_label"]}, recover=p["recover"])
        image, source = image_line(chart, p["image"], p["chart_values"])
        lines: list[str] = []
        chart_lines = [str(x) for x in chart.get("report") or []]

        def report(action: str, revision: int | None) -> list[str]:
            version = want_version or plan["release"]["chart_version"] or "newest"
            # short enough not to be folded in the play's output; the chart's version is on its line
            head = "release %s (namespace %s): %s%s" % (
                name, ns, action, ", revision %s" % revision if revision is not None else ", chart %s" % version)
            return lines + [head] + chart_and_image(chart_lines, image, source)

        public_plan = dict(plan, values_sha256=inst.values_digest(values))
        if plan["fail"]:
            stuck = report("stuck in '%s'" % plan["pending"], plan["release"]["revision"])
            raise StageFailed(plan["fail"], {"plan": public_plan, "report": stuck})
        changed = False
        # 1. the namespace: wait while it is being deleted, then create or (re)label it
        if plan["namespace"]["wait"]:
            self._wait_gone(ns, auth, p["namespace_wait_seconds"], task_vars)
            lines.append("namespace %s: waited until its deletion finished" % ns)
        labels = plan["namespace"]["labels"]
        if labels:
            verb = "create" if plan["namespace"]["creates"] else "label"
            if check:
                lines.append("namespace %s: would %s it with %s" % (ns, verb, label_report(labels, p)))
                changed = True
            else:
                done = self._checked(K8S, dict(auth, state="present", definition={
                    "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}}),
                    task_vars, "cannot %s namespace %s" % (verb, ns))
                changed = changed or bool(done.get("changed"))
                done_verb = "created" if verb == "create" else "labelled"
                lines.append("namespace %s: %s with %s" % (ns, done_verb, label_report(labels, p)))

        out: dict[str, Any] = {"plan": public_plan, "values": values, "image": image, "image_source": source}
        # 2. helm not there (check mode before the download): nothing to compare with
        if helm_missing:
            out.update(action="would install or upgrade", revision=plan["release"]["revision"], changed=changed,
                       report=lines + ["release %s (namespace %s): %s" % (name, ns, NO_HELM)]
                       + chart_and_image(chart_lines, image, source))
            return self._done(out)
        # 3. a pending release: recover it first
        prefix = ""
        if plan["recover"]:
            if check:
                prefix = "would recover (%s) + " % plan["recover"]
            else:
                self._recover(plan["recover"], p, name, ns, helm, helm_auth, auth, task_vars)
                prefix = "recovered (%s) + " % plan["recover"]
            changed = True
        # 4. install or upgrade, unless nothing differs
        if plan["helm"] == release_plan.SKIP:
            out.update(action="unchanged", revision=plan["release"]["revision"], changed=changed,
                       report=report("unchanged", plan["release"]["revision"]))
            return self._done(out)
        if check and (plan["helm"] == release_plan.INSTALL or plan["recover"]):
            action = prefix + "would %s" % plan["helm"]
            out.update(action=action, revision=plan["release"]["revision"], changed=True,
                       report=report(action, plan["release"]["revision"]))
            return self._done(out)
        args = dict(helm_auth, release_state="present", release_name=name, release_namespace=ns,
                    chart_ref=p["chart_ref"], release_values=values, wait=True, timeout=p["timeout"],
                    create_namespace=False)
        if p["chart_version"]:
            args["chart_version"] = p["chart_version"]
        if p["plain_http"]:
            args["plain_http"] = True
        done = self._module(HELM, args, task_vars)
        if done.get("failed"):
            raise StageFailed(done.get("msg") or "helm failed", dict(done, plan=public_plan))
        revision = plan["release"]["revision"]
        if done.get("changed"):
            verb = {"install": "installed", "upgrade": "upgraded"}[plan["helm"]]
            action = prefix + ("would %s" % plan["helm"] if check else verb)
            if not check:
                revision = self._revision(done.get("status"), revision)
        else:
            action = prefix + "unchanged"
        out.update(action=action, revision=revision, changed=changed or bool(done.get("changed")),
                   report=report(action, revision))
        return self._done(out)

    def _done(self, out: dict[str, Any]) -> dict[str, Any]:
        out["modules"] = list(self._started)
        out["msg"] = "\n".join(out["report"])
        return out

    @staticmethod
    def _revision(status: dict[str, Any] | None, default: int | None) -> int | None:
        raw: Any = (status or {}).get("revision")
        try:
            return int(raw)
        except (TypeError, ValueError):
            return default

    # ------------------------------------------------------------------ the steps

    def _namespace(self, ns: str, auth: dict[str, Any], task_vars: dict[str, Any] | None) -> dict[str, Any] | None:
        found = self._checked(K8S_INFO, dict(auth, api_version="v1", kind="Namespace", name=ns), task_vars,
                              "cannot read namespace %s" % ns)
        resources = found.get("resources") or []
        return resources[0] if resources else None

    def _wait_gone(self, ns: str, auth: dict[str, Any], seconds: int, task_vars: dict[str, Any] | None) -> None:
        deadline = time.time() + max(int(seconds or 0), POLL_SECONDS)
        while True:
            if self._namespace(ns, auth, task_vars) is None:
                return
            if time.time() >= deadline:
                raise StageFailed("namespace %s is still being deleted after %d s: nothing can be installed "
                                  "into it; re-run once it is gone" % (ns, int(seconds or 0)))
            time.sleep(POLL_SECONDS)

    def _recover(self, how: str, p: dict[str, Any], name: str, ns: str, helm: dict[str, Any], helm_auth: dict[str, Any],
                 auth: dict[str, Any], task_vars: dict[str, Any] | None) -> None:
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

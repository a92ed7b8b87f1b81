# SPDX-License-Identifier: Apache-2.0
"""Test doubles at the API boundary: a fake dynamic client answering GETs by path,
and helpers to run a module's main() and capture exit_json/fail_json."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import json

from unittest import mock

from ansible.module_utils import basic

try:
    from ansible.module_utils.testing import patch_module_args
except ImportError:  # ansible-core < 2.19
    from ansible.module_utils.common.text.converters import to_bytes

    @contextlib.contextmanager
    def patch_module_args(args=None):
        with mock.patch.object(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": args or {}}))):
            yield


def _raise(exc):
    raise exc


class ModuleExit(Exception):
    def __init__(self, result, failed):
        super(ModuleExit, self).__init__(result.get("msg", ""))
        self.result = result
        self.failed = failed


# keys whose shape Ansible itself interprets when a module returns (a wrong type crashes the task)
RESERVED_LISTS_OF_STR = ("warnings", "deprecations")


def _check_reserved(kwargs):
    for key in RESERVED_LISTS_OF_STR:
        if key in kwargs:
            value = kwargs[key]
            assert isinstance(value, list) and all(isinstance(v, (str, dict)) for v in value), (
                "module returned %r=%r: Ansible reserves this key for a list of messages" % (key, value))


def _exit_json(self, **kwargs):
    _check_reserved(kwargs)
    raise ModuleExit(kwargs, False)


def _fail_json(self, **kwargs):
    _check_reserved(kwargs)
    raise ModuleExit(kwargs, True)


def run_module(module, args, client=None):
    """Run ``module.main()`` with ``args``; returns (result, failed)."""
    patches = [mock.patch.object(basic.AnsibleModule, "exit_json", _exit_json),
               mock.patch.object(basic.AnsibleModule, "fail_json", _fail_json)]
    if client is not None:
        patches.append(mock.patch.object(module, "get_api_client", return_value=mock.Mock(client=client)))
    with contextlib.ExitStack() as stack:
        for p in patches:
            stack.enter_context(p)
        stack.enter_context(patch_module_args(args))
        try:
            module.main()
        except ModuleExit as exc:
            return exc.result, exc.failed
    raise AssertionError("module did not exit")


class HTTPError(Exception):
    def __init__(self, status, message=""):
        super(HTTPError, self).__init__("HTTP %s" % status)
        self.status = status
        self.reason = "error"
        self.body = json.dumps({"kind": "Status", "code": status, "message": message})


class Response(object):
    def __init__(self, body=b"", chunks=None):
        if not isinstance(body, bytes):
            body = body.encode("utf-8") if isinstance(body, str) else json.dumps(body).encode("utf-8")
        self.data = body
        self.chunks = chunks

    def stream(self, amt=None, decode_content=False):
        if self.chunks is None:
            yield self.data
            return
        yield from self.chunks

    def close(self):
        pass


METRICS = ('# TYPE kubernetes_feature_enabled gauge\n'
           'kubernetes_feature_enabled{name="DRAConsumableCapacity",stage="BETA"} 1\n')
APIS = {"kind": "APIGroupList", "groups": [{"name": "resource.k8s.io", "versions": [
    {"groupVersion": "resource.k8s.io/v1", "version": "v1"}]}]}


def node(name, runtime="cri-o://1.36.1", cpus="12", taints=None, labels=None, ready="True"):
    """A Node as the API server returns it; ``ready`` the status of its Ready condition (None: no
    condition at all, as before its kubelet first reported)."""
    conditions = [] if ready is None else [{
        "type": "Ready", "status": ready,
        "reason": "KubeletReady" if ready == "True" else "NodeStatusUnknown",
        "message": "kubelet is posting ready status" if ready == "True" else "Kubelet stopped posting node status.",
        "lastTransitionTime": "2026-12-02T06:00:00Z"}]
    obj = {"metadata": {"name": name, "labels": labels or {"kubernetes.io/hostname": name}},
           "spec": {"taints": taints or []},
           "status": {"capacity": {"cpu": cpus}, "nodeInfo": {"containerRuntimeVersion": runtime},
                      "conditions": conditions}}
    return obj


def pod(name, node_name, phase="Running", ready=None):
    """A driver pod as the kubelet reports it: ``Ready`` (its condition ``True``) when Running, unless
    ``ready`` says otherwise."""
    ready = phase == "Running" if ready is None else ready
    return {"metadata": {"name": name}, "spec": {"nodeName": node_name},
            "status": {"phase": phase, "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


# a watch stream can say that time passed only with a line: a bookmark, as the API server sends them
BOOKMARK_LINE = (json.dumps({"type": "BOOKMARK", "object": {"metadata": {}}}) + "\n").encode()


def passing_time(clock, seconds, step=1.0):
    """Stream chunks of a watch during which ``seconds`` pass on ``clock`` without an event: a bookmark every
    ``step`` seconds, so a wait reading it (inline, under a fake clock) can judge its tick."""
    end = clock.now + seconds
    while clock.now < end:
        clock.now = min(end, clock.now + step)
        yield BOOKMARK_LINE


class FakeCluster(object):
    """Answers the GETs the modules make. ``routes`` maps a path to a body, a
    Response or an exception; ``watches`` is a list of event lists (one per
    watch request)."""

    def __init__(self, routes=None, watches=None):
        self.routes = {
            "/version": {"major": "1", "minor": "36", "gitVersion": "v1.36.3"},
            "/apis": APIS,
            "/metrics": METRICS,
            "/api/v1/nodes": {"items": [node("node01")]},
            "/api/v1/nodes/node01/proxy/configz": {"kubeletconfig": {"cpuManagerPolicy": "none"}},
        }
        self.routes.update(routes or {})
        self.watches = list(watches or [])
        self.calls = []
        self.timeouts = {}

    def request(self, method, path, **params):
        query = dict(params.get("query_params") or [])
        self.calls.append((path, query))
        self.timeouts[path] = params.get("_request_timeout")
        if query.get("watch") == "true":
            events = self.watches.pop(0) if self.watches else []
            if isinstance(events, Exception):
                _raise(events)
            return Response(chunks=[(json.dumps(e) + "\n").encode() for e in events])
        if path not in self.routes:
            raise HTTPError(404, "%s not found" % path)
        item = self.routes[path]
        if isinstance(item, Exception):
            raise item
        if isinstance(item, Response):
            return item
        return Response(item)

    def paths(self):
        return [c[0] for c in self.calls]


class Clock(object):
    """A manual clock for waits: ``sleep`` advances it instead of sleeping."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds

# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import client as kc


class FakeResponse(object):
    def __init__(self, data=b"", chunks=None, error_after=None):
        self.data = data
        self.chunks = chunks or []
        self.error_after = error_after
        self.closed = False

    def stream(self, amt=None, decode_content=False):
        yield from self.chunks
        if self.error_after is not None:
            raise self.error_after

    def close(self):
        self.closed = True


class HTTPError(Exception):
    def __init__(self, status, body=None, reason=None):
        super(HTTPError, self).__init__("HTTP %s" % status)
        self.status = status
        self.body = body
        self.reason = reason


class FakeDynamic(object):
    def __init__(self, responses):
        self.responses = list(responses)
        self.calls = []

    def request(self, method, path, **params):
        self.calls.append((method, path, params))
        item = self.responses.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


@pytest.mark.parametrize("path,query,verb,resource", [
    ("/api/v1/nodes/node01/proxy/configz", None, "get", "nodes/proxy"),
    ("/api/v1/nodes", None, "list", "nodes"),
    ("/api/v1/nodes/node01", None, "get", "nodes"),
    ("/apis/resource.k8s.io/v1/resourceslices", {"watch": "true"}, "watch", "resourceslices.resource.k8s.io"),
    ("/apis/resource.k8s.io/v1/resourceslices", {}, "list", "resourceslices.resource.k8s.io"),
    ("/api/v1/namespaces/dra/pods", None, "list", "pods in namespace dra"),
    ("/api/v1/namespaces/dra/pods/p1/log", None, "get", "pods/log in namespace dra"),
    ("/api/v1/namespaces/dra", None, "get", "namespaces"),
    ("/metrics", None, "get", "non-resource URL /metrics"),
    ("/version", None, "get", "non-resource URL /version"),
    ("/apis", None, "get", "non-resource URL /apis"),
])
def test_describe_request(path, query, verb, resource):
    assert kc.describe_request(path, query) == (verb, resource)


def test_forbidden_names_verb_and_resource():
    body = json.dumps({"kind": "Status", "message": 'nodes "node01" is forbidden: User "u" cannot get '
                                                    'resource "nodes/proxy"', "code": 403})
    api = kc.RawApi(FakeDynamic([HTTPError(403, body)]))
    with pytest.raises(kc.KubeRequestError) as exc:
        api.configz("node01")
    err = exc.value
    assert err.forbidden and err.verb == "get" and err.resource == "nodes/proxy"
    assert str(err) == ('permission denied: cannot get nodes/proxy (GET /api/v1/nodes/node01/proxy/configz): '
                        'nodes "node01" is forbidden: User "u" cannot get resource "nodes/proxy"; grant apiGroups [""] '
                        'resources ["nodes/proxy"] verbs ["get"] in a ClusterRole (docs/rbac.md)')


def test_real_api_exception_translated():
    from kubernetes.client.exceptions import ApiException
    exc = ApiException(status=403, reason="Forbidden")
    exc.body = '{"message": "forbidden: User \\"u\\" cannot get path \\"/metrics\\""}'
    err = kc.translate_error(exc, "/metrics")
    assert err.status == 403
    assert str(err) == ('permission denied: cannot get non-resource URL /metrics (GET /metrics): forbidden: User "u" '
                        'cannot get path "/metrics"; grant nonResourceURLs ["/metrics"] verbs ["get"] in a ClusterRole '
                        '(docs/rbac.md)')


def test_connection_error():
    err = kc.translate_error(ConnectionRefusedError("refused"), "/version")
    assert err.connection_error
    assert str(err) == "cannot reach the API server to get non-resource URL /version: ConnectionRefusedError: refused"


def test_other_statuses():
    err = kc.translate_error(HTTPError(410), "/apis/resource.k8s.io/v1/resourceslices", {"watch": "true"})
    assert err.gone and err.verb == "watch"
    assert str(err) == "HTTP 410 from the API server for watch resourceslices.resource.k8s.io (GET " \
                       "/apis/resource.k8s.io/v1/resourceslices)"


@pytest.mark.parametrize("path, verb, fix", [
    ("/api/v1/namespaces/ns/pods/p/log", "get",
     'grant apiGroups [""] resources ["pods/log"] verbs ["get"] in a Role in namespace ns or a ClusterRole'),
    ("/apis/apps/v1/namespaces/ns/daemonsets", "list",
     'grant apiGroups ["apps"] resources ["daemonsets"] verbs ["list"] in a Role in namespace ns or a ClusterRole'),
    ("/apis/resource.k8s.io/v1/resourceslices", "watch",
     'grant apiGroups ["resource.k8s.io"] resources ["resourceslices"] verbs ["watch"] in a ClusterRole'),
    ("/metrics", "get", 'grant nonResourceURLs ["/metrics"] verbs ["get"] in a ClusterRole'),
])
def test_rbac_fix_is_the_rule_to_add(path, verb, fix):
    assert kc.rbac_fix(path, verb) == fix + " (docs/rbac.md)"


def test_get_json_and_text():
    fake = FakeDynamic([FakeResponse(b'{"gitVersion": "v1.36.3"}'), FakeResponse(b"# HELP x\nx 1\n"),
                        FakeResponse(b"not json")])
    api = kc.RawApi(fake)
    assert api.version() == {"gitVersion": "v1.36.3"}
    assert api.metrics() == "# HELP x\nx 1\n"
    assert fake.calls[1][2]["header_params"] == {"Accept": "text/plain"}
    assert fake.calls[1][2]["serialize"] is False
    with pytest.raises(kc.KubeRequestError):
        api.get_json("/version")
    assert api.requests == 3


def test_pod_log_and_lists():
    fake = FakeDynamic([FakeResponse(b"line1\nline2\n"), FakeResponse(b'{"items": [{"metadata": {"name": "p"}}]}')])
    api = kc.RawApi(fake)
    assert api.pod_log("dra", "p", container="dracpu", tail_lines=5) == "line1\nline2\n"
    assert fake.calls[0][1] == "/api/v1/namespaces/dra/pods/p/log"
    assert dict(fake.calls[0][2]["query_params"]) == {"tailLines": 5, "container": "dracpu"}
    assert api.list_pods("dra", "app=x") == [{"metadata": {"name": "p"}}]
    assert dict(fake.calls[1][2]["query_params"]) == {"labelSelector": "app=x"}


def test_node_exists():
    api = kc.RawApi(FakeDynamic([FakeResponse(b"{}"), HTTPError(404), HTTPError(403)]))
    assert api.node_exists("a") is True
    assert api.node_exists("b") is False
    with pytest.raises(kc.KubeRequestError):
        api.node_exists("c")


def test_iter_lines_splits_across_chunks():
    assert list(kc.iter_lines([b'{"a":', b' 1}\n{"b"', b": 2}\n\n", b'{"c": 3}'])) == ['{"a": 1}', '{"b": 2}', '{"c": 3}']


def test_watch_stream_and_errors():
    events = [b'{"type": "ADDED", "object": {"metadata": {"name": "s1"}}}\n{"type": "BOOK',
              b'MARK", "object": {"metadata": {"resourceVersion": "9"}}}\n']
    response = FakeResponse(chunks=events, error_after=ConnectionResetError("reset"))
    fake = FakeDynamic([response])
    api = kc.RawApi(fake)
    got = []
    with pytest.raises(kc.KubeRequestError) as exc:
        for event in api.watch("/apis/resource.k8s.io/v1/resourceslices", {"resourceVersion": "5"}, timeout=10):
            got.append(event["type"])
    assert got == ["ADDED", "BOOKMARK"]
    assert exc.value.connection_error and exc.value.verb == "watch"
    assert response.closed
    assert dict(fake.calls[0][2]["query_params"]) == {"resourceVersion": "5", "watch": "true"}
    assert fake.calls[0][2]["_request_timeout"] == 10

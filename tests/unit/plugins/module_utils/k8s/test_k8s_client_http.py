# SPDX-License-Identifier: Apache-2.0
"""RawApi through the real kubernetes client against a loopback HTTP server
(checks query encoding, headers, bearer auth, error translation and chunked
watch streaming with the installed client version)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading

try:
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from urllib.parse import parse_qs, urlparse
except ImportError:  # pragma: no cover
    ThreadingHTTPServer = None

import pytest

kubernetes = pytest.importorskip("kubernetes")

from kubernetes.dynamic import DynamicClient  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import (  # noqa: E402
    KubeRequestError,
    RawApi,
)

SEEN = []


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, ctype="application/json"):
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        url = urlparse(self.path)
        query = dict((k, v[0]) for k, v in parse_qs(url.query).items())
        SEEN.append((url.path, query, self.headers.get("Authorization"), self.headers.get("Accept")))
        if url.path in ("/api", "/apis") and "watch" not in query:
            return self._send(200, {"kind": "APIGroupList", "groups": []} if url.path == "/apis"
                              else {"kind": "APIVersions", "versions": ["v1"]})
        if url.path == "/version":
            return self._send(200, {"major": "1", "minor": "36", "gitVersion": "v1.36.3"})
        if url.path == "/metrics":
            return self._send(200, 'kubernetes_feature_enabled{name="X",stage=""} 1\n', "text/plain")
        if url.path == "/api/v1/nodes/node01/proxy/configz":
            return self._send(403, {"kind": "Status", "code": 403,
                                    "message": 'nodes "node01" is forbidden: cannot get resource "nodes/proxy"'})
        if url.path == "/apis/resource.k8s.io/v1/resourceslices" and query.get("watch") == "true":
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            events = [{"type": "ADDED", "object": {"metadata": {"name": "s1", "resourceVersion": "7"}}},
                      {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "8"}}}]
            payload = "".join(json.dumps(e) + "\n" for e in events).encode()
            for part in (payload[:30], payload[30:]):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            self.wfile.write(b"0\r\n\r\n")
            return None
        return self._send(404, {"kind": "Status", "code": 404, "message": "not found"})


@pytest.fixture(scope="module")
def api():
    if ThreadingHTTPServer is None:
        pytest.skip("needs Python 3")
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    config = kubernetes.client.Configuration()
    config.host = "http://127.0.0.1:%d" % server.server_address[1]
    config.api_key = {"authorization": "Bearer secret-token"}
    client = kubernetes.client.ApiClient(config)
    try:
        yield RawApi(DynamicClient(client))
    finally:
        server.shutdown()
        server.server_close()


def test_json_text_and_auth(api):
    del SEEN[:]
    assert api.version()["gitVersion"] == "v1.36.3"
    assert api.metrics() == 'kubernetes_feature_enabled{name="X",stage=""} 1\n'
    assert SEEN[0][2] == "Bearer secret-token"
    assert SEEN[1][3] == "text/plain"


def test_forbidden_is_translated(api):
    with pytest.raises(KubeRequestError) as exc:
        api.configz("node01")
    assert exc.value.status == 403
    assert str(exc.value) == ('permission denied: cannot get nodes/proxy (GET /api/v1/nodes/node01/proxy/configz): '
                              'nodes "node01" is forbidden: cannot get resource "nodes/proxy"; grant apiGroups [""] '
                              'resources ["nodes/proxy"] verbs ["get"] in a ClusterRole (docs/rbac.md)')
    assert "secret-token" not in str(exc.value)


def test_not_found(api):
    assert api.node_exists("nope") is False


def test_watch_streams_chunked_events(api):
    del SEEN[:]
    events = list(api.watch("/apis/resource.k8s.io/v1/resourceslices",
                            {"fieldSelector": "spec.driver=dra.cpu", "resourceVersion": "5",
                             "timeoutSeconds": 3}, timeout=10))
    assert [e["type"] for e in events] == ["ADDED", "BOOKMARK"]
    path, query, _auth, _accept = SEEN[-1]
    assert query == {"fieldSelector": "spec.driver=dra.cpu", "resourceVersion": "5", "timeoutSeconds": "3",
                     "watch": "true"}

# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""Raw GETs, watch streams and the few writes of verify's test objects, and why a request failed.

``RawApi`` issues plain requests through kubernetes.core's dynamic client. The one error mapping of
the collection is here too: ``translate_error`` words a failed request (``KubeRequestError``) and
``client_build_error`` a client that cannot be built (``ClientBuildError``), never with credentials.
docs/internals.md ("The client and its errors") gives the classes and their words.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import json
from urllib.parse import quote
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple, Union

from ansible_collections.kubernetes.core.plugins.module_utils.k8s.exceptions import CoreException

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.types import K8sObject

# the query parameters of a request (``labelSelector``, ``tailLines``, ``watch``, ...)
Query = Mapping[str, Union[str, int]]

# the ResourceSlices of every driver (list and watch with ``fieldSelector``: driver_field_selector)
RESOURCE_SLICES_PATH = "/apis/resource.k8s.io/v1/resourceslices"


def driver_field_selector(driver: str) -> str:
    """``spec.driver=<driver>``: the field selector of one driver's ResourceSlices (a list or watch of
    RESOURCE_SLICES_PATH, kubernetes.core.k8s_info's ``field_selectors``)."""
    return "spec.driver=%s" % driver


class ClusterError(Exception):
    """The cluster could not be read: why, in ``message`` (the stage says what it was reading)."""

    def __init__(self, message: str) -> None:
        super(ClusterError, self).__init__(message)
        self.message = message


class ClientBuildError(ClusterError):
    """The client could not be built from the configured kubeconfig, context or options."""


class KubeRequestError(ClusterError):
    """An API request failed.

    ``status`` is the HTTP status (None for a connection problem), ``verb``
    and ``resource`` the RBAC terms of the request, ``path`` its URL path.
    """

    def __init__(self, message: str, status: int | None = None, verb: str | None = None, resource: str | None = None,
                 path: str | None = None, reason: str | None = None) -> None:
        super(KubeRequestError, self).__init__(message)
        self.status = status
        self.verb = verb
        self.resource = resource
        self.path = path
        self.reason = reason

    @property
    def forbidden(self) -> bool:
        return self.status == 403

    @property
    def not_found(self) -> bool:
        return self.status == 404

    @property
    def gone(self) -> bool:
        return self.status == 410

    @property
    def connection_error(self) -> bool:
        return self.status is None


class _Target(NamedTuple):
    """What a request's path names in RBAC terms (``group`` None: a non-resource URL)."""

    group: str | None
    resource: str
    subresource: str | None
    namespace: str | None
    name: str | None


def _target(path: str) -> _Target:
    parts = [p for p in path.split("?")[0].split("/") if p]
    group: str | None = None
    rest: list[str] = []
    if len(parts) >= 3 and parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    if not rest:
        return _Target(None, path.split("?")[0], None, None, None)
    namespace = None
    if len(rest) > 2 and rest[0] == "namespaces":
        namespace, rest = rest[1], rest[2:]
    return _Target(group, rest[0], rest[2] if len(rest) > 2 else None, namespace, rest[1] if len(rest) > 1 else None)


def describe_request(path: str, query: Query | None = None) -> tuple[str, str]:
    """RBAC terms of a GET: ``(verb, resource)``.

    ``/api/v1/nodes/n1/proxy/configz`` -> ``('get', 'nodes/proxy')``;
    ``/apis/resource.k8s.io/v1/resourceslices`` with ``watch`` ->
    ``('watch', 'resourceslices.resource.k8s.io')``; non-resource URLs such as
    ``/metrics`` -> ``('get', 'non-resource URL /metrics')``.
    """
    target = _target(path)
    if target.group is None:
        return "get", "non-resource URL %s" % target.resource
    resource = target.resource + (".%s" % target.group if target.group else "")
    if target.subresource:
        resource = "%s/%s" % (resource, target.subresource)
    if str((query or {}).get("watch", "")).lower() in ("1", "true"):
        verb = "watch"
    elif target.name is None:
        verb = "list"
    else:
        verb = "get"
    if target.namespace:
        resource = "%s in namespace %s" % (resource, target.namespace)
    return verb, resource


def rbac_fix(path: str, verb: str) -> str:
    """The rule that grants ``verb`` on what ``path`` names, as a Role or ClusterRole states it."""
    target = _target(path)
    if target.group is None:
        return 'grant nonResourceURLs ["%s"] verbs ["%s"] in a ClusterRole (docs/rbac.md)' % (target.resource, verb)
    resource = target.resource + ("/%s" % target.subresource if target.subresource else "")
    where = ("a Role in namespace %s or a ClusterRole" % target.namespace) if target.namespace else "a ClusterRole"
    return 'grant apiGroups ["%s"] resources ["%s"] verbs ["%s"] in %s (docs/rbac.md)' % (
        target.group, resource, verb, where)


def _server_message(body: str | bytes | None) -> str:
    if not body:
        return ""
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        data = json.loads(body)
        if isinstance(data, dict) and data.get("message"):
            return str(data["message"])
    except ValueError:
        pass
    return str(body).strip()[:300]


def _status_message(status: int, verb: str, resource: str, method: str, path: str, server: str) -> str:
    said = ": %s" % server if server else ""
    if status == 401:
        return ("unauthorized: the API server rejected the credentials (HTTP 401) while trying to %s %s: renew the "
                "token or client certificate of the kubeconfig's user, or check the exec plugin" % (verb, resource))
    if status == 403:
        return "permission denied: cannot %s %s (%s %s)%s; %s" % (verb, resource, method, path, said,
                                                                  rbac_fix(path, verb))
    if status == 404:
        return "not found: %s %s (%s %s)%s" % (verb, resource, method, path, said)
    if status >= 500:
        return "server error: HTTP %d from the API server for %s %s (%s %s)%s" % (status, verb, resource, method,
                                                                                  path, said)
    return "HTTP %d from the API server for %s %s (%s %s)%s" % (status, verb, resource, method, path, said)


def translate_error(exc: Any, path: str, query: Query | None = None,
                    method: str = "GET") -> KubeRequestError:
    """A KubeRequestError for an exception raised by the client (``method`` POST: verb ``create``,
    DELETE: ``delete``): why it failed, in the words of docs/internals.md."""
    verb, resource = describe_request(path, query)
    verb = {"POST": "create", "DELETE": "delete"}.get(method, verb)
    status = getattr(exc, "status", None)
    if isinstance(status, int) and status > 0:
        message = _status_message(status, verb, resource, method, path, _server_message(getattr(exc, "body", None)))
        return KubeRequestError(message, status=status, verb=verb, resource=resource, path=path,
                                reason=getattr(exc, "reason", None))
    return KubeRequestError("cannot reach the API server to %s %s: %s: %s"
                            % (verb, resource, type(exc).__name__, exc),
                            status=None, verb=verb, resource=resource, path=path)


def client_build_error(exc: Exception, source: str) -> ClientBuildError:
    """Why the client could not be built from ``source`` (which kubeconfig and context, or options)."""
    # kubernetes.core's CoreException already says "Could not create API client"; other kubeconfig
    # problems surface as various exception types, named
    detail = "%s" % exc if isinstance(exc, CoreException) else "%s: %s" % (type(exc).__name__, exc)
    return ClientBuildError("cannot create a Kubernetes client from %s: %s" % (source, detail))


def _read(response: Any) -> str:
    data = getattr(response, "data", None)
    if data is None and hasattr(response, "read"):
        data = response.read()
    if data is None:
        data = b""
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return str(data)


def iter_lines(chunks: Iterable[bytes | str]) -> Iterator[str]:
    """Split an iterable of byte/str chunks into complete lines (str)."""
    buffer = b""
    for chunk in chunks:
        if not chunk:
            continue
        if not isinstance(chunk, bytes):
            chunk = chunk.encode("utf-8")
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            if line.strip():
                yield line.decode("utf-8", "replace")
    if buffer.strip():
        yield buffer.decode("utf-8", "replace")


class RawApi(object):
    """GET and watch against the API server through a dynamic client."""

    def __init__(self, dynamic_client: Any) -> None:
        self.client = dynamic_client
        self.requests = 0

    def _request(self, path: str, query: Query | None = None, accept: str | None = None,
                 timeout: float | int | None = None) -> Any:
        params = {"serialize": False, "query_params": list((query or {}).items())}
        if accept:
            params["header_params"] = {"Accept": accept}
        if timeout is not None:
            params["_request_timeout"] = timeout
        self.requests += 1
        try:
            return self.client.request("get", path, **params)
        except Exception as exc:  # the client raises ApiException subclasses and urllib3 errors
            raise translate_error(exc, path, query)

    def get_text(self, path: str, query: Query | None = None, accept: str | None = None,
                 timeout: int | None = None) -> str:
        """GET ``path`` and return the body as text."""
        response = self._request(path, query, accept=accept, timeout=timeout)
        try:
            return _read(response)
        except Exception as exc:
            raise translate_error(exc, path, query)

    def get_json(self, path: str, query: Query | None = None, timeout: int | None = None) -> K8sObject:
        """GET ``path`` and return the decoded JSON body."""
        text = self.get_text(path, query, accept="application/json", timeout=timeout)
        try:
            return json.loads(text)
        except ValueError:
            verb, resource = describe_request(path, query)
            raise KubeRequestError("unexpected non-JSON answer to %s %s (GET %s)" % (verb, resource, path),
                                   status=200, verb=verb, resource=resource, path=path)

    def watch(self, path: str, query: Query | None = None,
              timeout: int | float | None = None) -> Iterator[K8sObject]:
        """Open a watch on ``path`` and yield its events as dicts.

        ``query`` should carry ``resourceVersion`` and ``timeoutSeconds``;
        ``watch=true`` is added. Errors while streaming become
        KubeRequestError (connection errors have ``status`` None).
        """
        query = dict(query or {}, watch="true")
        response = self._request(path, query, accept="application/json", timeout=timeout)
        try:
            stream = response.stream(amt=None, decode_content=False) if hasattr(response, "stream") \
                else iter([_read(response)])
            for line in iter_lines(stream):
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
        except KubeRequestError:
            raise
        except GeneratorExit:
            raise
        except Exception as exc:
            raise translate_error(exc, path, query)
        finally:
            for name in ("close", "release_conn"):
                method = getattr(response, name, None)
                if method:
                    try:
                        method()
                    except Exception:  # closing a broken stream may fail; nothing to do
                        pass

    # ------------------------------------------------------------- conveniences

    def version(self) -> K8sObject:
        return self.get_json("/version")

    def api_groups(self) -> K8sObject:
        return self.get_json("/apis")

    def metrics(self) -> str:
        return self.get_text("/metrics", accept="text/plain")

    def configz(self, node: str, timeout: int | None = None) -> K8sObject:
        return self.get_json("/api/v1/nodes/%s/proxy/configz" % quote(node, safe=""), timeout=timeout)

    def list_nodes(self) -> list[K8sObject]:
        return self.get_json("/api/v1/nodes").get("items") or []

    def get_node(self, node: str) -> K8sObject:
        return self.get_json("/api/v1/nodes/%s" % quote(node, safe=""))

    def node_names(self) -> set[str | None]:
        """Names of all nodes (one list; metadata only when the server offers it)."""
        text = self.get_text("/api/v1/nodes", accept="application/json;as=PartialObjectMetadataList;"
                             "g=meta.k8s.io;v=v1,application/json")
        try:
            items = json.loads(text).get("items") or []
        except ValueError:
            raise KubeRequestError("unexpected non-JSON answer to list nodes (GET /api/v1/nodes)",
                                   status=200, verb="list", resource="nodes", path="/api/v1/nodes")
        return set(((i or {}).get("metadata") or {}).get("name") for i in items)

    def node_exists(self, node: str) -> bool:
        try:
            self.get_node(node)
        except KubeRequestError as exc:
            if exc.not_found:
                return False
            raise
        return True

    def get_namespace(self, name: str) -> K8sObject | None:
        """The Namespace object, or None when it does not exist."""
        try:
            return self.get_json("/api/v1/namespaces/%s" % quote(name, safe=""))
        except KubeRequestError as exc:
            if exc.not_found:
                return None
            raise

    def list_secrets(self, namespace: str, label_selector: str) -> list[K8sObject]:
        query = {"labelSelector": label_selector}
        return self.get_json("/api/v1/namespaces/%s/secrets" % quote(namespace, safe=""), query).get("items") or []

    def list_pods(self, namespace: str, label_selector: str | None = None) -> list[K8sObject]:
        query = {"labelSelector": label_selector} if label_selector else None
        return self.get_json("/api/v1/namespaces/%s/pods" % quote(namespace, safe=""), query).get("items") or []

    def send_json(self, method: str, path: str, body: K8sObject | None = None,
                  query: Query | None = None) -> K8sObject:
        """POST (create) or DELETE ``path`` with a JSON body; the decoded answer ({} when it is not JSON)."""
        params: dict[str, Any] = {"serialize": False, "query_params": list((query or {}).items()),
                                  "header_params": {"Accept": "application/json"}}
        if body is not None:
            params["body"] = body
        self.requests += 1
        try:
            text = _read(self.client.request(method.lower(), path, **params))
        except Exception as exc:  # the client raises ApiException subclasses and urllib3 errors
            raise translate_error(exc, path, query, method.upper())
        try:
            answer = json.loads(text)
        except ValueError:
            return {}
        return answer if isinstance(answer, dict) else {}

    def pod_log(self, namespace: str, pod: str, container: str | None = None, tail_lines: int = 20,
                previous: bool = False) -> str:
        query: dict[str, str | int] = {"tailLines": int(tail_lines)}
        if container:
            query["container"] = container
        if previous:
            query["previous"] = "true"
        return self.get_text("/api/v1/namespaces/%s/pods/%s/log" % (quote(namespace, safe=""), quote(pod, safe="")),
                             query, accept="*/*")

# SPDX-License-Identifier: Apache-2.0
"""module_utils/k8s/factory.py and client.py's error mapping: each class of failure in its words, through
the factory; and the five runners (target_cluster, preflight, cpu_topology, pinned_cpus, verify) all
word a failure through them: what the runner was reading, then the mapping's why."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from unittest import mock

import pytest
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from urllib3.exceptions import ReadTimeoutError

from ansible_collections.kubernetes.core.plugins.module_utils.k8s import client as k8s_core_client
from ansible_collections.kubernetes.core.plugins.module_utils.k8s.client import get_api_client

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s import factory, target
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import ClientBuildError, KubeRequestError
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.runner import ClientOptions
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.preflight import run as preflight_run
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import run as topology_run
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import pinned as pinned_run
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import run as verify_run

from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import HTTPError

SERVER = "https://192.0.2.1:6443"
DICT_KUBECONFIG = {
    "apiVersion": "v1", "kind": "Config", "current-context": "test",
    "clusters": [{"name": "test", "cluster": {"server": SERVER}}],
    "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
    "users": [{"name": "admin", "user": {"token": "a-secret-token-0123456789"}}],
}


class Failing(object):
    """A dynamic client whose every request raises ``error``."""

    def __init__(self, error):
        self.error = error
        self.calls = 0

    def request(self, method, path, **params):
        self.calls += 1
        raise self.error


def get_client(dynamic):
    client = mock.Mock(client=dynamic)
    client.configuration.host = SERVER
    return mock.Mock(return_value=client)


def version_error(error):
    """The KubeRequestError of a ``/version`` read through the factory's client."""
    cluster = factory.connect(get_client(Failing(error)), None, {})
    assert cluster.host == SERVER
    with pytest.raises(KubeRequestError) as exc:
        cluster.api.version()
    return exc.value


def test_credentials_rejected():
    err = version_error(HTTPError(401, "Unauthorized"))
    assert err.status == 401
    assert err.message == ("unauthorized: the API server rejected the credentials (HTTP 401) while trying to get "
                           "non-resource URL /version: renew the token or client certificate of the kubeconfig's "
                           "user, or check the exec plugin")


@pytest.mark.parametrize("error, named", [
    (ConnectionRefusedError("refused"), "ConnectionRefusedError: refused"),
    (ReadTimeoutError(None, "/version", "Read timed out."), "ReadTimeoutError: None: Read timed out."),
])
def test_unreachable_and_timed_out(error, named):
    err = version_error(error)
    assert err.connection_error
    assert err.message == "cannot reach the API server to get non-resource URL /version: " + named


def test_forbidden_names_verb_resource_and_the_rule_to_grant():
    err = version_error(HTTPError(403, 'forbidden: User "u" cannot get path "/version"'))
    assert err.forbidden and err.verb == "get"
    assert err.message == ('permission denied: cannot get non-resource URL /version (GET /version): forbidden: User '
                           '"u" cannot get path "/version"; grant nonResourceURLs ["/version"] verbs ["get"] in a '
                           'ClusterRole (docs/rbac.md)')


def test_not_found():
    err = version_error(HTTPError(404, "the server could not find the requested resource"))
    assert err.not_found
    assert err.message == "not found: get non-resource URL /version (GET /version): the server could not find the " \
                          "requested resource"


@pytest.mark.parametrize("status", [500, 503])
def test_server_error(status):
    err = version_error(HTTPError(status, "etcdserver: request timed out"))
    assert err.message == ("server error: HTTP %d from the API server for get non-resource URL /version (GET "
                           "/version): etcdserver: request timed out" % status)


def test_client_that_cannot_be_built_names_kubeconfig_and_context():
    with pytest.raises(ClientBuildError) as exc:
        factory.connect(mock.Mock(side_effect=OSError("[Errno 2] No such file")), None,
                        {"kubeconfig": "/nowhere/config", "context": "staging"})
    assert exc.value.message == ("cannot create a Kubernetes client from kubeconfig /nowhere/config, context "
                                 "staging: OSError: [Errno 2] No such file")


def test_a_missing_context_through_kubernetes_core(monkeypatch):
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    monkeypatch.delenv("K8S_AUTH_CONTEXT", raising=False)
    params = ArgumentSpecValidator(target.argument_spec()).validate(
        {"kubeconfig": DICT_KUBECONFIG, "context": "nope"}).validated_parameters
    with pytest.raises(ClientBuildError) as exc:
        factory.connect(get_api_client, ClientOptions(params, False), params)
    message = exc.value.message
    assert message.startswith("cannot create a Kubernetes client from kubeconfig (a kubeconfig given as a dict), "
                              "context nope: Could not create API client: ")
    assert "nope" in message.split("Could not create API client: ", 1)[1]
    assert "a-secret-token" not in message


def test_the_default_kubeconfig_and_host_options_are_named(monkeypatch):
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    monkeypatch.delenv("K8S_AUTH_CONTEXT", raising=False)
    monkeypatch.delenv("K8S_AUTH_HOST", raising=False)
    assert factory.client_origin({}) == ("kubeconfig (the kubernetes client's default: KUBECONFIG, else "
                                         "~/.kube/config, or the in-cluster service account), context (the "
                                         "kubeconfig's current-context)")
    assert factory.client_origin({"host": SERVER, "api_key": "k"}) == "kubeconfig (host and credential options)"


# ------------------------------------------------------------------------------------ the five runners

RUNNERS = {
    "target_cluster": (target.argument_spec, target.run_target, {}, "cannot read the version of the cluster at "
                       + SERVER + " (context kind): ", "cannot read the cluster's version: "),
    "preflight": (preflight_run.argument_spec, preflight_run.run_preflight, {},
                  "preflight could not read the cluster: ", "preflight could not read the cluster: "),
    "cpu_topology": (topology_run.argument_spec, topology_run.run_cpu_topology, {"timeout": 1},
                     "cannot read the driver's CPU topology: ", "cannot read the driver's CPU topology: "),
    "pinned_cpus": (pinned_run.argument_spec, pinned_run.run_pinned_cpus, {"pod": "p"},
                    "cannot read the pinned CPUs of pod default/p: ", "cannot read the pinned CPUs of pod default/p: "),
    "verify": (verify_run.argument_spec, verify_run.run_verify, {"timeout": 1},
               "cannot verify VMI default/dra-cpu-verify's claim: ",
               "cannot verify VMI default/dra-cpu-verify's claim: "),
}


def runner_params(name, monkeypatch):
    for var in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_CONTEXT", "K8S_AUTH_HOST"):
        monkeypatch.delenv(var, raising=False)
    spec, args = RUNNERS[name][0](), dict(RUNNERS[name][2], kubeconfig="/k/config", context="kind")
    return ArgumentSpecValidator(spec).validate(args).validated_parameters


@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_each_runner_words_an_unreachable_server_through_the_mapping(name, monkeypatch):
    params = runner_params(name, monkeypatch)
    dynamic = Failing(ConnectionRefusedError("refused"))
    result = RUNNERS[name][1](params, False, None, get_client(dynamic))
    assert result["failed"] is True and dynamic.calls == 1
    doing, why = RUNNERS[name][3], result["msg"][len(RUNNERS[name][3]):]
    assert result["msg"].startswith(doing)
    assert why.startswith("cannot reach the API server to ") and why.endswith(": ConnectionRefusedError: refused")


@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_each_runner_words_a_client_that_cannot_be_built_through_the_mapping(name, monkeypatch):
    params = runner_params(name, monkeypatch)
    result = RUNNERS[name][1](params, False, None, mock.Mock(side_effect=ValueError("bad kubeconfig")))
    assert result["failed"] is True
    assert result["msg"] == RUNNERS[name][4] + ("cannot create a Kubernetes client from kubeconfig /k/config, "
                                                "context kind: ValueError: bad kubeconfig")


@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_each_runner_words_a_forbidden_read_through_the_mapping(name, monkeypatch):
    params = runner_params(name, monkeypatch)
    result = RUNNERS[name][1](params, False, None, get_client(Failing(HTTPError(403, "forbidden"))))
    why = result["msg"][len(RUNNERS[name][3]):]
    assert result["msg"].startswith(RUNNERS[name][3])
    assert why.startswith("permission denied: cannot ") and why.endswith(" (docs/rbac.md)") and "; grant " in why


@pytest.mark.parametrize("check_mode", [False, True])
def test_kubernetes_core_reads_the_dry_run_of_client_options(check_mode, monkeypatch):
    """``ClientOptions.server_side_dry_run`` is not dead: ``get_api_client`` reads it, as it does from an
    AnsibleK8SModule (kubernetes >= 18.20 here, so it follows check mode)."""
    monkeypatch.delenv("K8S_AUTH_KUBECONFIG", raising=False)
    params = ArgumentSpecValidator(target.argument_spec()).validate(
        {"kubeconfig": DICT_KUBECONFIG}).validated_parameters
    with mock.patch.object(k8s_core_client, "create_api_client", return_value=mock.Mock()):
        client = get_api_client(ClientOptions(params, check_mode))
    assert client.dry_run is check_mode
    assert client.configuration.host == SERVER

# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible.module_utils.common.parameters import remove_values
from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import (
    RedactingModule, active_context, auth_argument_spec, client_source, describe_target, kubeconfig_secrets)

TOKEN = "sa-token-0123456789abcdef"

DICT_KUBECONFIG = {
    "apiVersion": "v1",
    "kind": "Config",
    "current-context": "ctx-a",
    "clusters": [{"name": "c1", "cluster": {"server": "https://127.0.0.1:6443",
                                            "certificate-authority-data": "Q0EtREFUQQ=="}}],
    "contexts": [{"name": "ctx-a", "context": {"cluster": "c1", "user": "u1", "namespace": "default"}},
                 {"name": "ctx-b", "context": {"cluster": "c1", "user": "u2"}}],
    "users": [
        {"name": "u1", "user": {"token": TOKEN, "client-certificate-data": "Q0VSVA==",
                                "client-key-data": "S0VZLURBVEE="}},
        {"name": "u2", "user": {"username": "admin", "password": "pa55word"}},
        {"name": "u3", "user": {"auth-provider": {"name": "oidc", "config": {
            "client-id": "kubernetes", "client-secret": "oidc-secret", "id-token": "oidc-id-token",
            "refresh-token": "oidc-refresh", "idp-issuer-url": "https://issuer.example"}}}},
        {"name": "u4", "user": {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "aws",
                                         "args": ["eks", "get-token"],
                                         "env": [{"name": "AWS_SECRET_ACCESS_KEY", "value": "aws-secret"},
                                                 {"name": "AWS_PROFILE", "value": "prod-profile"}]}}},
    ],
}


def test_secret_options_no_log_and_kubeconfig_not():
    base = {"kubeconfig": {"type": "raw", "no_log": True}, "api_key": {}, "password": {}, "host": {}}
    spec = auth_argument_spec(base)
    assert spec["kubeconfig"] == {"type": "raw", "no_log": False}
    assert spec["api_key"] == {"no_log": True}
    assert spec["password"] == {"no_log": True}
    assert spec["host"] == {}
    assert base["kubeconfig"] == {"type": "raw", "no_log": True}, "the shared spec must not be modified"


def test_bundled_kubernetes_core_spec():
    spec = auth_argument_spec(AUTH_ARG_SPEC)
    assert set(spec) == set(AUTH_ARG_SPEC)
    assert spec["kubeconfig"]["no_log"] is False
    assert all(spec[name]["no_log"] for name in ("api_key", "password"))


def test_only_the_secret_fields_of_a_dict_kubeconfig():
    assert kubeconfig_secrets(DICT_KUBECONFIG) == {
        TOKEN, "S0VZLURBVEE=", "pa55word", "oidc-secret", "oidc-id-token", "oidc-refresh",
        "aws-secret", "prod-profile", "Q0VSVA==", "Q0EtREFUQQ=="}


@pytest.mark.parametrize("public", ["v1", "Config", "https://127.0.0.1:6443", "ctx-a", "c1", "u1", "default",
                                    "admin", "kubernetes", "oidc", "aws", "eks",
                                    "get-token", "https://issuer.example", "AWS_SECRET_ACCESS_KEY"])
def test_public_fields_stay_readable(public):
    assert public not in kubeconfig_secrets(DICT_KUBECONFIG)


@pytest.mark.parametrize("value", [None, "", "~/.kube/config", [], {"users": None}, {"users": [None, {"user": "x"}]},
                                   {"users": [{"user": {"token": None, "password": ""}}]},
                                   {"clusters": [None, {"cluster": None}, {"cluster": {"server": "https://s"}}]}])
def test_nothing_secret_in_paths_and_odd_shapes(value):
    assert kubeconfig_secrets(value) == set()


def test_masking_a_result_hides_the_token_and_keeps_the_versions():
    """What Ansible does with no_log_values at exit_json: the measured symptom of issue 10 is gone."""
    result = {"msg": "Kubernetes v1.36.3; resource.k8s.io/v1 is served",
              "invocation": {"module_args": {"kubeconfig": DICT_KUBECONFIG}}}
    masked = remove_values(result, kubeconfig_secrets(DICT_KUBECONFIG))
    text = json.dumps(masked)
    assert masked["msg"] == "Kubernetes v1.36.3; resource.k8s.io/v1 is served"
    for secret in kubeconfig_secrets(DICT_KUBECONFIG):
        assert secret not in text
    assert "https://127.0.0.1:6443" in text


def test_client_source_follows_kubernetes_core():
    assert client_source({"kubeconfig": "~/k"}, {})[0:2] == ("file", client_source({"kubeconfig": "~/k"}, {})[1])
    assert client_source({"kubeconfig": "~/k"}, {})[1].endswith("/k")
    assert client_source({}, {"K8S_AUTH_KUBECONFIG": "/env/k"}) == ("file", "/env/k", None)
    assert client_source({"kubeconfig": "/p"}, {"K8S_AUTH_KUBECONFIG": "/env/k"})[1] == "/p"
    assert client_source({}, {}) == ("default", None, None)
    assert client_source({"context": "x"}, {}) == ("default", None, "x")
    assert client_source({}, {"K8S_AUTH_CONTEXT": "y"}) == ("default", None, "y")
    assert client_source({"kubeconfig": DICT_KUBECONFIG}, {})[0] == "dict"
    assert client_source({"host": "https://h", "api_key": "t"}, {}) == ("host", None, None)
    assert client_source({"host": "https://h"}, {})[0] == "default"


def test_active_context():
    assert active_context("dict", DICT_KUBECONFIG, None) == "ctx-a"
    assert active_context("dict", DICT_KUBECONFIG, "ctx-b") == "ctx-b"
    assert active_context("host", None, None) is None
    assert active_context("file", "/k", None, loader=lambda p: ([], {"name": "from-" + p})) == "from-/k"
    assert active_context("default", None, None, loader=lambda p: ([], {"name": "dflt"})) == "dflt"

    def broken(path):
        raise IOError("no such file")
    assert active_context("file", "/nope", None, loader=broken) is None


def test_describe_target_reads_a_real_kubeconfig_file(tmp_path):
    import yaml
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(DICT_KUBECONFIG))
    got = describe_target({"kubeconfig": str(path)}, "https://127.0.0.1:6443", environ={})
    assert got == {"server": "https://127.0.0.1:6443", "context": "ctx-a", "kubeconfig": str(path)}
    got = describe_target({"kubeconfig": DICT_KUBECONFIG, "context": "ctx-b"}, "https://s", environ={})
    assert got["context"] == "ctx-b" and "dict" in got["kubeconfig"]


def test_redacting_module_registers_the_secrets_while_loading_the_parameters():
    from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import patch_module_args
    with patch_module_args({"kubeconfig": DICT_KUBECONFIG, "_ansible_no_log": False}):
        module = RedactingModule(argument_spec=auth_argument_spec(AUTH_ARG_SPEC))
    assert kubeconfig_secrets(DICT_KUBECONFIG) <= module.no_log_values
    assert "v1" not in module.no_log_values and "https://127.0.0.1:6443" not in module.no_log_values
    with patch_module_args({"kubeconfig": "/path/kubeconfig"}):
        module = RedactingModule(argument_spec=auth_argument_spec(AUTH_ARG_SPEC))
    assert "/path/kubeconfig" not in module.no_log_values


def _exit_output(capsys, args, **result):
    """What RedactingModule.exit_json really writes (ansible-core's own exit, no test double)."""
    from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import patch_module_args
    with patch_module_args(args):
        module = RedactingModule(argument_spec=auth_argument_spec(AUTH_ARG_SPEC))
        capsys.readouterr()
        with pytest.raises(SystemExit):
            module.exit_json(**result)
    return json.loads(capsys.readouterr().out)


def test_facts_without_a_secret_skip_the_walk_and_come_back_whole(capsys, monkeypatch):
    from ansible.module_utils.common import parameters
    walked = []
    real = parameters.remove_values

    def spy(value, no_log_strings):
        walked.append(value)
        return real(value, no_log_strings)
    monkeypatch.setattr("ansible.module_utils.basic.remove_values", spy)
    facts = {"dra_cpu_topology": {"nodes": {"node%02d" % i: {"cells": [{"id": 0, "devices": ["cpudevnuma000"],
                                                                        "allocatable_cpus": 4}]}
                                            for i in range(3)}}}
    out = _exit_output(capsys, {"kubeconfig": DICT_KUBECONFIG}, ansible_facts=facts, msg="token %s" % TOKEN)
    assert out["ansible_facts"] == facts
    # the rest of the result is walked as before: the token in msg is masked
    assert TOKEN not in json.dumps(out) and "********" in out["msg"]
    # the result remove_values walked had no facts in it
    results = [w for w in walked if isinstance(w, dict) and "msg" in w]
    assert results and all(w["ansible_facts"] == {} for w in results), results


def test_facts_that_hold_a_secret_are_masked_as_before(capsys):
    facts = {"dra_cpu_topology": {"nodes": {"n1": {"note": "x%sy" % TOKEN}, "n2": {"note": 'q"%s' % "pa55word"}}}}
    out = _exit_output(capsys, {"kubeconfig": DICT_KUBECONFIG}, ansible_facts=facts)
    text = json.dumps(out)
    assert TOKEN not in text and "pa55word" not in text
    assert out["ansible_facts"]["dra_cpu_topology"]["nodes"]["n1"]["note"] == "x********y"


def test_may_hold_no_log_value_finds_a_value_inside_any_string_or_key():
    from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.auth import may_hold_no_log_value
    assert may_hold_no_log_value({"a": ["x", {"b": 'pre-se"cr\\et-post'}]}, {'se"cr\\et'})
    assert may_hold_no_log_value({"a": "n\u00e4me-\u00fcberkey"}, {"\u00fcberkey"})
    assert may_hold_no_log_value({"hidden-in-key": 1}, {"in-key"})
    assert not may_hold_no_log_value({"a": ["x", {"b": "public"}], "n": 3}, {"secret", ""})
    assert not may_hold_no_log_value({"a": "anything"}, set())
    # what JSON cannot write is walked as before
    assert may_hold_no_log_value({"a": object()}, {"s"})


from ansible.module_utils.basic import AnsibleModule  # noqa: E402  pylint: disable=wrong-import-position


def _exit_text(capsys, monkeypatch, profile, **result):
    """The text RedactingModule.exit_json prints, and what ansible-core's own module encoder of the
    profile writes for the same result."""
    from ansible.module_utils import basic
    from ansible.module_utils.common import json as common_json
    from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import patch_module_args
    encoder = common_json.get_module_encoder(profile, common_json.Direction.MODULE_TO_CONTROLLER)
    written = []
    real = basic.AnsibleModule._record_module_result

    def spy(self, o):
        written.append(json.dumps(o, cls=encoder))
        return real(self, o)
    monkeypatch.setattr(basic.AnsibleModule, "_record_module_result", spy)
    with patch_module_args({"kubeconfig": "/k"}):
        monkeypatch.setattr(basic, "_ANSIBLE_PROFILE", profile)
        module = RedactingModule(argument_spec=auth_argument_spec(AUTH_ARG_SPEC))
        capsys.readouterr()
        with pytest.raises(SystemExit):
            module.exit_json(**result)
    return capsys.readouterr().out, written


def test_a_plain_result_is_written_as_the_legacy_encoder_writes_it(capsys, monkeypatch):
    if not hasattr(AnsibleModule, "_record_module_result"):
        pytest.skip("ansible-core < 2.19 has no _record_module_result hook: its own encoder writes every result")
    facts = {"dra_cpu_topology": {"nodes": {"n\u00e4": {"cells": [{"id": 0, "devices": ("cpudevnuma000",)}]}},
                                  "ratio": 1.5, "none": None, 7: "int key"}}
    out, written = _exit_text(capsys, monkeypatch, "legacy", ansible_facts=facts, msg="ok")
    # the plain path: ansible-core's writer was not called, the text is what its encoder would write
    assert written == []
    sent = json.loads(out)
    from ansible.module_utils.common import json as common_json
    encoder = common_json.get_module_encoder("legacy", common_json.Direction.MODULE_TO_CONTROLLER)
    assert out == "\n%s\n" % json.dumps(sent, cls=encoder)
    assert sent["ansible_facts"]["dra_cpu_topology"]["nodes"]["n\u00e4"]["cells"][0]["devices"] == ["cpudevnuma000"]
    assert sent["ansible_facts"]["dra_cpu_topology"]["7"] == "int key"


def test_what_json_cannot_write_goes_to_ansible_cores_encoder(capsys, monkeypatch):
    import datetime
    if not hasattr(AnsibleModule, "_record_module_result"):
        pytest.skip("ansible-core < 2.19 has no _record_module_result hook: its own encoder writes every result")
    out, written = _exit_text(capsys, monkeypatch, "legacy", when=datetime.date(2026, 12, 2), ids={3, 1})
    assert len(written) == 1 and out == "\n%s\n" % written[0]
    assert json.loads(out)["when"] == "2026-12-02" and sorted(json.loads(out)["ids"]) == [1, 3]
    # any other wire format (the modern one carries tags) is always ansible-core's
    out, written = _exit_text(capsys, monkeypatch, "modern", msg="plain")
    assert len(written) == 1 and json.loads(out)["msg"] == "plain"

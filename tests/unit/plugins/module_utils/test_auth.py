# SPDX-License-Identifier: Apache-2.0
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubernetes.core.plugins.module_utils.args_common import AUTH_ARG_SPEC

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.auth import auth_argument_spec


def test_secrets_are_no_log_whatever_kubernetes_core_says():
    base = {"kubeconfig": {"type": "raw"}, "api_key": {}, "host": {}}
    spec = auth_argument_spec(base)
    assert spec["kubeconfig"] == {"type": "raw", "no_log": True}
    assert spec["api_key"] == {"no_log": True}
    assert spec["host"] == {}
    assert base["kubeconfig"] == {"type": "raw"}, "the shared spec must not be modified"


def test_bundled_kubernetes_core_spec():
    spec = auth_argument_spec(AUTH_ARG_SPEC)
    assert set(spec) == set(AUTH_ARG_SPEC)
    assert all(spec[name]["no_log"] for name in ("kubeconfig", "api_key", "password"))

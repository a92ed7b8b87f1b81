# SPDX-License-Identifier: Apache-2.0
"""verify's two judgement defaults, pinned by value wherever they are set: ``allow_missing_dra_cpuset``
false (a container without ``DRA_CPUSET_*`` fails: KubeVirt requires the variable, VEP 152) and
``require_metadata`` false (KubeVirt's CPU path does not read the KEP-5304 metadata). Read from the
module's argument spec (what ``run_verify`` gets), the module's DOCUMENTATION, the role's defaults, the
role's argument_specs and the role's verify task (which role variable feeds which option). The check is a
function (``mismatches``) so that a changed default is shown to fail it."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

import yaml

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify import run as V
from ansible_collections.kubevirtci.dra_cpu.plugins.modules import verify as verify_module

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
ROLE = os.path.join(REPO, "roles", "dra_cpu")
# option -> (role variable, pinned value)
PINNED = {"allow_missing_dra_cpuset": ("dra_cpu_verify_allow_missing_dra_cpuset", False),
          "require_metadata": ("dra_cpu_verify_require_metadata", False)}


def _yaml(*parts):
    with open(os.path.join(ROLE, *parts)) as f:
        return yaml.safe_load(f)


def sources():
    """Each source's {option: default} for the pinned options, and the role task's {option: template}."""
    spec = V.argument_spec()
    docs = yaml.safe_load(verify_module.DOCUMENTATION)["options"]
    defaults = _yaml("defaults", "main.yml")
    role_spec = _yaml("meta", "argument_specs.yml")["argument_specs"]["verify"]["options"]
    task = next(t for t in _yaml("tasks", "verify.yml") if "kubevirtci.dra_cpu.verify" in t)
    return {
        "module argument_spec": {o: spec[o].get("default") for o in PINNED},
        "module DOCUMENTATION": {o: docs[o].get("default") for o in PINNED},
        "role defaults/main.yml": {o: defaults.get(var) for o, (var, _v) in PINNED.items()},
        "role meta/argument_specs.yml (verify)": {o: role_spec[var].get("default") for o, (var, _v) in PINNED.items()},
    }, task["kubevirtci.dra_cpu.verify"]


def mismatches(found, task):
    """The problems: a default that is not its pinned value (by value and type), or an option the role's
    task does not feed from its own variable."""
    problems = []
    for source, values in found.items():
        for option, (_var, want) in PINNED.items():
            got = values.get(option)
            if got is not want:
                problems.append("%s: %s defaults to %r, pinned %r" % (source, option, got, want))
    for option, (var, _want) in PINNED.items():
        if task.get(option) != "{{ %s }}" % var:
            problems.append("tasks/verify.yml: %s is %r, not {{ %s }}" % (option, task.get(option), var))
    return problems


def test_verify_defaults_are_pinned_by_value_everywhere():
    found, task = sources()
    assert len(found) == 4 and all(set(v) == set(PINNED) for v in found.values())
    assert mismatches(found, task) == []


def test_a_changed_default_fails_the_pin():
    """The negative control: each source with each option flipped (or made the string "false") fails."""
    found, task = sources()
    for source in found:
        for option in PINNED:
            for bad in (True, "false", None):
                changed = copy.deepcopy(found)
                changed[source][option] = bad
                assert mismatches(changed, task) == ["%s: %s defaults to %r, pinned False" % (source, option, bad)]
    for option, (var, _want) in PINNED.items():
        rewired = dict(task, **{option: "{{ true }}"})
        assert mismatches(found, rewired) == ["tasks/verify.yml: %s is '{{ true }}', not {{ %s }}" % (option, var)]

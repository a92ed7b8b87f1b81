# SPDX-License-Identifier: Apache-2.0
"""Make ``ansible_collections.kubevirtci.dra_cpu`` importable for pytest.

``<repo>/.collections/ansible_collections/kubevirtci/dra_cpu`` is a symlink to
the repository root (``make deps`` creates it). ansible-test (which runs from
a real ansible_collections tree) does not need this. Without either, the run
stops at once with "run make deps" instead of one import error per test file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import os
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIONS = os.path.join(REPO, ".collections")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

if os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections")) and COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


def _importable():
    try:
        return importlib.import_module("ansible_collections.kubevirtci.dra_cpu") is not None
    except ImportError:
        return False


def pytest_configure(config):
    if not _importable():
        raise pytest.UsageError(
            "ansible_collections.kubevirtci.dra_cpu is not importable: %s/ansible_collections/kubevirtci/"
            "dra_cpu (a symlink to the checkout) is missing; run make deps" % COLLECTIONS)


def load_slices(name):
    """The ``items`` of a fixture ResourceSliceList under fixtures/slices."""
    with open(os.path.join(FIXTURES, "slices", name)) as fh:
        return yaml.safe_load(fh)["items"]


@pytest.fixture
def slices():
    return load_slices

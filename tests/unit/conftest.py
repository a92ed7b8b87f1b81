# SPDX-License-Identifier: Apache-2.0
"""Make ``ansible_collections.kubevirtci.dra_cpu`` importable for pytest.

``<repo>/.collections/ansible_collections/kubevirtci/dra_cpu`` is a symlink to
the repository root (``make deps`` creates it). ansible-test (which runs from
a real ansible_collections tree) does not need this.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import sys

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
COLLECTIONS = os.path.join(REPO, ".collections")
FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures")

if os.path.isdir(os.path.join(COLLECTIONS, "ansible_collections")) and COLLECTIONS not in sys.path:
    sys.path.insert(0, COLLECTIONS)


def load_slices(name):
    """The ``items`` of a fixture ResourceSliceList under fixtures/slices."""
    with open(os.path.join(FIXTURES, "slices", name)) as fh:
        return yaml.safe_load(fh)["items"]


@pytest.fixture
def slices():
    return load_slices

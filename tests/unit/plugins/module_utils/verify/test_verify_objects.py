# SPDX-License-Identifier: Apache-2.0
"""verify/objects.py: each deletion waited for (k8s/wait.py's polling source), the problems returned."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.k8s.client import RawApi
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.verify.objects import Objects
from ansible_collections.kubevirtci.dra_cpu.tests.unit.plugins.modules.fake_cluster import Clock, FakeCluster, HTTPError

POD = "/api/v1/namespaces/default/pods/virt-launcher-v"


class Going(FakeCluster):
    """The pod is there for ``reads`` GETs after its DELETE, then 404."""

    def __init__(self, reads):
        FakeCluster.__init__(self, {POD: {"metadata": {"name": "virt-launcher-v"}}})
        self.reads = reads

    def request(self, method, path, **params):
        if method == "get" and path == POD:
            self.reads -= 1
            if self.reads < 0:
                raise HTTPError(404, "gone")
        return FakeCluster.request(self, method, path, **params)


def test_a_deletion_is_waited_for_once_a_second():
    clock = Clock()
    cluster = Going(reads=3)
    objects = Objects(RawApi(cluster), "default", "v", clock, clock.sleep)
    assert objects.delete(30, (objects.pod,)) == [] and clock.now == 3.0
    assert cluster.reads == -1   # read at 0, 1, 2 s (there) and 3 s (gone)


def test_an_object_that_stays_is_a_problem_after_the_timeout():
    clock = Clock()
    objects = Objects(RawApi(Going(reads=10 ** 6)), "default", "v", clock, clock.sleep)
    assert objects.delete(5, (objects.pod,)) == ["%s still there 5s after its deletion" % POD] and clock.now == 5.0

"""Waiter 3b: the direct module run with the suggested fix applied from outside (plugins/ is not the
bench's to edit): gc.freeze() right before AnsibleModule.exit_json/fail_json, so that interpreter
teardown does not deallocate the large heap of kubernetes/ansible imports one object at a time (measured: teardown
0.55 s -> 0.06 s). Everything else is plugins/modules/cpu_topology.py unchanged.
    python bench/module_gc_freeze.py args.json
"""
import gc
import os
import runpy
import sys

from ansible.module_utils import basic

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.join(REPO, "plugins", "modules", "cpu_topology.py")

for _name in ("exit_json", "fail_json"):
    _orig = getattr(basic.AnsibleModule, _name)

    def _wrap(self, *a, _o=_orig, **k):
        gc.freeze()
        return _o(self, *a, **k)
    setattr(basic.AnsibleModule, _name, _wrap)

sys.argv = [MODULE] + sys.argv[1:]
runpy.run_path(MODULE, run_name="__main__")

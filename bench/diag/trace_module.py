"""Run plugins/modules/cpu_topology.py with timestamps (stderr) at: start, each watch event applied,
wait() return, exit_json/fail_json, interpreter exit. Diagnostics for the latency breakdown.
    python bench/diag/trace_module.py args.json
"""
import atexit
import os
import runpy
import sys
import time

T = lambda tag: sys.stderr.write("TRACE %.4f %s\n" % (time.time(), tag))  # noqa: E731
T("start")
atexit.register(lambda: T("atexit-last"))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(REPO, "plugins", "modules", "cpu_topology.py")
from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.topology import waiter as W  # noqa: E402
from ansible.module_utils import basic  # noqa: E402
T("imported")
_apply, _wait, _list = W.SliceWaiter._apply, W.SliceWaiter.wait, W.SliceWaiter._list


def apply(self, ev):
    T("event-received %s" % ev.get("type"))
    r = _apply(self, ev)
    return r


def done(self):
    t = time.time()
    r = W.SliceWaiter.__orig_done(self)
    sys.stderr.write("TRACE %.4f done-check %.4f s -> %s\n" % (time.time(), time.time() - t, r))
    return r


def wait(self, *a, **k):
    T("wait-start")
    r = _wait(self, *a, **k)
    T("wait-return")
    return r


def lst(self):
    T("list-start")
    r = _list(self)
    T("list-done %d" % len(self.slices))
    return r


W.SliceWaiter.__orig_done = W.SliceWaiter._done
W.SliceWaiter._done = done
W.SliceWaiter._apply = apply
W.SliceWaiter.wait = wait
W.SliceWaiter._list = lst
for name in ("exit_json", "fail_json"):
    orig = getattr(basic.AnsibleModule, name)

    def wrap(self, *a, _o=orig, _n=name, **k):
        T(_n)
        return _o(self, *a, **k)
    setattr(basic.AnsibleModule, name, wrap)
import threading  # noqa: E402


def _first():
    T("atexit-first threads=%s" % [t.name for t in threading.enumerate()])
    import atexit as _a
    T("atexit handlers=%d" % _a._ncallbacks())


atexit.register(_first)
_orig_shutdown = threading._shutdown


def _shutdown():
    T("threading-shutdown-start")
    _orig_shutdown()
    T("threading-shutdown-end")


threading._shutdown = _shutdown
sys.argv = [MODULE] + sys.argv[1:]
runpy.run_path(MODULE, run_name="__main__")

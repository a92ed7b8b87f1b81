"""The integration tests that need a binary built after the first test cluster's, and their order.

`make integration` builds only what every test cluster needs (etcd, helm, Kubernetes 1.36: `make
build-first`); `make test` builds the rest behind its stages (hack/build_behind.sh). A test that
needs one of the later builds carries `pytest.mark.late_build("<what>")`, `<what>` naming a line of
the Makefile's `build-binaries` recipe ("helm-old", "real-node", "kubernetes v1.35.4"). Such tests
run after all the others, in that recipe's order (`order`), and before the first of them
`ensure(what)` asks tests/cluster/build.sh for it: a no-op when cached, else it waits for the build
behind (build.sh holds one lock per output directory) or builds it itself. This happens outside the
test's own timeout (conftest.py's `pytest_runtest_protocol`). A build that fails fails its tests with
build.sh's last lines; nothing is skipped for want of a binary.
"""
import os
import re
import subprocess
import time

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_SH = os.path.join(REPO, "tests", "cluster", "build.sh")
_LINE = re.compile(r"^\t@?(?:CLUSTER_K8S_VERSION=(\S+) )?tests/cluster/build\.sh (\S+)")


def recipe(makefile=os.path.join(REPO, "Makefile")):
    """[(what, env)] of the Makefile's build-binaries recipe, in its order ("kubernetes v1.35.4" for a
    line that sets CLUSTER_K8S_VERSION)."""
    with open(makefile) as f:
        text = f.read()
    body = re.split(r"^build-binaries:", text, maxsplit=1, flags=re.M)[1].split("\n\n", 1)[0]
    steps = []
    for line in body.splitlines():
        m = _LINE.match(line)
        if m:
            version, target = m.groups()
            steps.append((f"{target} {version}" if version else target,
                          {"CLUSTER_K8S_VERSION": version} if version else {}))
    return steps


def order(what, steps=None):
    """The position of `what` in the recipe (unknown names last, so a typo cannot hide a test)."""
    names = [step[0] for step in (steps if steps is not None else recipe())]
    if what not in names:
        raise ValueError(f"late_build({what!r}): not a line of the Makefile's build-binaries recipe "
                         f"({', '.join(names)})")
    return names.index(what)


def ensure(what, steps=None):
    """Build (or wait for) `what`: (seconds, None) when it is there, else (seconds, error text)."""
    env = dict(os.environ)
    for name, extra in (steps if steps is not None else recipe()):
        if name == what:
            env.update(extra)
            break
    else:
        return 0.0, f"late_build({what!r}) is not in the Makefile's build-binaries recipe"
    target = what.split()[0]
    start = time.monotonic()
    r = subprocess.run([BUILD_SH, target], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    took = time.monotonic() - start
    if r.returncode != 0:
        return took, f"tests/cluster/build.sh {target} failed (exit {r.returncode}):\n{r.stderr[-3000:]}"
    return took, None

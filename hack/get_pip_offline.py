"""Offline replacement for ansible-test's pip bootstrap script (get-pip.py).

ansible-test bootstraps pip into its sanity-test virtualenvs with a get-pip.py it downloads from a
host this machine cannot reach. This script does the same job with what is reachable: it installs
the pip bundled with CPython (ensurepip), then installs the exact packages ansible-test asked for
(e.g. pip==24.2) from the package index. hack/setup.sh copies it to the path ansible-test looks
for (~/.ansible/test/cache/get_pip_<version>.py).
"""
import ensurepip
import os
import subprocess
import sys

ensurepip.bootstrap(upgrade=True)
args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
# ansible-test runs pip with a scrubbed environment and an isolated config: pass the system CA
# bundle explicitly so a TLS-intercepting package proxy keeps working.
for bundle in (os.environ.get("PIP_CERT"), os.environ.get("SSL_CERT_FILE"), "/etc/ssl/certs/ca-certificates.crt"):
    if bundle and os.path.exists(bundle):
        args = ["--cert", bundle] + args
        break
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install", *args]))

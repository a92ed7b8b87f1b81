# SPDX-License-Identifier: Apache-2.0
"""hack/lint_collection_docs.sh (the antsibull-docs stage of `make lint`) on a temporary dir that
sorts after the venv's own collections and sits inside the checkout's git-ignored venv: the layout
that made CI fail ("unknown doc_fragment(s) ... kubernetes.core.k8s_auth_options"), because
antsibull-docs copied the venv's kubernetes.core, which git reports as empty."""

import os
import shutil
import subprocess

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENV = os.path.join(REPO, ".venv")
SCRIPT = os.path.join(REPO, "hack", "lint_collection_docs.sh")


def test_docs_lint_uses_its_own_kubernetes_core_whatever_the_temporary_dir():
    if not os.access(os.path.join(VENV, "bin", "antsibull-docs"), os.X_OK):
        pytest.skip("no .venv/bin/antsibull-docs (run `make deps` first)")
    # under .venv: git-ignored, and ".venv/zz..." sorts after ".venv/lib/.../ansible_collections"
    tmpdir = os.path.join(VENV, "zz-lint-docs-test")
    shutil.rmtree(tmpdir, ignore_errors=True)
    os.makedirs(tmpdir)
    try:
        proc = subprocess.run(
            ["bash", SCRIPT], cwd=REPO, capture_output=True, text=True, timeout=600,
            env={**os.environ, "TMPDIR": tmpdir, "VENV": ".venv"}, check=False)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    out = proc.stdout + proc.stderr
    assert "unknown doc_fragment" not in out, out
    assert proc.returncode == 0, out
    assert "antsibull-docs lint-collection-docs: no findings" in out

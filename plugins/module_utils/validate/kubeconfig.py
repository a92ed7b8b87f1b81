# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The kubeconfig check of the validate stage: ``dra_cpu_kubeconfig`` exists and is a kubeconfig and
``dra_cpu_context`` one of its contexts. Reads the context names only, never quotes the file.
"""

from __future__ import absolute_import, annotations, division, print_function

__metaclass__ = type

import os

from ansible_collections.kubevirtci.dra_cpu.plugins.module_utils.validate.checks import blank, err


def _kubeconfig_contexts(path: str) -> list[str] | None:
    """Context names of a kubeconfig file; ValueError with the reason (never its contents)."""
    try:
        with open(path) as fh:
            text = fh.read()
    except (IOError, OSError) as exc:
        raise ValueError("cannot be read (%s)" % (exc.strerror or type(exc).__name__))
    try:
        import yaml
        data = yaml.safe_load(text)
    except ImportError:  # pragma: no cover - PyYAML comes with ansible-core
        return None
    except Exception:  # yaml errors quote the offending text: keep it (it may hold credentials) out
        raise ValueError("is not a YAML kubeconfig file")
    if not isinstance(data, dict):
        raise ValueError("is not a kubeconfig file")
    return [((c or {}).get("name") or "") for c in (data.get("contexts") or []) if isinstance(c, dict)]


def check_kubeconfig(kubeconfig: str | None, context: str | None) -> list[str]:
    """Errors for a kubeconfig path that does not exist / is not a kubeconfig, or a context it
    does not define. Without an explicit path the context is looked up in the file kubernetes.core
    would use (K8S_AUTH_KUBECONFIG, KUBECONFIG, ~/.kube/config) when that file exists."""
    errors: list[str] = []
    explicit = not blank(kubeconfig)
    if explicit:
        path = os.path.expanduser(str(kubeconfig).strip())
        if not os.path.isfile(path):
            return [err("kubeconfig", kubeconfig, "does not exist or is not a file",
                        "the path of a kubeconfig file, or empty for K8S_AUTH_KUBECONFIG/KUBECONFIG/~/.kube/config")]
    else:
        path = os.environ.get("K8S_AUTH_KUBECONFIG") or os.environ.get("KUBECONFIG") or "~/.kube/config"
        path = os.path.expanduser(path.split(os.pathsep)[0])
        if blank(context) or not os.path.isfile(path):
            return errors
    try:
        contexts = _kubeconfig_contexts(path)
    except ValueError as exc:
        if explicit:
            errors.append(err("kubeconfig", kubeconfig, str(exc), "a kubeconfig file"))
        return errors
    if contexts is not None and not blank(context) and str(context).strip() not in contexts:
        errors.append(err("context", context, "is not a context of %s" % path,
                          "one of %s, or empty for its current context" % (", ".join(contexts) or "(none)")))
    return errors

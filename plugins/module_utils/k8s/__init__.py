# -*- coding: utf-8 -*-
# SPDX-License-Identifier: Apache-2.0
"""The lower layer every cluster stage shares: the API client and its errors; no stage logic.

``factory.py`` builds the client and words a failure; ``client.py`` holds the raw requests and the
error mapping; ``auth.py`` the auth options and their redaction; ``runner.py`` runs a module's run
function in either process; ``target.py`` is target_cluster's run; ``types.py`` the untyped shapes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

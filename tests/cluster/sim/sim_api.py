"""Small, fast JSON client for the API server: kubeconfig loading by the `kubernetes` client,
requests over one shared urllib3 pool (raw JSON dicts, no model (de)serialisation: cheap enough for
1,000 simulated nodes), a client-side token bucket (QPS/burst), and list+watch helpers.
Owns: transport, rate limit, errors (ApiError), informer loop. Must not: know what the simulator
does with the objects (bench/cluster_ctl.py reuses it too).
"""
from __future__ import annotations

import json
import logging
import ssl
import threading
import time
import urllib.parse

import urllib3

log = logging.getLogger("sim.api")

MERGE = "application/merge-patch+json"
STRATEGIC = "application/strategic-merge-patch+json"


class ApiError(Exception):
    def __init__(self, status, body, method="", path=""):
        self.status = status
        self.body = body
        try:
            self.message = json.loads(body).get("message", body)
        except (ValueError, AttributeError, TypeError):
            self.message = body
        super().__init__(f"{method} {path}: HTTP {status}: {self.message}")


class TokenBucket:
    def __init__(self, qps: float, burst: int):
        self.qps, self.burst = float(qps), float(burst)
        self.tokens = float(burst)
        self.t = time.monotonic()
        self.lock = threading.Lock()

    def take(self):
        if self.qps <= 0:
            return
        while True:
            with self.lock:
                now = time.monotonic()
                self.tokens = min(self.burst, self.tokens + (now - self.t) * self.qps)
                self.t = now
                if self.tokens >= 1:
                    self.tokens -= 1
                    return
                wait = (1 - self.tokens) / self.qps
            time.sleep(wait)


class Api:
    def __init__(self, kubeconfig: str, qps: float = 200, burst: int = 400, pool_size: int = 32):
        from kubernetes import client, config
        cfg = client.Configuration()
        config.load_kube_config(config_file=kubeconfig, client_configuration=cfg)
        self.host = cfg.host.rstrip("/")
        headers = {"Accept": "application/json", "User-Agent": "dracpu-sim/1.0"}
        token = (cfg.api_key or {}).get("authorization") or (cfg.api_key or {}).get("BearerToken")
        if token:
            prefix = (cfg.api_key_prefix or {}).get("authorization", "")
            headers["Authorization"] = token if token.lower().startswith("bearer") else f"{prefix or 'Bearer'} {token}"
        kw = {}
        if self.host.startswith("https"):
            if cfg.verify_ssl:
                kw["cert_reqs"] = ssl.CERT_REQUIRED
                if cfg.ssl_ca_cert:
                    kw["ca_certs"] = cfg.ssl_ca_cert
            else:
                kw["cert_reqs"] = ssl.CERT_NONE
            if cfg.cert_file:
                kw["cert_file"] = cfg.cert_file
                kw["key_file"] = cfg.key_file
            if getattr(cfg, "tls_server_name", None):
                kw["server_hostname"] = cfg.tls_server_name
        self.pool = urllib3.PoolManager(num_pools=4, maxsize=pool_size, block=False, retries=False, **kw)
        self.headers = headers
        self.limiter = TokenBucket(qps, burst)
        self.count = 0

    def url(self, path, query=None):
        u = self.host + path
        if query:
            u += "?" + urllib.parse.urlencode(query)
        return u

    def req(self, method, path, body=None, query=None, ctype=None, timeout=30.0, limited=True):
        if limited:
            self.limiter.take()
        headers = dict(self.headers)
        data = None
        if body is not None:
            headers["Content-Type"] = ctype or "application/json"
            data = json.dumps(body).encode()
        self.count += 1
        r = self.pool.request(method, self.url(path, query), body=data, headers=headers,
                              timeout=urllib3.Timeout(connect=10, read=timeout), preload_content=True)
        if not 200 <= r.status < 300:
            raise ApiError(r.status, r.data.decode(errors="replace"), method, path)
        return json.loads(r.data) if r.data else None

    def get(self, path, **kw):
        return self.req("GET", path, **kw)

    def create(self, path, body):
        return self.req("POST", path, body)

    def update(self, path, body):
        return self.req("PUT", path, body)

    def patch(self, path, body, ctype=MERGE):
        return self.req("PATCH", path, body, ctype=ctype)

    def delete(self, path, body=None, ignore_missing=True):
        try:
            return self.req("DELETE", path, body)
        except ApiError as e:
            if ignore_missing and e.status in (404, 409):
                return None
            raise

    def list_all(self, path, query=None):
        """Paginated list -> (items, resourceVersion)."""
        items, cont = [], None
        while True:
            q = list(query or []) + [("limit", "500")]
            if cont:
                q.append(("continue", cont))
            out = self.get(path, query=q, timeout=60)
            items.extend(out.get("items") or [])
            cont = (out.get("metadata") or {}).get("continue")
            if not cont:
                return items, (out.get("metadata") or {}).get("resourceVersion", "")

    def watch(self, path, query, rv, stop: threading.Event, timeout_seconds=240):
        """Yield watch events (type, object) from rv until the server closes; raises ApiError(410) when
        the resourceVersion is too old (caller re-lists)."""
        q = list(query or []) + [("watch", "1"), ("resourceVersion", rv), ("allowWatchBookmarks", "true"),
                                 ("timeoutSeconds", str(timeout_seconds))]
        self.limiter.take()
        r = self.pool.request("GET", self.url(path, q), headers=self.headers, preload_content=False,
                              timeout=urllib3.Timeout(connect=10, read=timeout_seconds + 30))
        try:
            if r.status != 200:
                raise ApiError(r.status, r.read().decode(errors="replace"), "WATCH", path)
            buf = b""
            for chunk in r.stream(amt=None, decode_content=True):
                if stop.is_set():
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if not line.strip():
                        continue
                    ev = json.loads(line)
                    if ev.get("type") == "ERROR":
                        st = ev.get("object") or {}
                        raise ApiError(st.get("code", 500), json.dumps(st), "WATCH", path)
                    yield ev.get("type"), ev.get("object") or {}
        finally:
            r.release_conn()


def informer(api: Api, name: str, path: str, query, on_list, on_event, stop: threading.Event, synced: threading.Event):
    """list+watch loop (run in its own thread). on_list(items) replaces the cache; on_event(type, obj)."""
    rv = None
    while not stop.is_set():
        try:
            if rv is None:
                items, rv = api.list_all(path, query)
                on_list(items)
                synced.set()
            for etype, obj in api.watch(path, query, rv, stop):
                new_rv = (obj.get("metadata") or {}).get("resourceVersion")
                if new_rv:
                    rv = new_rv
                if etype == "BOOKMARK":
                    continue
                on_event(etype, obj)
        except ApiError as e:
            if e.status == 410:
                log.info("watch %s: resourceVersion too old, re-listing", name)
            else:
                log.warning("watch %s: %s; re-listing in 1s", name, e)
                time.sleep(1)
            rv = None
        except Exception as e:  # noqa: BLE001 - keep watching whatever happens
            if stop.is_set():
                return
            log.warning("watch %s: %s: %s; retrying in 1s", name, type(e).__name__, e)
            time.sleep(1)

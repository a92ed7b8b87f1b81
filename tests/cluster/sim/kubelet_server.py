#!/usr/bin/env python3
"""Simulated kubelet HTTPS endpoints for all simulated nodes, in ONE process.

Started by main.py inside the cluster's network namespace (`ip netns exec NS python kubelet_server.py
--state <file>`), it listens on 0.0.0.0:10250 and tells the nodes apart by the local address each
connection arrived on (every node's InternalIP is an address of the namespace's interface).

    GET /healthz                                -> ok
    GET /configz                                -> {"kubeletconfig": {...}} of that node
    GET /containerLogs/<ns>/<pod>/<container>   -> the simulated container's log
        (tailLines, timestamps, sinceSeconds, limitBytes, follow, previous as the kubelet)
    GET /pods                                   -> an empty PodList

State file (JSON, rewritten atomically by main.py):
    {"logDir": "...", "nodes": {"<ip>": {"name": "node01", "configz": {"kubeletconfig": {...}}}}}
Log files: <logDir>/<node>/<namespace>_<pod>/<container>.log, lines "<RFC3339Nano> <text>".
Owns: serving those endpoints, read-only. Must not: write the state or log files, nor talk to the
API server (main.py and sim_kubelet_endpoints.py do).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def log(msg):
    ts = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    print(f"{ts} kubelet-server: {msg}", flush=True)


class State:
    def __init__(self, path):
        self.path = path
        self.mtime = None
        self.data = {"nodes": {}, "logDir": ""}
        self.lock = threading.Lock()

    def get(self):
        with self.lock:
            try:
                m = os.stat(self.path).st_mtime_ns
            except OSError:
                return self.data
            if m != self.mtime:
                try:
                    with open(self.path) as f:
                        self.data = json.load(f)
                    self.mtime = m
                except (OSError, ValueError) as e:
                    log(f"cannot read state {self.path}: {e}")
            return self.data


def ensure_cert(cert_dir):
    os.makedirs(cert_dir, exist_ok=True)
    crt, key = os.path.join(cert_dir, "kubelet.crt"), os.path.join(cert_dir, "kubelet.key")
    if os.path.exists(crt) and os.path.exists(key):
        return crt, key
    try:
        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
        k = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "simulated-kubelet")])
        now = datetime.datetime.now(datetime.timezone.utc)
        cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(k.public_key())
                .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
                .not_valid_after(now + datetime.timedelta(days=365))
                .add_extension(x509.SubjectAlternativeName([x509.DNSName("simulated-kubelet")]), critical=False)
                .sign(k, hashes.SHA256()))
        with open(key + ".tmp", "wb") as f:
            f.write(k.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                    serialization.NoEncryption()))
        with open(crt + ".tmp", "wb") as f:
            f.write(cert.public_bytes(serialization.Encoding.PEM))
    except ImportError:
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                        "-nodes", "-days", "365", "-subj", "/CN=simulated-kubelet",
                        "-keyout", key + ".tmp", "-out", crt + ".tmp"], check=True, capture_output=True)
    os.chmod(key + ".tmp", 0o600)
    os.replace(key + ".tmp", key)
    os.replace(crt + ".tmp", crt)
    return crt, key


def _parse_line(line):
    ts, _, text = line.partition(" ")
    return ts, text


def _ts_seconds(ts):
    try:
        return datetime.datetime.strptime(ts[:26], "%Y-%m-%dT%H:%M:%S.%f").replace(
            tzinfo=datetime.timezone.utc).timestamp()
    except ValueError:
        return 0.0


class Handler(BaseHTTPRequestHandler):
    server_version = "simulated-kubelet"
    protocol_version = "HTTP/1.0"

    def log_message(self, fmt, *args):  # quiet; errors are logged explicitly
        if os.environ.get("SIM_KUBELET_ACCESS_LOG"):
            log(f"{self.client_address[0]} -> {self.connection.getsockname()[0]}: " + fmt % args)

    def _send(self, code, body, ctype="text/plain; charset=utf-8"):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        state = self.server.state.get()
        local = self.connection.getsockname()[0]
        node = (state.get("nodes") or {}).get(local)
        url = urllib.parse.urlsplit(self.path)
        q = urllib.parse.parse_qs(url.query)
        path = url.path.rstrip("/") or "/"
        if node is None:
            return self._send(404, f"no simulated node at {local}\n")
        if path == "/healthz":
            return self._send(200, "ok")
        if path == "/configz":
            return self._send(200, json.dumps(node.get("configz") or {}), "application/json")
        if path == "/pods":
            return self._send(200, json.dumps({"kind": "PodList", "apiVersion": "v1", "metadata": {}, "items": []}),
                              "application/json")
        if path.startswith("/containerLogs/"):
            parts = path.split("/")
            if len(parts) != 5:
                return self._send(400, "expected /containerLogs/<namespace>/<pod>/<container>\n")
            _, _, ns, pod, container = parts
            return self._logs(state, node["name"], ns, pod, container, q)
        return self._send(404, "404 page not found\n")

    def _logs(self, state, node, ns, pod, container, q):
        f = os.path.join(state.get("logDir", ""), node, f"{ns}_{pod}", f"{container}.log")
        try:
            with open(f, errors="replace") as fh:
                lines = fh.read().splitlines()
        except OSError:
            return self._send(404, f'container "{container}" in pod "{pod}" is not available\n')
        one = lambda k: (q.get(k) or [""])[0]  # noqa: E731
        ts_on = one("timestamps").lower() in ("true", "1")
        if one("sinceSeconds"):
            cutoff = time.time() - int(one("sinceSeconds"))
            lines = [ln for ln in lines if _ts_seconds(_parse_line(ln)[0]) >= cutoff]
        if one("tailLines"):
            n = int(one("tailLines"))
            lines = lines[-n:] if n > 0 else []
        render = (lambda ln: ln) if ts_on else (lambda ln: _parse_line(ln)[1])
        out = "".join(render(ln) + "\n" for ln in lines).encode()
        if one("limitBytes"):
            out = out[:int(one("limitBytes"))]
        if one("follow").lower() not in ("true", "1"):
            return self._send(200, out)
        # follow: stream new lines until the client goes away or the file disappears
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.end_headers()
        try:
            self.wfile.write(out)
            self.wfile.flush()
            with open(f, errors="replace") as fh:
                fh.seek(0, os.SEEK_END)
                deadline = time.time() + 3600
                while time.time() < deadline:
                    chunk = fh.readline()
                    if chunk:
                        if chunk.endswith("\n"):
                            self.wfile.write((render(chunk.rstrip("\n")) + "\n").encode())
                            self.wfile.flush()
                        else:
                            fh.seek(fh.tell() - len(chunk.encode()))
                            time.sleep(0.2)
                        continue
                    if not os.path.exists(f):
                        break
                    time.sleep(0.5)
        except (BrokenPipeError, ConnectionResetError, ssl.SSLError, OSError):
            pass


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, state, ctx):
        super().__init__(addr, Handler)
        self.state, self.ctx = state, ctx

    def finish_request(self, request, client_address):
        # TLS handshake in the per-connection thread, not in the accept loop
        try:
            request.settimeout(30)
            tls = self.ctx.wrap_socket(request, server_side=True)
        except (ssl.SSLError, OSError):
            return
        try:
            super().finish_request(tls, client_address)
        finally:
            try:
                tls.close()
            except OSError:
                pass


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--state", required=True)
    ap.add_argument("--cert-dir", required=True)
    ap.add_argument("--address", default="0.0.0.0")
    ap.add_argument("--port", type=int, default=10250)
    a = ap.parse_args(argv)
    crt, key = ensure_cert(a.cert_dir)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(crt, key)
    srv = Server((a.address, a.port), State(a.state), ctx)
    srv.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)

    def stop(*_):
        log("stopping")
        threading.Thread(target=srv.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    log(f"serving https://{a.address}:{a.port} (/healthz /configz /containerLogs) state {a.state}")
    srv.serve_forever(poll_interval=0.5)
    srv.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

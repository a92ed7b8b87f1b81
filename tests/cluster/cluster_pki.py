"""The test cluster's PKI and kubeconfigs.

Owns: <state>/pki/ (a fresh CA, the kube-apiserver serving certificate, the apiserver's kubelet
client certificate, the service-account key pair) and the kubeconfig text for a token user.
Must not: write tokens.csv or start anything (cluster_control_plane.py does), nor reuse keys
between runs: every `up` generates new ones.
"""
import base64
import datetime
import ipaddress
import os

import yaml

from cluster_state import p, short_hash, write_file


def gen_pki(extra_sans=()):
    """The CA and every certificate of the cluster; extra_sans: more addresses the API server answers
    at (the host end of the veth, where the real nodes in the network namespace dial it)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec, rsa
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    d = p("pki")
    os.makedirs(d, exist_ok=True)
    now = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(minutes=5)
    until = now + datetime.timedelta(days=365)

    def save_key(key, name):
        write_file(os.path.join(d, name), key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()).decode(), 0o600)

    def save_cert(cert, name):
        write_file(os.path.join(d, name), cert.public_bytes(serialization.Encoding.PEM).decode())

    def name(cn, org=None):
        attrs = [x509.NameAttribute(NameOID.COMMON_NAME, cn)]
        if org:
            attrs.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, org))
        return x509.Name(attrs)

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = name(f"dracpu-test-ca-{short_hash()}")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now).not_valid_after(until + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False,
                                       data_encipherment=False, key_agreement=False,
                                       encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
          .sign(ca_key, hashes.SHA256()))
    save_key(ca_key, "ca.key")
    save_cert(ca, "ca.crt")

    def leaf(fname, cn, org=None, server=False, sans=()):
        key = ec.generate_private_key(ec.SECP256R1())
        b = (x509.CertificateBuilder().subject_name(name(cn, org)).issuer_name(ca_name)
             .public_key(key.public_key()).serial_number(x509.random_serial_number())
             .not_valid_before(now).not_valid_after(until)
             .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
             .add_extension(x509.ExtendedKeyUsage(
                 [ExtendedKeyUsageOID.SERVER_AUTH] if server else [ExtendedKeyUsageOID.CLIENT_AUTH]),
                 critical=False)
             .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),
                            critical=False))
        if sans:
            b = b.add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(s)) if s[0].isdigit() else x509.DNSName(s) for s in sans]),
                critical=False)
        save_key(key, fname + ".key")
        save_cert(b.sign(ca_key, hashes.SHA256()), fname + ".crt")

    leaf("apiserver", "kube-apiserver", server=True,
         sans=["127.0.0.1", "10.96.0.1", "localhost", "kubernetes", "kubernetes.default",
               "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", *extra_sans])
    leaf("apiserver-kubelet-client", "kube-apiserver-kubelet-client", org="system:masters")
    sa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    save_key(sa, "sa.key")
    write_file(os.path.join(d, "sa.pub"), sa.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode())


def kubeconfig(server, token, user):
    with open(p("pki", "ca.crt"), "rb") as f:
        ca = base64.b64encode(f.read()).decode()
    return yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "dracpu", "cluster": {"server": server, "certificate-authority-data": ca}}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "dracpu", "context": {"cluster": "dracpu", "user": user}}],
        "current-context": "dracpu",
    }, sort_keys=False)

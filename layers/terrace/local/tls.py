"""A throwaway certificate authority and a localhost certificate for local mode.

Terraform's service discovery speaks HTTPS only, so the dev stack serves TLS with a certificate
from a CA made at start. Clients trust it through SSL_CERT_FILE (terraform, httpx) or
REQUESTS_CA_BUNDLE (requests) pointing at `ca_bundle`: the CA followed by the usual public roots,
so the same variable does not break downloads from elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

LOCAL_IDENTITIES = ("localhost", "127.0.0.1", "::1")
SYSTEM_BUNDLES = ("/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt")


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the local CA alone
    ca_bundle: Path  # the local CA plus public roots (what SSL_CERT_FILE should name)
    cert_chain: Path  # server certificate + CA, for uvicorn
    key: Path  # server private key, for uvicorn


def _public_roots() -> bytes:
    try:
        import certifi

        return Path(certifi.where()).read_bytes()
    except ImportError:  # pragma: no cover - certifi comes with requests/botocore
        for candidate in SYSTEM_BUNDLES:
            if os.path.exists(candidate):
                return Path(candidate).read_bytes()
    return b""


def write_certificates(directory: Path) -> TlsFiles:
    """Make a fresh CA and a certificate for localhost/127.0.0.1/::1; write them as PEM files."""
    import trustme

    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="Terrace local CA")
    leaf = ca.issue_cert(*LOCAL_IDENTITIES, common_name="localhost")
    files = TlsFiles(
        ca=directory / "ca.pem",
        ca_bundle=directory / "ca-bundle.pem",
        cert_chain=directory / "localhost.pem",
        key=directory / "localhost-key.pem",
    )
    ca_pem = ca.cert_pem.bytes()
    files.ca.write_bytes(ca_pem)
    files.ca_bundle.write_bytes(ca_pem + b"\n" + _public_roots())
    files.cert_chain.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    files.key.touch(mode=0o600)
    files.key.write_bytes(leaf.private_key_pem.bytes())
    return files


def ensure_certificates(directory: Path) -> TlsFiles:
    """The certificates made by an earlier start (clients keep trusting the same CA), or new ones."""
    files = TlsFiles(
        ca=directory / "ca.pem",
        ca_bundle=directory / "ca-bundle.pem",
        cert_chain=directory / "localhost.pem",
        key=directory / "localhost-key.pem",
    )
    if all(path.is_file() and path.stat().st_size for path in (files.ca, files.ca_bundle, files.cert_chain, files.key)):
        return files
    return write_certificates(directory)


def operator_certificate(cert_chain: Path, key: Path, ca_bundle: Path | None = None) -> TlsFiles:
    """An operator's own certificate (PEM chain and key); clients and runners trust `ca_bundle`, by default the
    public roots (a certificate from a public CA)."""
    for path in (cert_chain, key, *([ca_bundle] if ca_bundle else [])):
        if not path.is_file():
            raise RuntimeError(f"no such file: {path}")
    if ca_bundle is None:
        import certifi

        ca_bundle = Path(certifi.where())
    return TlsFiles(ca=ca_bundle, ca_bundle=ca_bundle, cert_chain=cert_chain, key=key)

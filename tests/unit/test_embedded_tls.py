"""`terrace serve --tls-cert/--tls-key/--tls-ca`: the embedded server serves the operator's certificate, and
dev.json names the bundle clients and runners trust."""

from __future__ import annotations

import json
import ssl
from pathlib import Path

import httpx
import pytest
import trustme
from terrace.local import tls
from terrace.local.stack import LocalStack


def test_the_operators_certificate_is_served(tmp_path: Path) -> None:
    ca = trustme.CA(organization_name="Operator CA")
    leaf = ca.issue_cert("localhost", "127.0.0.1")
    chain, key, bundle = tmp_path / "chain.pem", tmp_path / "key.pem", tmp_path / "ca.pem"
    chain.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    key.write_bytes(leaf.private_key_pem.bytes())
    bundle.write_bytes(ca.cert_pem.bytes())
    data = tmp_path / "data"
    stack = LocalStack(
        port=0, state_dir=data, data_dir=data, workers=False, tls_files=tls.operator_certificate(chain, key, bundle)
    )
    info = stack.start()
    try:
        assert json.loads((data / "dev.json").read_text())["ca_bundle"] == str(bundle)
        with httpx.Client(verify=ssl.create_default_context(cafile=str(bundle))) as client:
            assert client.get(f"{info.url}/.well-known/terraform.json").status_code == 200
        assert not (data / "tls" / "ca.pem").exists()  # no local CA was made
    finally:
        stack.stop()
    with pytest.raises(RuntimeError, match="no such file"):
        tls.operator_certificate(tmp_path / "missing.pem", key)

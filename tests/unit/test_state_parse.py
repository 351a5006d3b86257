"""Pure parsing of Terraform state files."""

from __future__ import annotations

import json

import pytest
from state_helpers import null_resource, state_bytes
from terrace.domain import state as st
from terrace.domain.errors import Invalid


def test_parse_extracts_serial_lineage_outputs_resources_and_summary() -> None:
    raw = state_bytes(
        7,
        outputs={"o": {"value": {"a": 1}, "type": ["object", {"a": "number"}]}},
        resources=[null_resource("n", "x", module="module.m", count=2)],
    )
    parsed = st.parse_state(raw)
    assert (parsed.serial, parsed.lineage, parsed.terraform_version, parsed.format_version) == (
        7,
        "5f8e3c1a-0000-4000-8000-000000000001",
        "1.0.3",
        4,
    )
    assert parsed.outputs[0].type == "object" and parsed.outputs[0].value == {"a": 1}
    assert [r.address for r in parsed.resources] == ["module.m.null_resource.n[0]", "module.m.null_resource.n[1]"]
    assert parsed.resources[1].name_index == "1" and parsed.resources[0].ids == ("x0",)
    assert parsed.summary["modules"] == {"module.m": {"null-resource": 2}}


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"[]",
        b"{bad",
        b'{"serial": -1, "lineage": "x"}',
        b'{"serial": 1}',
        b'{"serial": true, "lineage": "x"}',
        b"\xff\xfe",
    ],
)
def test_parse_rejects_non_states(raw: bytes) -> None:
    with pytest.raises(Invalid):
        st.parse_state(raw)


def test_string_index_keys_data_sources_and_types() -> None:
    doc = {
        "serial": 1,
        "lineage": "l",
        "resources": [
            {
                "mode": "data",
                "type": "aws_ami",
                "name": "u",
                "provider": "provider.aws",
                "instances": [{"index_key": "eu", "attributes": {"id": "ami-1"}}],
            }
        ],
    }
    (inst,) = st.parse_state(json.dumps(doc).encode()).resources
    assert inst.address == 'data.aws_ami.u["eu"]' and inst.mode == "data" and inst.provider == "aws"
    assert st.simple_type("bool") == "boolean" and st.simple_type(["map", "string"]) == "object"
    assert st.simple_type(["set", "string"]) == "array"


def test_with_serial_rewrites_only_the_serial() -> None:
    raw = state_bytes(2)
    again = st.parse_state(st.with_serial(raw, 9))
    assert again.serial == 9 and again.lineage == st.parse_state(raw).lineage


def test_bad_base64() -> None:
    with pytest.raises(Invalid):
        st.decode_base64("not base64!!", "/data/attributes/state")
    with pytest.raises(Invalid):
        st.decode_base64(12, "/data/attributes/state")

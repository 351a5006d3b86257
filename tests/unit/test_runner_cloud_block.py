"""The runner removes the `cloud` block from a run's root module (its backend override takes its place)."""

from __future__ import annotations

import json
from pathlib import Path

from terrace.runner.cloud_block import strip_cloud_blocks, strip_hcl

CLOUD_CONFIG = """# a comment naming cloud { }
terraform {
  required_version = ">= 1.1"
  cloud {
    hostname     = "localhost:8443" # a brace in a comment }
    organization = "acme"
    workspaces {
      tags = ["a", "b"]
    }
  }
  required_providers {
    null = { source = "hashicorp/null" }
  }
}

locals {
  braces  = "${jsonencode({ a = "}" })} cloud {"
  escaped = "$${literal} %%{ not a template"
  doc     = <<-EOT
    terraform {
      cloud {
    EOT
}

resource "null_resource" "cloud" {
  triggers = { cloud = "x" }
}
"""


def test_only_the_cloud_block_of_the_terraform_block_goes_and_lines_stay() -> None:
    stripped = strip_hcl(CLOUD_CONFIG)

    assert stripped.count("\n") == CLOUD_CONFIG.count("\n")  # error messages keep their line numbers
    assert "hostname" not in stripped and "workspaces" not in stripped
    assert 'required_version = ">= 1.1"' in stripped and 'null = { source = "hashicorp/null" }' in stripped
    kept = CLOUD_CONFIG[CLOUD_CONFIG.index("locals {") :]
    assert stripped.endswith(kept)  # strings, templates, heredocs and other blocks are untouched


def test_text_without_a_cloud_block_is_unchanged() -> None:
    text = 'terraform {\n  backend "remote" {}\n}\nresource "a" "cloud" {\n  cloud { x = 1 }\n}\n'
    assert strip_hcl(text) == text


def test_root_module_files_hcl_and_json(tmp_path: Path) -> None:
    (tmp_path / "main.tf").write_text(CLOUD_CONFIG)
    (tmp_path / "backend.tf.json").write_text(
        json.dumps({"terraform": [{"cloud": {"organization": "acme"}, "required_version": ">= 1.1"}]})
    )
    (tmp_path / "other.tf").write_text('output "x" {\n  value = "cloud {"\n}\n')
    (tmp_path / "notes.txt").write_text("terraform {\n  cloud {}\n}\n")

    assert strip_cloud_blocks(tmp_path) == ["backend.tf.json", "main.tf"]

    assert json.loads((tmp_path / "backend.tf.json").read_text()) == {"terraform": [{"required_version": ">= 1.1"}]}
    assert "hostname" not in (tmp_path / "main.tf").read_text()
    assert (tmp_path / "notes.txt").read_text() == "terraform {\n  cloud {}\n}\n"

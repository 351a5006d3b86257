"""What `terrace dev` prints once the stack is up: how to point terraform at it."""

from __future__ import annotations

from terrace.local.stack import DevInfo


def usage(info: DevInfo, dev_file: str, kept: bool = False) -> str:
    lifetime = (
        "Data is kept across restarts (terrace backup copies it while it runs)."
        if kept
        else "Every start is fresh: data lives only as long as this process."
    )
    return f"""
Terrace is running at {info.url}  (organization {info.organization!r}, user 'admin')
Web UI: {info.url}/app  (sign in with the API token printed at the end)
Connection details: {dev_file}

Point terraform (1.0+) at it:

  export SSL_CERT_FILE={info.ca_bundle}
  export TF_CLI_CONFIG_FILE={info.cli_config}

  terraform {{
    backend "remote" {{
      hostname     = "{info.hostname}"
      organization = "{info.organization}"
      workspaces {{ name = "my-workspace" }}    # or: prefix = "app-"
    }}
  }}

or the http backend (any username, the token as password):

  terraform {{
    backend "http" {{
      address        = "{info.url}/state/v1/{info.organization}/my-workspace"
      lock_address   = "{info.url}/state/v1/{info.organization}/my-workspace"
      unlock_address = "{info.url}/state/v1/{info.organization}/my-workspace"
      username       = "admin"
    }}
  }}
  export TF_HTTP_PASSWORD=$(python3 -c 'import json; print(json.load(open("{dev_file}"))["token"])')

Private modules (publish versions through the API or the UI; the registry's host has a dot, as terraform
and tofu require of a module source):

  module "vpc" {{
    source  = "{info.registry_hostname}/{info.organization}/vpc/aws"
    version = "~> 1.0"
  }}

API token (admin, site admin; it also signs in to the web UI): {info.token}
Press Ctrl-C to stop. {lifetime}
"""

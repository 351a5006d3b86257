"""The layer rule for entities: they live in `domain/`, which is pure Python and depends on nothing above it."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import terrace

PACKAGE = Path(terrace.__file__).parent
# Allowed outside the standard library and `terrace.domain`: pydantic (the runner protocol models) and itsdangerous
# (`url_signing.py`: the one signer of URLs and cookies, pure functions of a key and a message, no I/O), and regex
# (`tenant_regex.py`: a tenant's tags regex, matched with a timeout that the standard library's `re` does not have).
ALLOWED_THIRD_PARTY = {"pydantic", "itsdangerous", "regex"}
# Value types that stay beside their service on purpose: the authorization policy's grants (decided in
# `services/access/`), the single sign-on client's configuration, the run store's write request, and what a
# use case answers (a read model of several aggregates, not an entity).
SERVICE_VALUE_TYPES = {
    "vcs/store_comments.py:PullRequestComment",
    "access/permissions.py:Grants",
    "access/oidc.py:OidcConfig",
    "runs/store.py:WorkspaceWrite",
    # the access store's records as read: what a write back over the version read needs
    "access/store_token_items.py:TokenLookup",
    "access/store_sign_in.py:StoredEnrollment",
    "access/store_organizations.py:OrgRecord",
    "runs/stage_participants.py:StageContext",  # the task stage port's value type
    "vcs/oauth_exchange.py:Grant",  # what a forge's token endpoint answers (a value of the exchange, not an entity)
    "workflows/workspace_overview.py:Overview",
    # read models: what one API document shows, read in one call
    "access/documents.py:TeamDocument",
    "access/documents.py:IncludedMembership",
    "access/documents.py:TeamDocuments",
    "access/documents.py:MembershipDocuments",
    "runs/run_pages.py:RunHeader",
    "runs/run_pages.py:RunWait",
    "runs/plans.py:RedactedPlan",  # json-output-redacted: the document or a presigned URL of its copy
    "state/resource_history.py:HistoryEntry",
    "state/resource_history.py:HistoryPage",
    # read models: what one UI page shows, read in one call
    "access/documents.py:TeamPage",
    "access/documents.py:MembersPage",
    "runs/health.py:HealthReport",
    "policies/pages.py:PolicySetPage",
    "policies/pages.py:PolicyPage",
    "access/team_access.py:AccessPage",
    "workflows/project_pages.py:ProjectsPage",
    "workflows/project_pages.py:ProjectPage",
    "workflows/project_pages.py:ProjectRow",
    "workflows/workspace_settings.py:SettingsView",
    # a store's record of what its item holds beside the entity (the organization's id, a ciphertext, a version)
    "workspaces/store_agent_pools.py:StoredPool",
    "workspaces/store_ssh_keys.py:StoredSSHKey",
    "workspaces/store_tags.py:RegisteredTag",
    "workspaces/store_run_triggers.py:SourceCount",
    "vcs/store.py:StoredClient",
    "vcs/store.py:StoredToken",
    "vcs/store.py:Connection",
    "vcs/archives.py:RepoBounds",  # the bounds a forge's tarball is read within
    "workspaces/repository_link.py:LinkedRepository",  # the repository link port's value type
}


def _imported_modules(tree: ast.Module) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


def test_domain_imports_only_the_standard_library_pydantic_and_itself() -> None:
    offending = []
    for path in sorted((PACKAGE / "domain").rglob("*.py")):
        for module in _imported_modules(ast.parse(path.read_text())):
            top = module.split(".")[0]
            if module == "terrace.domain" or module.startswith("terrace.domain."):
                continue
            if top in sys.stdlib_module_names or top == "__future__" or top in ALLOWED_THIRD_PARTY:
                continue
            offending.append(f"{path.name}: {module}")
    assert offending == []


def _is_value_type(node: ast.ClassDef) -> bool:
    decorators = [ast.unparse(d) for d in node.decorator_list]
    bases = [ast.unparse(b) for b in node.bases]
    return any("dataclass" in d for d in decorators) or any(
        b.endswith(("BaseModel", "NamedTuple", "TypedDict")) for b in bases
    )


def test_services_define_no_entities() -> None:
    services = PACKAGE / "services"
    found = {
        f"{path.relative_to(services).as_posix()}:{node.name}"
        for path in services.rglob("*.py")
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.ClassDef) and _is_value_type(node)
    }
    assert found == SERVICE_VALUE_TYPES

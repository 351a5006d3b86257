"""Resources more than one part of the API serializes with what the container knows: an organization with the
caller's permissions on it, a state version with its upload URLs. The routers that own them and the `include=`
of workspace reads (`web/workspace_includes.py`) both use these, so no helper imports a router."""

from __future__ import annotations

from typing import Any

from terrace.bootstrap import Container
from terrace.domain.organizations import Organization
from terrace.domain.principal import Principal
from terrace.domain.state_versions import StateVersion
from terrace.services.access.authz import Action
from terrace.web import serializers, state_serializers


def _org_permissions(container: Container, principal: Principal, org: Organization) -> dict[str, bool]:
    can = lambda action: container.authz.can(principal, action, org.view)  # noqa: E731
    manage = can(Action.MANAGE_ORGANIZATION)
    return {
        "can-update": manage,
        "can-destroy": can(Action.DELETE_ORGANIZATION),
        "can-access-via-teams": manage,
        "can-create-team": False,
        "can-create-workspace": can(Action.CREATE_WORKSPACE),
        "can-manage-users": manage,
        "can-manage-subscription": False,
        "can-manage-sso": False,
        "can-update-oauth": False,
        "can-update-sentinel": False,
        "can-update-ssh-keys": manage,
        "can-update-api-token": manage,
        "can-traverse": True,
        "can-start-trial": False,
        "can-update-agent-pools": manage,
        "can-manage-tags": manage,
        "can-manage-varsets": manage,
        "can-read-varsets": True,
        "can-manage-public-providers": False,
        "can-create-provider": False,
        "can-manage-public-modules": False,
        "can-manage-custom-providers": False,
        "can-manage-run-tasks": can(Action.MANAGE_RUN_TASKS),
        "can-read-run-tasks": can(Action.READ_ORGANIZATION),
        "can-create-project": False,
        "can-manage-no-code-modules": can(Action.MANAGE_MODULES),  # services/registry/no_code_modules.py
        "can-deploy-no-code-modules": can(Action.DEPLOY_NO_CODE_MODULES),  # services/workflows/no_code_provisioning.py
    }


def organization(container: Container, principal: Principal, org: Organization) -> dict[str, Any]:
    primary = container.hyok_configurations.primary_id(principal, org.key)  # Hold Your Own Key
    return serializers.organization(org, _org_permissions(container, principal, org), primary)


def state_version(container: Container, sv: StateVersion, created: bool = False) -> dict[str, Any]:
    """As for configuration versions, a pending version's upload URLs are only in its creation answer: every read
    shows them null (a reader holding them could replace the state before its writer uploads it)."""
    urls = container.state_versions.upload_urls(sv) if created else (None, None, None)
    return state_serializers.state_version(sv, container.settings.public_url, urls)

"""The adapters `build_aws` and `build_embedded` (`bootstrap.py`) make alike from the settings: the forges of every
kind of OAuth client, git's clones, the deployment's GitHub App, SMTP mail, and the HYOK key wrappers (AWS KMS, the
embedded server's key file)."""

from __future__ import annotations

import shutil

from terrace.adapters.azure_devops_forge import AzureDevOpsForge
from terrace.adapters.bitbucket_forge import BitbucketForge
from terrace.adapters.bitbucket_server_forge import BitbucketServerForge
from terrace.adapters.forge import Forge, ForgeByKind
from terrace.adapters.github_app import GitHubApp
from terrace.adapters.github_forge import GitHubForge
from terrace.adapters.gitlab_forge import GitLabForge
from terrace.adapters.key_wrapper import KeyWrapper
from terrace.adapters.mail import Mail
from terrace.adapters.repository_clone import RepositoryClone
from terrace.config import Settings
from terrace.domain.destinations import Allowance


def forges(allowance: Allowance) -> Forge:
    """The forge of each kind of OAuth client (`domain/vcs.py: forge_kind`): GitHub's REST shapes (GitHub, Gitea,
    Forgejo), GitLab's, Bitbucket Cloud's, Bitbucket Data Center's and Azure DevOps Services'."""
    return ForgeByKind({"github": GitHubForge(allowance), "gitlab": GitLabForge(allowance),
                        "bitbucket": BitbucketForge(allowance), "bitbucket_server": BitbucketServerForge(allowance),
                        "azure_devops": AzureDevOpsForge(allowance)})  # fmt: skip


def repository_clone(allowance: Allowance) -> RepositoryClone | None:
    """git's clones of a commit and its submodules, where the host has git (the events Lambda's image has none)."""
    from terrace.adapters.git_repository_clone import GitRepositoryClone

    return GitRepositoryClone(allowance) if shutil.which("git") else None


def github_app(settings: Settings) -> GitHubApp | None:
    """The deployment's GitHub App when its id and private key are set."""
    if not (settings.github_app_id and settings.github_app_private_key):
        return None
    from terrace.adapters.httpx_github_app import HttpxGitHubApp

    return HttpxGitHubApp(settings.github_app_id, settings.github_app_private_key, settings.github_app_api_url,
                          settings.github_app_http_url, settings.github_app_slug,
                          Allowance.parse(settings.outbound_allow))  # fmt: skip


def kms_key_wrapper(settings: Settings) -> KeyWrapper:
    from terrace.adapters.kms_key_wrapper import KmsKeyWrapper

    return KmsKeyWrapper(
        region=settings.region, endpoint_url=settings.aws_endpoint_url, sts_endpoint=settings.sts_endpoint
    )


def file_key_wrapper(settings: Settings) -> KeyWrapper:
    from terrace.adapters.file_key_wrapper import FileKeyWrapper

    return FileKeyWrapper(settings.hyok_key_file)


def smtp_mail(settings: Settings) -> Mail:
    """Notification e-mails through the SMTP server of the settings (`TERRACE_SMTP_*`)."""
    from terrace.adapters.smtp_mail import SmtpMail

    return SmtpMail(
        settings.smtp_host,
        settings.smtp_port,
        settings.mail_from,
        starttls=settings.smtp_starttls,
        username=settings.smtp_username,
        password=settings.smtp_password,
    )

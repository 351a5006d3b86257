"""VCS-driven runs: OAuth clients and tokens, workspace connections to a repository, webhook deliveries."""

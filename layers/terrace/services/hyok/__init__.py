"""Hold Your Own Key: OIDC configurations, HYOK configurations, customer key versions and encrypted data keys."""

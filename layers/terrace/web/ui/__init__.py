"""The web UI at /app: server-rendered Jinja2 pages over the same services as the API."""

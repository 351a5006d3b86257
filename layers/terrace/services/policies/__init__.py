"""Policy as code: policies, policy sets, their parameters and versions, and the runs' OPA policy evaluations."""

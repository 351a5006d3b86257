"""Who may do what: users and tokens, the one permission check (`authz`), organizations, web sessions."""

"""The site admin's services: every organization, workspace, run and user, and the tool versions catalog."""

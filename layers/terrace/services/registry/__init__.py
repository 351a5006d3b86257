"""The private registry: modules published to an organization and what terraform/tofu download of them."""

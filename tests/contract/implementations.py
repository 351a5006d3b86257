"""The implementations every port's contract runs against (parameter ids)."""

IMPLEMENTATIONS = ["memory", "sqlite", "moto"]  # "sqlite" names the embedded server's adapter of each port

"""`GET /organizations` without page[number] or page[size] answers every organization of the caller on one page,
as HCP documents (go-tfe's TestOrganizationsList calls `List(ctx, nil)` and looks for the two it just made, which a
first page of 20 by name misses once more exist); a named page size pages as every list does."""

from __future__ import annotations

from run_helpers import make_run_env


def test_without_page_parameters_every_organization_is_on_one_page() -> None:
    env = make_run_env()
    names = [f"zz-org-{i:02d}" for i in range(25)]
    for name in names:
        body = {"data": {"type": "organizations", "attributes": {"name": name, "email": f"{name}@example.com"}}}
        assert env.api("POST", "/organizations", body).status_code == 201
    everything = env.api("GET", "/organizations").json()
    listed = [org["attributes"]["name"] for org in everything["data"]]
    assert set(names) <= set(listed) and len(listed) == 26  # and acme
    assert everything["meta"]["pagination"]["total-pages"] == 1
    assert everything["meta"]["pagination"]["total-count"] == 26

    paged = env.api("GET", "/organizations", params={"page[size]": "20"}).json()
    assert len(paged["data"]) == 20 and paged["meta"]["pagination"]["total-pages"] == 2
    second = env.api("GET", "/organizations", params={"page[number]": "2"}).json()
    assert len(second["data"]) == 6 and second["meta"]["pagination"]["page-size"] == 20

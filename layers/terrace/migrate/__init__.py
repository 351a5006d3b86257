"""`terrace migrate`: copy an organization between two servers that speak the TFC API (HCP Terraform, TFE,
OTF, Terrace), through that API only. Reading is done on the source, writing on the target; the match is by
name, so a re-run compares and updates instead of duplicating, and resumes after a failure."""

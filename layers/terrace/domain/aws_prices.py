"""Monthly prices of common AWS resource types, for cost estimation (`domain/cost_estimation.py`).

Source: the AWS Price List (public on-demand prices), region us-east-1 (US East, N. Virginia), USD,
Linux / shared tenancy / no pre-installed software for EC2, Single-AZ for RDS and ElastiCache,
as published in 2024. Every region is estimated at these prices. A month is 730 hours, as HCP
Terraform's cost estimation counts it. Usage-priced parts (data transfer, requests, LCUs, NAT data
processing, snapshots) are not estimated.

Refreshing: the AWS Price List Query API (`aws pricing get-products --region us-east-1`) answers these
values, e.g. for EC2:
    --service-code AmazonEC2 --filters Type=TERM_MATCH,Field=instanceType,Value=m5.large
      Type=TERM_MATCH,Field=location,Value="US East (N. Virginia)" Type=TERM_MATCH,Field=operatingSystem,Value=Linux
      Type=TERM_MATCH,Field=tenancy,Value=Shared Type=TERM_MATCH,Field=preInstalledSw,Value=NA
      Type=TERM_MATCH,Field=capacitystatus,Value=Used
and `terms.OnDemand.*.priceDimensions.*.pricePerUnit.USD` of the answer is the hourly price
(AmazonRDS: `databaseEngine`, `deploymentOption=Single-AZ`; AmazonEC2 `productFamily=Storage` with
`volumeApiName` for EBS). Edit the tables below with the new values and their date.
"""

from __future__ import annotations

HOURS_PER_MONTH = 730

# aws_instance / aws_spot_instance_request's on-demand twin: USD per hour by instance_type.
EC2_HOURLY: dict[str, float] = {
    "t2.nano": 0.0058, "t2.micro": 0.0116, "t2.small": 0.023, "t2.medium": 0.0464,
    "t2.large": 0.0928, "t2.xlarge": 0.1856, "t2.2xlarge": 0.3712,
    "t3.nano": 0.0052, "t3.micro": 0.0104, "t3.small": 0.0208, "t3.medium": 0.0416,
    "t3.large": 0.0832, "t3.xlarge": 0.1664, "t3.2xlarge": 0.3328,
    "t3a.nano": 0.0047, "t3a.micro": 0.0094, "t3a.small": 0.0188, "t3a.medium": 0.0376,
    "t3a.large": 0.0752, "t3a.xlarge": 0.1504, "t3a.2xlarge": 0.3008,
    "t4g.nano": 0.0042, "t4g.micro": 0.0084, "t4g.small": 0.0168, "t4g.medium": 0.0336,
    "t4g.large": 0.0672, "t4g.xlarge": 0.1344, "t4g.2xlarge": 0.2688,
    "m5.large": 0.096, "m5.xlarge": 0.192, "m5.2xlarge": 0.384, "m5.4xlarge": 0.768,
    "m5.8xlarge": 1.536, "m5.12xlarge": 2.304, "m5.16xlarge": 3.072, "m5.24xlarge": 4.608,
    "m6i.large": 0.096, "m6i.xlarge": 0.192, "m6i.2xlarge": 0.384, "m6i.4xlarge": 0.768,
    "m6i.8xlarge": 1.536,
    "m6g.medium": 0.0385, "m6g.large": 0.077, "m6g.xlarge": 0.154, "m6g.2xlarge": 0.308, "m6g.4xlarge": 0.616,
    "m7i.large": 0.1008, "m7i.xlarge": 0.2016, "m7i.2xlarge": 0.4032, "m7i.4xlarge": 0.8064,
    "m7g.medium": 0.0408, "m7g.large": 0.0816, "m7g.xlarge": 0.1632, "m7g.2xlarge": 0.3264,
    "c5.large": 0.085, "c5.xlarge": 0.17, "c5.2xlarge": 0.34, "c5.4xlarge": 0.68, "c5.9xlarge": 1.53,
    "c6i.large": 0.085, "c6i.xlarge": 0.17, "c6i.2xlarge": 0.34, "c6i.4xlarge": 0.68,
    "c6g.medium": 0.034, "c6g.large": 0.068, "c6g.xlarge": 0.136, "c6g.2xlarge": 0.272,
    "c7g.medium": 0.0363, "c7g.large": 0.0725, "c7g.xlarge": 0.145, "c7g.2xlarge": 0.29,
    "r5.large": 0.126, "r5.xlarge": 0.252, "r5.2xlarge": 0.504, "r5.4xlarge": 1.008,
    "r6i.large": 0.126, "r6i.xlarge": 0.252, "r6i.2xlarge": 0.504, "r6i.4xlarge": 1.008,
    "r6g.medium": 0.0504, "r6g.large": 0.1008, "r6g.xlarge": 0.2016, "r6g.2xlarge": 0.4032,
}  # fmt: skip

# aws_db_instance: USD per hour by instance_class, Single-AZ (Multi-AZ costs twice), by engine family.
RDS_HOURLY: dict[str, dict[str, float]] = {
    "mysql": {
        "db.t3.micro": 0.017, "db.t3.small": 0.034, "db.t3.medium": 0.068, "db.t3.large": 0.136,
        "db.t4g.micro": 0.016, "db.t4g.small": 0.032, "db.t4g.medium": 0.065, "db.t4g.large": 0.129,
        "db.m5.large": 0.171, "db.m5.xlarge": 0.342, "db.m5.2xlarge": 0.684,
        "db.m6g.large": 0.152, "db.m6g.xlarge": 0.304, "db.r5.large": 0.24, "db.r5.xlarge": 0.48,
        "db.r6g.large": 0.215, "db.r6g.xlarge": 0.43,
    },
    "postgres": {
        "db.t3.micro": 0.018, "db.t3.small": 0.036, "db.t3.medium": 0.072, "db.t3.large": 0.145,
        "db.t4g.micro": 0.016, "db.t4g.small": 0.032, "db.t4g.medium": 0.065, "db.t4g.large": 0.129,
        "db.m5.large": 0.178, "db.m5.xlarge": 0.356, "db.m5.2xlarge": 0.712,
        "db.m6g.large": 0.159, "db.m6g.xlarge": 0.318, "db.r5.large": 0.25, "db.r5.xlarge": 0.5,
        "db.r6g.large": 0.225, "db.r6g.xlarge": 0.45,
    },
}  # fmt: skip
RDS_ENGINE_FAMILY = {"mysql": "mysql", "mariadb": "mysql", "postgres": "postgres"}
# RDS storage, USD per GB-month by storage_type (gp2 when unset).
RDS_STORAGE_GB_MONTH = {"gp2": 0.115, "gp3": 0.115, "io1": 0.125, "standard": 0.10}

# aws_ebs_volume: USD per GB-month by type (gp2 when unset), provisioned IOPS per IOPS-month.
EBS_GB_MONTH = {"gp2": 0.10, "gp3": 0.08, "io1": 0.125, "io2": 0.125, "st1": 0.045, "sc1": 0.015, "standard": 0.05}
EBS_IOPS_MONTH = {"io1": 0.065, "io2": 0.065}
EBS_GP3_FREE_IOPS, EBS_GP3_IOPS_MONTH = 3000, 0.005
EBS_GP3_FREE_THROUGHPUT, EBS_GP3_THROUGHPUT_MONTH = 125, 0.04  # MiB/s

# aws_elasticache_cluster: USD per node-hour by node_type.
ELASTICACHE_HOURLY = {
    "cache.t3.micro": 0.017, "cache.t3.small": 0.034, "cache.t3.medium": 0.068,
    "cache.t4g.micro": 0.016, "cache.t4g.small": 0.032, "cache.t4g.medium": 0.065,
    "cache.m5.large": 0.156, "cache.m6g.large": 0.149, "cache.r5.large": 0.216, "cache.r6g.large": 0.206,
}  # fmt: skip

# aws_lb / aws_alb by load_balancer_type (application when unset); LCUs are usage.
LB_HOURLY = {"application": 0.0225, "network": 0.0225, "gateway": 0.0125}

# Resource types with a fixed hourly price.
FIXED_HOURLY = {
    "aws_nat_gateway": 0.045,
    "aws_elb": 0.025,
    "aws_eip": 0.005,  # public IPv4 address
    "aws_eks_cluster": 0.10,
    "aws_vpn_connection": 0.05,
    "aws_ec2_transit_gateway_vpc_attachment": 0.05,
}

# Resource types with a fixed monthly price.
FIXED_MONTHLY = {
    "aws_kms_key": 1.00,
    "aws_secretsmanager_secret": 0.40,
    "aws_route53_zone": 0.50,
    "aws_cloudwatch_dashboard": 3.00,
}

# Resource types that cost nothing by themselves (counted as estimated, at $0).
FREE = frozenset(
    {
        "aws_vpc", "aws_subnet", "aws_security_group", "aws_security_group_rule", "aws_route_table",
        "aws_route", "aws_route_table_association", "aws_internet_gateway", "aws_iam_role", "aws_iam_policy",
        "aws_iam_role_policy", "aws_iam_role_policy_attachment", "aws_iam_user", "aws_iam_group",
        "aws_iam_instance_profile", "aws_key_pair", "aws_launch_template", "aws_db_subnet_group",
        "aws_elasticache_subnet_group", "aws_lb_listener", "aws_lb_target_group", "aws_lb_target_group_attachment",
        "aws_network_acl", "aws_vpc_security_group_ingress_rule",
        "aws_vpc_security_group_egress_rule", "aws_default_security_group", "aws_default_route_table",
    }
)  # fmt: skip

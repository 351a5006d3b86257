"""The CDK app that deploys Terrace into one AWS account: one stack of small constructs."""

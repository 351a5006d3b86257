"""Definitions of every table, bucket and queue Terrace uses.

The CDK app (infra/) and local mode (terrace.local) both import this module, so the
resources created on AWS and the ones seeded into moto cannot drift apart.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class KeyAttr:
    name: str
    type: str = "S"  # DynamoDB scalar type: S | N | B


@dataclass(frozen=True)
class IndexDefinition:
    name: str
    partition_key: KeyAttr
    sort_key: KeyAttr


@dataclass(frozen=True)
class TableDefinition:
    logical_name: str
    partition_key: KeyAttr
    sort_key: KeyAttr
    ttl_attribute: str
    global_indexes: tuple[IndexDefinition, ...] = ()


@dataclass(frozen=True)
class BucketDefinition:
    logical_name: str
    versioned: bool
    purpose: str


@dataclass(frozen=True)
class QueueDefinition:
    logical_name: str
    visibility_timeout_s: int
    retention_s: int = 4 * 24 * 3600
    dead_letter: str | None = None
    max_receive_count: int = 0
    attributes: dict[str, str] = field(default_factory=dict)


# One table holds every aggregate. Items are keyed pk/sk; gsi1 lists children of a parent
# in order (workspaces of an organization, state versions of a workspace, ...).
TABLE = TableDefinition(
    logical_name="main",
    partition_key=KeyAttr("pk"),
    sort_key=KeyAttr("sk"),
    ttl_attribute="expires_at",
    global_indexes=(IndexDefinition("gsi1", KeyAttr("gsi1pk"), KeyAttr("gsi1sk")),),
)

BLOB_BUCKET = BucketDefinition(
    logical_name="blobs", versioned=True, purpose="state, configuration tarballs, plans, archived logs"
)
ASSETS_BUCKET = BucketDefinition(logical_name="assets", versioned=False, purpose="static web UI assets")
BUCKETS = (BLOB_BUCKET, ASSETS_BUCKET)

# Run phases queue per organization (an index in the table, adapters/table_job_queue.py) on one lane per priority;
# a runner always takes its organization's highest lane first.
LANE_PRIORITY = ("apply", "plan", "speculative")

# An event the events function fails 20 times (20 minutes or more of retries) is parked in its dead-letter queue
# (14 days) instead of being retried until the queue's retention drops it: a poison message is kept, not lost.
EVENTS_DLQ = QueueDefinition(logical_name="events-dlq", visibility_timeout_s=60, retention_s=14 * 24 * 3600)
EVENTS_QUEUE = QueueDefinition(
    logical_name="events", visibility_timeout_s=60, dead_letter=EVENTS_DLQ.logical_name, max_receive_count=20
)

# Every runnable phase is also sent to the SQS lane of its priority (adapters/lanes.py); the dispatcher
# (services/runs/scaler.py) drains them in LANE_PRIORITY order. A waiting message is received on every tick and
# released, so only a message received LANE_MAX_RECEIVES times without its job being claimed or gone (a dispatcher
# failing on it again and again) moves to its lane's dead letters; the reaper sends a queued phase again anyway.
LANE_MAX_RECEIVES = 1000  # SQS's maximum maxReceiveCount
LANE_VISIBILITY_S = 30  # a tick hides what it received this long at most: it releases what still waits when it ends


def lane_queue(lane: str) -> str:
    return f"lane-{lane}"


LANE_DEAD_LETTERS = tuple(
    QueueDefinition(
        logical_name=f"{lane_queue(lane)}-dlq", visibility_timeout_s=LANE_VISIBILITY_S, retention_s=14 * 24 * 3600
    )
    for lane in LANE_PRIORITY
)
LANE_QUEUES = tuple(
    QueueDefinition(
        logical_name=lane_queue(lane),
        visibility_timeout_s=LANE_VISIBILITY_S,
        dead_letter=f"{lane_queue(lane)}-dlq",
        max_receive_count=LANE_MAX_RECEIVES,
    )
    for lane in LANE_PRIORITY
)
QUEUES = (EVENTS_QUEUE, EVENTS_DLQ, *LANE_DEAD_LETTERS, *LANE_QUEUES)


@dataclass(frozen=True)
class NotificationDefinition:
    """A bucket's S3 event notification of created objects under `prefix`, sent to a queue."""

    bucket: str
    queue: str
    prefix: str


# A two-step state upload is finalized when its object lands (services/state/landed.py): S3 tells the events queue.
STATE_LANDED = NotificationDefinition(bucket=BLOB_BUCKET.logical_name, queue=EVENTS_QUEUE.logical_name, prefix="state/")
# A configuration version's archive is finalized when it lands (services/runs/configuration_versions.py).
CONFIG_LANDED = NotificationDefinition(
    bucket=BLOB_BUCKET.logical_name, queue=EVENTS_QUEUE.logical_name, prefix="config/"
)
# A policy set version's tarball is read when it lands (services/policies/versions.py).
POLICY_LANDED = NotificationDefinition(
    bucket=BLOB_BUCKET.logical_name, queue=EVENTS_QUEUE.logical_name, prefix="policy-uploads/"
)
# A module version's tarball is read when it lands (services/registry/modules.py).
MODULE_LANDED = NotificationDefinition(
    bucket=BLOB_BUCKET.logical_name, queue=EVENTS_QUEUE.logical_name, prefix="module-uploads/"
)
# A provider version's SHA256SUMS, its signature and each platform's zip are recorded when they land
# (services/registry/provider_versions.py, provider_platforms.py).
PROVIDER_LANDED = NotificationDefinition(
    bucket=BLOB_BUCKET.logical_name, queue=EVENTS_QUEUE.logical_name, prefix="provider-uploads/"
)
NOTIFICATIONS = (STATE_LANDED, CONFIG_LANDED, POLICY_LANDED, MODULE_LANDED, PROVIDER_LANDED)


def physical_name(prefix: str, logical_name: str) -> str:
    """Name used for a resource in local mode (on AWS, CloudFormation names them)."""
    return f"{prefix}-{logical_name}"

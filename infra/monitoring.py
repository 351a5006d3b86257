"""Saved Logs Insights queries ("runner events" on the runners' log group, "API errors" on the api function's:
free), and, opt-in (`terrace:monitoring=true`, implied by `terrace:alarmEmail`: $3 a month for the dashboard and
$0.10 per alarm), a CloudWatch dashboard (runs, queue depth, errors, latency) with alarms on errors and the API's
5xx, the dead-letter queues, the lanes' backlog (its age, and phases held for want of room) and RunTask failures."""

from __future__ import annotations

from aws_cdk import Duration
from aws_cdk import aws_apigatewayv2 as apigw
from aws_cdk import aws_cloudwatch as cloudwatch
from aws_cdk import aws_cloudwatch_actions as actions
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_sns as sns
from aws_cdk import aws_sns_subscriptions as subscriptions
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from infra.lambdas import METRICS_NAMESPACE

LANE_BACKLOG_AGE_S = 900  # seconds a lane's oldest phase may wait before the backlog alarm
# The scaler receives every waiting lane message at each tick and releases it; SQS leaves a message received three
# times or more out of ApproximateAgeOfOldestMessage, so under contention (a tick on every enqueue and every 5
# minutes) the age alarm stops seeing the phases that wait. It still fires when nothing drains the lanes. Phases
# left waiting for want of room are the scaler's own `BacklogBlocked` count, published at each tick while they wait:
# in every 5-minute period for this many periods in a row is a backlog held that long.
BACKLOG_BLOCKED_PERIODS = 3
PERIOD = Duration.minutes(5)
# Custom metrics the runtime publishes with Powertools Metrics (namespace Terrace).
RUN_METRICS = ("RunsStarted", "RunsFinished", "RunsErrored")


class Monitoring(Construct):
    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        enabled: bool,
        http_api: apigw.HttpApi,
        functions: dict[str, lambda_.Function],
        queues: dict[str, sqs.Queue],
        extra_alarms: list[cloudwatch.Alarm],
        alarm_email: str | None,
        runner_logs: logs.ILogGroup,
        api_logs: logs.ILogGroup,
    ) -> None:
        super().__init__(scope, construct_id)
        # The runner logs one JSON line per output line with job_id = plan-<suffix> / apply-<suffix> of run-<suffix>.
        self.queries = [
            logs.QueryDefinition(
                self,
                "RunLogsQuery",
                query_definition_name="Terrace/Runner events",  # job output is not here: Terrace's log API has it
                query_string=logs.QueryString(
                    fields=["@timestamp", "level", "message", "@logStream"],
                    filter_statements=["message like /REPLACE-WITH-A-JOB-ID/"],
                    sort="@timestamp asc",
                    limit=10000,
                ),
                log_groups=[runner_logs],
            ),
            logs.QueryDefinition(
                self,
                "ApiErrorsQuery",
                query_definition_name="Terrace/API errors",
                query_string=logs.QueryString(
                    fields=["@timestamp", "level", "message", "exception", "@requestId"],
                    filter_statements=['level = "ERROR" or @message like /Traceback|Task timed out/'],
                    sort="@timestamp desc",
                    limit=200,
                ),
                log_groups=[api_logs],
            ),
        ]
        self.alarms: list[cloudwatch.Alarm] = list(extra_alarms)
        self.dashboard: cloudwatch.Dashboard | None = None
        if enabled:
            self._alarms_and_dashboard(http_api, functions, queues, alarm_email)

    def _alarms_and_dashboard(
        self,
        http_api: apigw.HttpApi,
        functions: dict[str, lambda_.Function],
        queues: dict[str, sqs.Queue],
        alarm_email: str | None,
    ) -> None:
        for name, fn in functions.items():
            self.alarms.append(
                fn.metric_errors(period=PERIOD).create_alarm(
                    self,
                    f"{name.capitalize()}Errors",
                    alarm_description=f"Terrace: the {name} function raised errors",
                    threshold=1,
                    evaluation_periods=1,
                    comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                    treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                )
            )
        self.alarms.append(
            http_api.metric_server_error(period=PERIOD).create_alarm(
                self,
                "Api5xx",
                alarm_description="Terrace: the HTTP API answered 5xx",
                threshold=5,
                evaluation_periods=1,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
        for name, queue in queues.items():
            if name.endswith("-dlq"):  # a message parked there is an event the events function gave up on
                self.alarms.append(
                    queue.metric_approximate_number_of_messages_visible(period=PERIOD).create_alarm(
                        self,
                        "".join(part.capitalize() for part in name.split("-")) + "Messages",
                        alarm_description=f"Terrace: messages in the {name} dead-letter queue",
                        threshold=1,
                        evaluation_periods=1,
                        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                    )
                )
            elif name.startswith("lane-"):  # the backlog's age: phases wait for a runner longer than a start takes
                self.alarms.append(
                    queue.metric_approximate_age_of_oldest_message(period=PERIOD).create_alarm(
                        self,
                        "".join(part.capitalize() for part in name.split("-")) + "BacklogAge",
                        alarm_description=f"Terrace: a run phase has waited in {name} for over 15 minutes",
                        threshold=LANE_BACKLOG_AGE_S,
                        evaluation_periods=1,
                        comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                        treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
                    )
                )
        self.alarms.append(
            _scaler_metric("BacklogBlocked", "Maximum").create_alarm(
                self,
                "BacklogBlocked",
                alarm_description="Terrace: run phases have waited for runner capacity (terrace:maxRunners) for "
                f"{BACKLOG_BLOCKED_PERIODS * 5} minutes",
                threshold=1,
                evaluation_periods=BACKLOG_BLOCKED_PERIODS,
                datapoints_to_alarm=BACKLOG_BLOCKED_PERIODS,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
        self.alarms.append(
            _scaler_metric("RunTaskFailures", "Sum").create_alarm(
                self,
                "RunTaskFailures",
                alarm_description="Terrace: the scaler could not start runner tasks (ECS RunTask failed three times)",
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
        self.alarms.append(
            cloudwatch.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name="AuditWriteFailures",
                dimensions_map={"service": "terrace-api"},  # published by the api function after an invocation
                statistic="Sum",
                period=PERIOD,
            ).create_alarm(
                self,
                "AuditWriteFailures",
                alarm_description="Terrace: audit events could not be written (each is logged at ERROR in full)",
                threshold=1,
                evaluation_periods=1,
                comparison_operator=cloudwatch.ComparisonOperator.GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
                treat_missing_data=cloudwatch.TreatMissingData.NOT_BREACHING,
            )
        )
        if alarm_email:
            topic = sns.Topic(self, "AlarmTopic", enforce_ssl=True)
            topic.add_subscription(subscriptions.EmailSubscription(alarm_email))
            for alarm in self.alarms:
                alarm.add_alarm_action(actions.SnsAction(topic))

        runs = [
            cloudwatch.Metric(
                namespace=METRICS_NAMESPACE,
                metric_name=m,
                statistic="Sum",
                period=PERIOD,
                dimensions_map={"service": "terrace-events"},  # published by the events function
            )
            for m in RUN_METRICS
        ]
        depth = [q.metric_approximate_number_of_messages_visible(period=PERIOD, label=n) for n, q in queues.items()]
        errors = [fn.metric_errors(period=PERIOD, label=n) for n, fn in functions.items()]
        self.dashboard = cloudwatch.Dashboard(self, "Dashboard", default_interval=Duration.hours(6))
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Runs", left=runs, width=12),
            cloudwatch.GraphWidget(title="Queue depth", left=depth, width=12),
        )
        self.dashboard.add_widgets(
            cloudwatch.GraphWidget(title="Function errors", left=errors, width=12),
            cloudwatch.GraphWidget(
                title="API latency (ms)",
                left=[
                    http_api.metric_latency(period=PERIOD, statistic="p50", label="p50"),
                    http_api.metric_latency(period=PERIOD, statistic="p99", label="p99"),
                ],
                right=[http_api.metric_server_error(period=PERIOD, label="5xx")],
                width=12,
            ),
        )
        self.dashboard.add_widgets(cloudwatch.AlarmStatusWidget(title="Alarms", alarms=self.alarms, width=24))


def _scaler_metric(name: str, statistic: str) -> cloudwatch.Metric:
    """One of the metrics the scaler function publishes (`functions/scaler/handler.py`), per alarm period."""
    return cloudwatch.Metric(
        namespace=METRICS_NAMESPACE,
        metric_name=name,
        dimensions_map={"service": "terrace-scaler"},
        statistic=statistic,
        period=PERIOD,
    )

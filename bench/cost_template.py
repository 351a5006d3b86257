"""The facts bench/cost.py prices, read from a synthesized template: its functions, the runner task, schedules,
lanes and declared metrics; and the resource types the catalog neither prices nor knows to be free."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from bench.cost_catalog import FREE, MONTH_MINUTES, PRICED


@dataclass(frozen=True)
class Line:
    item: str
    idle_month: float
    per_1000_runs: float
    note: str = ""


class Resources:
    """The facts of a template the estimate needs."""

    def __init__(self, template: dict[str, Any]) -> None:
        self.resources: dict[str, dict[str, Any]] = template["Resources"]

    def of(self, resource_type: str) -> list[dict[str, Any]]:
        return [r for r in self.resources.values() if r["Type"] == resource_type]

    def functions(self) -> dict[str, dict[str, Any]]:
        return {k: r for k, r in self.resources.items() if r["Type"] == "AWS::Lambda::Function"}

    def service_of(self, logical_id: str) -> str:
        variables = self.resources[logical_id]["Properties"].get("Environment", {}).get("Variables", {})
        return str(variables.get("POWERTOOLS_SERVICE_NAME", logical_id)).removeprefix("terrace-")

    def function(self, service: str) -> dict[str, Any]:
        for logical_id, fn in self.functions().items():
            if self.service_of(logical_id) == service:
                return fn
        raise KeyError(service)

    def log_reader(self) -> dict[str, Any] | None:
        """The function the CLI's log reads reach at its own URL, when the api function mints log-read URLs there
        (`TERRACE_LOG_READ_URL` names an AWS::Lambda::Url of the stack; infra/log_reads.py); None: they go through
        CloudFront and the HTTP API to the api function."""
        url = self.function("api")["Properties"]["Environment"]["Variables"].get("TERRACE_LOG_READ_URL")
        if not url:
            return None
        function_url = self.resources[url["Fn::GetAtt"][0]]
        assert function_url["Type"] == "AWS::Lambda::Url", url
        return self.resources[function_url["Properties"]["TargetFunctionArn"]["Fn::GetAtt"][0]]

    def memory_gb(self, fn: dict[str, Any]) -> float:
        return int(fn["Properties"].get("MemorySize", 128)) / 1024

    @staticmethod
    def traced(fn: dict[str, Any]) -> bool:
        return fn["Properties"].get("TracingConfig", {}).get("Mode") == "Active"

    def task(self) -> tuple[float, float, dict[str, str]]:
        [task] = self.of("AWS::ECS::TaskDefinition")
        props = task["Properties"]
        assert props["RuntimePlatform"]["CpuArchitecture"] == "ARM64", "Fargate prices below are for Graviton"
        env = {e["Name"]: e["Value"] for e in props["ContainerDefinitions"][0].get("Environment", [])}
        return int(props["Cpu"]) / 1024, int(props["Memory"]) / 1024, env

    def public_runners(self) -> bool:
        """Runner tasks get a public IPv4 when the scaler is told so (public subnets, no NAT)."""
        scaler = self.function("scaler")["Properties"]["Environment"]["Variables"]
        return str(scaler.get("TERRACE_RUNNER_PUBLIC_IP", "true")) == "true"

    def schedules(self) -> list[tuple[str, float, dict[str, Any]]]:
        """(service, invocations a month, function) for each scheduled rule."""
        found = []
        for rule in self.of("AWS::Events::Rule"):
            expression = rule["Properties"].get("ScheduleExpression", "")
            match = re.fullmatch(r"rate\((\d+) (minute|minutes|hour|hours)\)", expression)
            if not match:
                continue
            every_min = int(match[1]) * (60 if match[2].startswith("hour") else 1)
            for target in rule["Properties"]["Targets"]:
                logical_id = target["Arn"]["Fn::GetAtt"][0]
                found.append((self.service_of(logical_id), MONTH_MINUTES / every_min, self.resources[logical_id]))
        return found

    def lanes(self) -> int:
        """The priority lanes the scaler drains (each tick receives from every one): its TERRACE_QUEUE_URL_LANE_*."""
        variables = self.function("scaler")["Properties"]["Environment"]["Variables"]
        return sum(1 for name in variables if name.startswith("TERRACE_QUEUE_URL_LANE_") and not name.endswith("_DLQ"))

    def custom_metrics(self) -> list[tuple[str, str]]:
        declared = {k: fn.get("Metadata", {}).get("terrace:customMetrics", []) for k, fn in self.functions().items()}
        return [(self.service_of(k), metric) for k, metrics in declared.items() for metric in metrics]


def unpriced(template: dict[str, Any]) -> set[str]:
    """Resource types of the template that the catalog neither prices nor knows to be free."""
    return {r["Type"] for r in template["Resources"].values()} - set(PRICED) - set(FREE)

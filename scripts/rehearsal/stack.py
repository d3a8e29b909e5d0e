"""A stack of the template on the rehearsal's moto: created as a deploy creates it
(docs/deploy.md), checked against the template, and its functions' roles
assumed as Lambda does. docs/rehearsal.md (step 3) says what is created where,
and what is read back and compared; a difference stops the rehearsal before
any function runs.
"""

from __future__ import annotations

import io
import json
import secrets
import string
import uuid
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts.rehearsal import template as tpl
from scripts.rehearsal.cloud import ACCOUNT, REGION, Cloud
from scripts.rehearsal.runtime import Credentials, Function


class StackError(Exception):
    """The stack on moto is not what the template says."""


def _suffix(length: int = 12) -> str:
    return "".join(secrets.choice(string.ascii_uppercase + string.digits) for _ in range(length))


@dataclass
class Stack:
    cloud: Cloud
    template: tpl.Template
    name: str
    parameters: dict[str, str]
    resolve: tpl.Resolver = field(init=False)
    functions: dict[str, Function] = field(default_factory=dict)
    credentials: dict[str, Credentials] = field(default_factory=dict)
    physical: dict[str, str] = field(default_factory=dict)
    played: dict[str, dict[str, Any]] = field(default_factory=dict)  # resolved properties

    def role_client(self, role: str, service: str) -> Any:
        return self.credentials[role].client(service, self.cloud.endpoint)

    def deploy(self, code: bytes) -> None:
        with self.cloud.as_account():
            self._upload(code)
            outputs = {
                f"RehearsalAttribute{i}": needed
                for i, needed in enumerate(self.template.attributes_needed())
            }
            cloudformation = self.cloud.account_client("cloudformation")
            cloudformation.create_stack(
                StackName=self.name,
                TemplateBody=json.dumps(self.template.for_moto(outputs)),
                Parameters=[
                    {"ParameterKey": k, "ParameterValue": v} for k, v in self.parameters.items()
                ],
                Capabilities=["CAPABILITY_IAM"],
            )
            (stack,) = cloudformation.describe_stacks(StackName=self.name)["Stacks"]
            if stack["StackStatus"] != "CREATE_COMPLETE":
                raise StackError(
                    f"{self.name}: {stack['StackStatus']} {stack.get('StackStatusReason')}"
                )
            resources = cloudformation.describe_stack_resources(StackName=self.name)
            # moto lists a resource its condition left out without ids: skip it.
            self.physical = {
                r["LogicalResourceId"]: r["PhysicalResourceId"]
                for r in resources["StackResources"]
                if "LogicalResourceId" in r
            }
            attributes = {
                outputs[o["OutputKey"]]: o["OutputValue"] for o in stack.get("Outputs", [])
            }
            self._play(attributes)
            self._apply()
            self._check()
            self._assume_roles()

    def _upload(self, code: bytes) -> None:
        """Where `aws cloudformation package` would put the code: the template's S3 location."""
        s3 = self.cloud.account_client("s3")
        for function in self.template.of_type("AWS::Lambda::Function").values():
            location = function["Properties"]["Code"]
            buckets = {b["Name"] for b in s3.list_buckets().get("Buckets", [])}
            if location["S3Bucket"] not in buckets:
                s3.create_bucket(Bucket=location["S3Bucket"])
            s3.put_object(Bucket=location["S3Bucket"], Key=location["S3Key"], Body=code)

    def _play(self, attributes: Mapping[tuple[str, str], str]) -> None:
        """Names for the resources the rehearsal plays, then every value resolved."""
        attributes = dict(attributes)
        physical = dict(self.physical)
        for name in sorted(self.template.played):
            kind = self.template.resources[name]["Type"]
            if kind == "AWS::Lambda::Function":
                function_name = f"{self.name}-{name}-{_suffix()}"[:64]
                physical[name] = function_name
                attributes[(name, "Arn")] = (
                    f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{function_name}"
                )
            elif kind in ("AWS::ApiGateway::RestApi", "AWS::ApiGatewayV2::Api"):
                physical[name] = _suffix(10).lower()
                attributes[(name, "RootResourceId")] = secrets.token_hex(5)
                attributes[(name, "ApiEndpoint")] = (
                    f"https://{physical[name]}.execute-api.{REGION}.amazonaws.com"
                )
            elif kind in ("AWS::ApiGateway::Stage", "AWS::ApiGatewayV2::Stage"):
                physical[name] = self.template.resources[name]["Properties"]["StageName"]
            elif kind == "AWS::Events::Rule":
                rule = f"{self.name}-{name}-{_suffix()}"[:64]
                physical[name] = rule
                attributes[(name, "Arn")] = f"arn:aws:events:{REGION}:{ACCOUNT}:rule/{rule}"
            else:
                physical[name] = str(uuid.uuid4())
        pseudo = {
            "AWS::Region": REGION,
            "AWS::AccountId": ACCOUNT,
            "AWS::Partition": "aws",
            "AWS::StackName": self.name,
            "AWS::URLSuffix": "amazonaws.com",
        }
        defaults = {
            name: str(p["Default"])
            for name, p in self.template.body.get("Parameters", {}).items()
            if "Default" in p
        }
        self.resolve = tpl.Resolver(
            self.template, {**defaults, **self.parameters}, pseudo, physical, attributes
        )
        self.played = {
            name: self.resolve(self.template.resources[name].get("Properties", {}))
            for name in self.template.played | self.template.applied
            if self.resolve.present(name)
        }
        self.physical = physical
        for name, properties in self.played.items():
            if self.template.resources[name]["Type"] != "AWS::Lambda::Function":
                continue
            environment = properties.get("Environment", {}).get("Variables", {})
            self.functions[name] = Function(
                logical_id=name,
                name=physical[name],
                arn=attributes[(name, "Arn")],
                handler=properties["Handler"],
                runtime=properties["Runtime"],
                environment={k: str(v) for k, v in environment.items()},
                role=self.template.role_of(name),
                role_arn=properties["Role"],
                timeout=int(properties.get("Timeout", 3)),
                memory=int(properties.get("MemorySize", 128)),
                tracing=properties.get("TracingConfig", {}).get("Mode") == "Active",
                log_group=properties.get("LoggingConfig", {}).get(
                    "LogGroup", f"/aws/lambda/{physical[name]}"
                ),
            )

    def _apply(self) -> None:
        """The resources moto's CloudFormation cannot create, from their properties."""
        sqs = self.cloud.account_client("sqs")
        for name in self.template.applied & set(self.played):
            properties = self.played[name]
            kind = self.template.resources[name]["Type"]
            if kind == "AWS::SQS::QueuePolicy":
                for url in properties["Queues"]:
                    sqs.set_queue_attributes(
                        QueueUrl=url,
                        Attributes={"Policy": json.dumps(properties["PolicyDocument"])},
                    )
            elif kind == "AWS::CloudWatch::Alarm":
                # CloudFormation's properties are PutMetricAlarm's; the
                # threshold, a parameter, resolves to text.
                threshold = float(properties["Threshold"])
                self.cloud.account_client("cloudwatch").put_metric_alarm(
                    AlarmName=f"{self.name}-{name}", **{**properties, "Threshold": threshold}
                )

    def _check(self) -> None:
        problems: list[str] = []
        for name, resource in self.template.resources.items():
            if name not in self.template.in_moto or not self.resolve.present(name):
                continue
            properties = self.resolve(resource.get("Properties", {}))
            check = {
                "AWS::DynamoDB::Table": self._check_table,
                "AWS::SQS::Queue": self._check_queue,
                "AWS::Events::Rule": self._check_rule,
                "AWS::IAM::Role": self._check_role,
            }.get(resource["Type"])
            if check is not None:
                problems += [f"{name}: {p}" for p in check(name, properties)]
        if problems:
            raise StackError("moto's stack differs from the template:\n  " + "\n  ".join(problems))

    def _check_table(self, name: str, properties: dict[str, Any]) -> list[str]:
        dynamodb = self.cloud.account_client("dynamodb")
        table = dynamodb.describe_table(TableName=self.physical[name])["Table"]
        problems = []
        if table["KeySchema"] != properties["KeySchema"]:
            problems.append(f"keys {table['KeySchema']}")

        def attributes(spec: Mapping[str, Any]) -> set[tuple[str, str]]:
            return {(a["AttributeName"], a["AttributeType"]) for a in spec["AttributeDefinitions"]}

        def indexes(spec: Mapping[str, Any]) -> dict[str, Any]:
            found = spec.get("GlobalSecondaryIndexes", [])
            return {i["IndexName"]: (i["KeySchema"], i["Projection"]) for i in found}

        if attributes(table) != attributes(properties):
            problems.append("attribute definitions")
        made, wanted = indexes(table), indexes(properties)
        if made != wanted:
            problems.append(f"indexes {sorted(made)} instead of {sorted(wanted)}")
        stream = table.get("StreamSpecification", {})
        view = properties.get("StreamSpecification", {}).get("StreamViewType")
        if (stream.get("StreamViewType") if stream.get("StreamEnabled") else None) != view:
            problems.append(f"stream {stream}")
        ttl = dynamodb.describe_time_to_live(TableName=self.physical[name])["TimeToLiveDescription"]
        spec = properties.get("TimeToLiveSpecification")
        if spec and (
            ttl.get("TimeToLiveStatus") != "ENABLED"
            or ttl.get("AttributeName") != spec["AttributeName"]
        ):
            problems.append(f"time to live {ttl}")
        return problems

    def _check_queue(self, name: str, properties: dict[str, Any]) -> list[str]:
        attributes = self.cloud.account_client("sqs").get_queue_attributes(
            QueueUrl=self.physical[name], AttributeNames=["All"]
        )["Attributes"]
        problems = []
        for key in ("VisibilityTimeout", "MessageRetentionPeriod"):
            if key in properties and str(properties[key]) != attributes.get(key):
                problems.append(f"{key} {attributes.get(key)}")
        if "RedrivePolicy" in properties:
            made = json.loads(attributes.get("RedrivePolicy", "{}"))
            wanted = properties["RedrivePolicy"]
            if (made.get("deadLetterTargetArn"), int(made.get("maxReceiveCount", 0))) != (
                wanted["deadLetterTargetArn"],
                int(wanted["maxReceiveCount"]),
            ):
                problems.append(f"redrive policy {made}")
        return problems

    def _check_rule(self, name: str, properties: dict[str, Any]) -> list[str]:
        events = self.cloud.account_client("events")
        bus = properties.get("EventBusName", "default")
        rule = events.describe_rule(Name=self.physical[name], EventBusName=bus)
        problems = []
        if json.loads(rule.get("EventPattern", "{}")) != properties.get("EventPattern", {}):
            problems.append(f"pattern {rule.get('EventPattern')}")
        targets = events.list_targets_by_rule(Rule=self.physical[name], EventBusName=bus)["Targets"]
        if sorted(t["Arn"] for t in targets) != sorted(t["Arn"] for t in properties["Targets"]):
            problems.append(f"targets {targets}")
        return problems

    def _check_role(self, name: str, properties: dict[str, Any]) -> list[str]:
        """The role has exactly the template's policies on it, nothing else."""
        iam = self.cloud.account_client("iam")
        role = self.physical[name]
        made = {
            policy: _document(
                iam.get_role_policy(RoleName=role, PolicyName=policy)["PolicyDocument"]
            )
            for policy in iam.list_role_policies(RoleName=role)["PolicyNames"]
        }
        attached = iam.list_attached_role_policies(RoleName=role)["AttachedPolicies"]
        wanted = tpl.role_policies(self.template, self.resolve, name)
        problems = []
        if made != wanted:
            problems.append(f"policies {sorted(made)} differ from the template's {sorted(wanted)}")
        if attached:
            problems.append(f"managed policies attached: {attached}")
        return problems

    def _assume_roles(self) -> None:
        """As Lambda does for each function (its trust policy names Lambda's service)."""
        sts = self.cloud.account_client("sts")
        for function in self.functions.values():
            if function.role in self.credentials:
                continue
            answer = sts.assume_role(
                RoleArn=function.role_arn, RoleSessionName=function.name[-64:]
            )["Credentials"]
            self.credentials[function.role] = Credentials(
                answer["AccessKeyId"], answer["SecretAccessKey"], answer["SessionToken"]
            )

    def unzip(self, function: str, into: Path) -> Path:
        """The function's code as deployed (the object its Code names), unzipped
        as Lambda's /var/task."""
        location = self.template.resources[function]["Properties"]["Code"]
        with self.cloud.as_account():
            s3 = self.cloud.account_client("s3")
            code = s3.get_object(Bucket=location["S3Bucket"], Key=location["S3Key"])["Body"]
            with zipfile.ZipFile(io.BytesIO(code.read())) as package:
                package.extractall(into)
        return into

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        """The played resources of `kind`, resolved."""
        return {
            name: properties
            for name, properties in self.played.items()
            if self.template.resources[name]["Type"] == kind
        }


def _document(document: Any) -> Any:
    return json.loads(document) if isinstance(document, str) else document

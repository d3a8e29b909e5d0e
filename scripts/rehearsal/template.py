"""The expanded template (what CloudFormation deploys), split between moto and the
rehearsal (docs/rehearsal.md, step 3): moto's CloudFormation creates what it
supports, the rehearsal plays Lambda and API Gateway and what refers to them
(moto runs functions in Docker, and serves no API), applies REHEARSAL_APPLIES
from their properties, and stops at any other type, so that a template change
is never skipped silently. Values in the played resources are resolved as
CloudFormation would, from the stack moto created and outputs added for them.
"""

from __future__ import annotations

import copy
import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Optional

PLAYED_PREFIXES = ("AWS::Lambda::", "AWS::ApiGateway::", "AWS::ApiGatewayV2::")
REHEARSAL_APPLIES = ("AWS::SQS::QueuePolicy", "AWS::CloudWatch::Alarm")
NO_VALUE = "AWS::NoValue"
_SUB = re.compile(r"\$\{([^}!][^}]*)\}")


class TemplateError(Exception):
    """The template holds something the rehearsal cannot rehearse yet."""


def referenced(node: Any) -> Iterator[tuple[str, Optional[str]]]:
    """Every (logical id, attribute or None) that `node` refers to."""
    if isinstance(node, dict):
        if set(node) == {"Ref"}:
            yield node["Ref"], None
            return
        if set(node) == {"Fn::GetAtt"}:
            target = node["Fn::GetAtt"]
            name, attribute = target if isinstance(target, list) else target.split(".", 1)
            yield name, attribute
            return
        if set(node) == {"Fn::Sub"}:
            text, variables = (
                node["Fn::Sub"] if isinstance(node["Fn::Sub"], list) else (node["Fn::Sub"], {})
            )
            for value in variables.values():
                yield from referenced(value)
            for name in _SUB.findall(text):
                if name in variables:
                    continue
                logical, _, attribute = name.partition(".")
                yield logical, attribute or None
            return
        for value in node.values():
            yield from referenced(value)
    elif isinstance(node, list):
        for value in node:
            yield from referenced(value)


@dataclass
class Template:
    """The expanded template, and which of its resources each side creates."""

    body: dict[str, Any]
    played: set[str] = field(default_factory=set)
    applied: set[str] = field(default_factory=set)
    in_moto: set[str] = field(default_factory=set)

    @classmethod
    def split(cls, body: dict[str, Any], moto_types: set[str]) -> Template:
        resources = body["Resources"]
        played = {name for name, r in resources.items() if r["Type"].startswith(PLAYED_PREFIXES)}
        changed = True
        while changed:  # whatever refers to a played resource is played too
            changed = False
            for name, resource in resources.items():
                if name not in played and any(
                    target in played for target, _ in referenced(resource)
                ):
                    played.add(name)
                    changed = True
        template = cls(body, played)
        for name, resource in resources.items():
            kind = resource["Type"]
            if name in played:
                continue
            if kind in REHEARSAL_APPLIES:
                template.applied.add(name)
            elif kind in moto_types:
                template.in_moto.add(name)
            else:
                raise TemplateError(
                    f"{name} is an {kind}, which moto's CloudFormation cannot create and the "
                    "rehearsal does not apply yet: teach scripts/rehearsal/stack.py"
                )
        return template

    @property
    def resources(self) -> dict[str, Any]:
        resources: dict[str, Any] = self.body["Resources"]
        return resources

    def of_type(self, kind: str) -> dict[str, dict[str, Any]]:
        return {n: r for n, r in self.resources.items() if r["Type"] == kind}

    def attributes_needed(self) -> list[tuple[str, str]]:
        """The (moto resource, attribute) pairs the template uses: the played and
        applied resources need them, and so does the check of what moto made."""
        needed = {
            (name, attribute)
            for name, attribute in referenced(self.resources)
            if attribute is not None and name in self.in_moto
        }
        return sorted(needed)

    def for_moto(self, outputs: Mapping[str, tuple[str, str]]) -> dict[str, Any]:
        """The template moto's CloudFormation creates: its resources, and an output
        per attribute the rehearsal needs (the stack's own outputs name played ones)."""
        body = {k: copy.deepcopy(v) for k, v in self.body.items() if k != "Outputs"}
        body["Resources"] = {n: r for n, r in body["Resources"].items() if n in self.in_moto}
        body["Outputs"] = {
            key: {"Value": {"Fn::GetAtt": [name, attribute]}}
            for key, (name, attribute) in outputs.items()
        }
        return body

    def role_of(self, function: str) -> str:
        role = self.resources[function]["Properties"]["Role"]
        ((name, attribute),) = referenced(role)
        if attribute != "Arn":
            raise TemplateError(f"{function}'s Role is not a role of the template: {role}")
        return name


class Resolver:
    """Intrinsic functions, as CloudFormation resolves them for one stack: moto's
    own resolution (the one its CloudFormation applies to what it creates),
    over this stack's parameters and names, and the attributes of its
    resources, the played ones included. A value that resolves to
    AWS::NoValue is left out, in a list too (as CloudFormation does)."""

    def __init__(
        self,
        template: Template,
        parameters: Mapping[str, str],
        pseudo: Mapping[str, str],
        physical: Mapping[str, str],
        attributes: Mapping[tuple[str, str], str],
    ) -> None:
        from moto.cloudformation.parsing import LazyDict, parse_condition

        self.template = template
        # What Ref gives, the first of: pseudo parameters, parameters, resources.
        self._refs = {**physical, **parameters, **pseudo}
        self.attributes = dict(attributes)
        # The map moto's functions read conditions from, each evaluated once.
        self.lazy_condition_map = LazyDict()
        stack: Any = self
        for name, condition in template.body.get("Conditions", {}).items():
            self.lazy_condition_map[name] = functools.partial(
                parse_condition, condition, stack, self.lazy_condition_map
            )

    def __call__(self, node: Any) -> Any:
        from moto.cloudformation import parsing

        stack: Any = self
        return _present(parsing.clean_json(node, stack))

    def condition(self, name: str) -> bool:
        return bool(self.lazy_condition_map[name])

    def present(self, name: str) -> bool:
        """Whether the resource exists in this stack (its Condition, if any, holds)."""
        condition = self.template.resources[name].get("Condition")
        return condition is None or self.condition(condition)

    def get_attribute(self, name: str, attribute: str) -> Any:
        try:
            return self.attributes[(name, attribute)]
        except KeyError:
            raise TemplateError(f"Fn::GetAtt {name}.{attribute} is not known") from None

    # -- what moto's clean_json asks of the stack ----------------------------------

    def __getitem__(self, name: str) -> Any:
        """Ref `name`."""
        if name == NO_VALUE:
            return None
        try:
            return self._refs[name]
        except KeyError:
            raise TemplateError(f"Ref {name}: no such parameter or resource in the stack") from None

    def get(self, name: str) -> Any:
        """The resource Fn::GetAtt reads an attribute of."""
        return _Attributes(self, name)


@dataclass(frozen=True)
class _Attributes:
    resolve: Resolver
    name: str

    def get_cfn_attribute(self, attribute: str) -> Any:
        return self.resolve.get_attribute(self.name, attribute)


def _present(value: Any) -> Any:
    """`value` without the list entries that resolved to AWS::NoValue (None)."""
    if isinstance(value, list):
        return [_present(item) for item in value if item is not None]
    if isinstance(value, dict):
        return {key: _present(item) for key, item in value.items()}
    return value


def _policies(
    template: Template, resolve: Resolver, roles: list[str]
) -> Iterator[tuple[str, str, dict[str, Any], tuple[str, ...]]]:
    """Every policy of the template on `roles` in this stack: its id for a
    mutation ("<role>.<name>" for an inline one), its name, its document (not
    resolved) and the roles of `roles` it is on."""
    for role in roles:
        for policy in template.resources[role]["Properties"].get("Policies", []):
            name = policy["PolicyName"]
            yield f"{role}.{name}", name, policy["PolicyDocument"], (role,)
    for name, resource in sorted(template.of_type("AWS::IAM::Policy").items()):
        on = tuple(r for r in roles if {"Ref": r} in resource["Properties"].get("Roles", []))
        if on and resolve.present(name):
            properties = resource["Properties"]
            yield name, properties["PolicyName"], properties["PolicyDocument"], on


def role_policies(template: Template, resolve: Resolver, role: str) -> dict[str, dict[str, Any]]:
    """Policy name -> document, every policy of the template on `role` in this stack."""
    return {
        resolve(name): resolve(document)
        for _, name, document, _ in _policies(template, resolve, [role])
    }


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


@dataclass(frozen=True)
class Mutation:
    """One action removed from one statement of one policy of the template."""

    policy: str  # the AWS::IAM::Policy's logical id, or "<role>.<policy name>"
    statement: int
    action: str
    roles: tuple[str, ...]  # the roles that lose it
    # The policy's last action in this stack (what other statements it has are
    # under conditions that do not hold): the policy goes, as IAM refuses an
    # empty one.
    last: bool = False

    def __str__(self) -> str:
        return f"{self.action} from {self.policy} (statement {self.statement})"

    def apply(self, body: dict[str, Any]) -> dict[str, Any]:
        """A copy of the expanded template without the action (a statement left
        without actions goes, and so does a policy left without any)."""
        changed = copy.deepcopy(body)
        resources = changed["Resources"]
        role, _, name = self.policy.partition(".")
        if self.policy in resources:
            holder, policies = resources[self.policy]["Properties"], None
        else:
            policies = resources[role]["Properties"]["Policies"]
            (holder,) = (p for p in policies if p["PolicyName"] == name)
        entries = holder["PolicyDocument"]["Statement"]
        entry = entries[self.statement]
        statement = entry["Fn::If"][1] if "Fn::If" in entry else entry
        actions = [a for a in as_list(statement["Action"]) if a != self.action]
        if actions:
            statement["Action"] = actions
        else:
            del entries[self.statement]
        if self.last and policies is not None:
            policies.remove(holder)
        elif self.last:
            del resources[self.policy]
            for resource in resources.values():
                if "DependsOn" in resource:
                    resource["DependsOn"] = [
                        d for d in as_list(resource["DependsOn"]) if d != self.policy
                    ]
        return changed


def mutations(template: Template, resolve: Resolver, roles: list[str]) -> list[Mutation]:
    """Every action granted to the functions' roles in this stack, one at a time."""
    found: list[Mutation] = []
    for policy, _, document, on in _policies(template, resolve, roles):
        found += _statement_mutations(policy, document, on, resolve)
    return found


def _statement_mutations(
    policy: str, document: dict[str, Any], roles: tuple[str, ...], resolve: Resolver
) -> list[Mutation]:
    found = []
    for index, entry in enumerate(document["Statement"]):
        statement = entry
        if "Fn::If" in entry:
            condition, statement, _ = entry["Fn::If"]
            if not resolve.condition(condition):
                continue
        for action in as_list(statement["Action"]):
            found.append(Mutation(policy, index, action, roles))
    if len(found) == 1:
        found = [Mutation(policy, found[0].statement, found[0].action, roles, last=True)]
    return found

"""Package the app for CloudFormation: `chalice package` merged with the stack's template.

    python scripts/package.py [--stage prod] [--out dist]

writes OUT/sam.json and OUT/deployment.zip. The stack's own resources, and
its settings of what chalice generates, are in deploy/stack.yaml, which
`chalice package --merge-template` merges into the SAM template it generates
(docs/deploy.md says what each part is for). This script does only what a
file merged by keys cannot say, each in a function below: run chalice
offline, check what it made, rewrite its CORS preflights and the other
methods of its routes, set the EndpointURL output, compile the bundle, and
write the template as JSON (chalice writes YAML when it merges YAML).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from types import CodeType
from typing import Any, Optional

PROJECT_DIR = Path(__file__).resolve().parents[1]
# What `chalice package --merge-template` merges into its template.
STACK_TEMPLATE = PROJECT_DIR / "deploy" / "stack.yaml"

# The functions chalice makes (app.py) and the role each must have, as the
# template names them: chalice names the API function `APIHandler` and, with
# `autogen_policy: false`, each role after its function (function name + _role).
FUNCTION = "APIHandler"
FUNCTIONS = {
    FUNCTION: "ApiHandlerRole",
    "OnDynamodbRecord": "OnDynamodbRecordRole",
    "DeliverWebhooks": "DeliverWebhooksRole",
    "SweepDeadlines": "SweepDeadlinesRole",
    "NotifyPeople": "NotifyPeopleRole",
}
REST_API = "RestAPI"
HTTP_API = "HttpAPI"
HTTP_API_CHOSEN = "HttpApiChosen"
# Stages that serve the public: they must verify callers (WORKFLOW_AUTH=jwt in
# the stage's environment_variables in .chalice/config.json).
PUBLIC_STAGES = ("prod",)
PREFLIGHT_ORIGIN = "method.response.header.Access-Control-Allow-Origin"
ANY_METHOD = "x-amazon-apigateway-any-method"
PLACEHOLDER_REGION = "us-east-1"


def read_template(text: str, name: str = "") -> dict[str, Any]:
    """A CloudFormation template in YAML (short-form tags such as !Ref too), as
    chalice reads the template it merges."""
    from chalice.package import YAMLTemplateSerializer

    template: dict[str, Any] = YAMLTemplateSerializer().load_template(text, name)
    return template


def package(out_dir: Path, stage: str) -> Path:
    """Run `chalice package` with the stack's template merged in; the SAM template's path."""
    import botocore.session

    env = dict(os.environ)
    # chalice picks the partition's service principals by the region, and calls no AWS API.
    if botocore.session.Session().get_config_variable("region") is None:
        env["AWS_DEFAULT_REGION"] = env.get("AWS_REGION") or PLACEHOLDER_REGION
    subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from chalice.cli import main; sys.exit(main())",
            "--project-dir",
            str(PROJECT_DIR),
            "package",
            "--stage",
            stage,
            "--merge-template",
            str(STACK_TEMPLATE),
            str(out_dir),
        ],
        check=True,
        env=env,
    )
    merged = out_dir / "sam.yaml"
    template = read_template(merged.read_text(encoding="utf-8"), str(merged))
    merged.unlink()
    check_packaged(template)
    check_authenticates(template, stage)
    add_bytecode(out_dir / "deployment.zip", function_runtime(template))
    preflights_allow_the_origin(template)
    other_methods_reach_the_function(template)
    template["Outputs"]["EndpointURL"] = {"Value": endpoint_url()}
    sam = out_dir / "sam.json"
    sam.write_text(json.dumps(template, indent=2))
    return sam


def endpoint_url() -> dict[str, Any]:
    """The URL of the stack's API: the HTTP API's `$default` stage at its root,
    or the REST API's `api` stage."""
    suffix = ".execute-api.${AWS::Region}.${AWS::URLSuffix}/"
    return {
        "Fn::If": [
            HTTP_API_CHOSEN,
            {"Fn::Sub": f"https://${{{HTTP_API}}}{suffix}"},
            {"Fn::Sub": f"https://${{{REST_API}}}{suffix}api/"},
        ]
    }


def check_packaged(template: dict[str, Any]) -> None:
    """Fail if chalice named things otherwise than deploy/stack.yaml assumes."""
    resources = template["Resources"]
    functions = sorted(
        name
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::Function"
    )
    if functions != sorted(FUNCTIONS):
        raise RuntimeError(
            f"Expected the functions {sorted(FUNCTIONS)}, chalice made {functions}: "
            "give each its environment and policy in deploy/stack.yaml"
        )
    api = resources.get(REST_API, {})
    if api.get("Type") != "AWS::Serverless::Api":
        raise RuntimeError(f"Expected the REST API {REST_API!r}: the gateway responses need it")
    version = api["Properties"].get("DefinitionBody", {}).get("swagger")
    if version != api["Properties"]["OpenApiVersion"]:
        raise RuntimeError(
            f"chalice's API definition is not Swagger {api['Properties']['OpenApiVersion']} "
            f"(swagger: {version!r}): update OpenApiVersion in deploy/stack.yaml"
        )
    for function, expected in FUNCTIONS.items():
        role = resources[function]["Properties"].get("Role")
        if role != {"Fn::GetAtt": [expected, "Arn"]}:
            raise RuntimeError(
                f"{function} does not use the role {expected!r} (it has {role}); "
                "is autogen_policy false for this stage?"
            )


def function_runtime(template: dict[str, Any]) -> str:
    """The Python every function runs ("python3.11"): the bundle's bytecode is for it."""
    runtimes = {
        resource["Properties"]["Runtime"]
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Serverless::Function"
    }
    if len(runtimes) != 1:
        raise RuntimeError(f"Expected one runtime for every function, chalice gave {runtimes}")
    (runtime,) = runtimes
    return str(runtime)


def add_bytecode(bundle: Path, runtime: str) -> int:
    """Ship each module of `bundle` compiled, as the runtime would compile it; how many.

    Why, and why as checked-hash .pyc files (PEP 552): docs/deploy.md ("Every module
    in deployment.zip ships compiled"). What __pycache__ chalice copied from the
    working tree is dropped (stale files, other Pythons', checked against modification
    times the zip keeps to 2 seconds)."""
    import importlib.util
    import marshal
    import zipfile

    python = f"python{sys.version_info.major}.{sys.version_info.minor}"
    if runtime != python:
        raise RuntimeError(
            f"The functions run {runtime}, and this is {python}: its bytecode would not "
            f"load there. Package with {runtime} (make venv with it)."
        )
    tag = sys.implementation.cache_tag
    # PEP 552's flags: hash-based, checked against the source.
    header = importlib.util.MAGIC_NUMBER + (0b11).to_bytes(4, "little")
    staged = bundle.with_suffix(".staged.zip")
    compiled = 0
    try:
        with zipfile.ZipFile(bundle) as sources, zipfile.ZipFile(staged, "w") as out:
            for entry in sources.infolist():
                if "/__pycache__/" in f"/{entry.filename}":
                    continue
                data = sources.read(entry)
                out.writestr(entry, data)
                code = _compiled(entry.filename, data)
                if code is None:
                    continue
                folder, _, name = entry.filename.rpartition("/")
                cached = f"{folder}/__pycache__/{name[:-3]}.{tag}.pyc".lstrip("/")
                pyc = zipfile.ZipInfo(cached, date_time=entry.date_time)
                pyc.external_attr = entry.external_attr
                pyc.compress_type = zipfile.ZIP_DEFLATED
                out.writestr(pyc, header + importlib.util.source_hash(data) + marshal.dumps(code))
                compiled += 1
        staged.replace(bundle)
    finally:
        staged.unlink(missing_ok=True)
    return compiled


def _compiled(filename: str, source: bytes) -> Optional[CodeType]:
    """The module's code as the runtime compiles it (no -O, no __future__ of
    this file); None for what is not a module, or does not compile (a
    dependency's file for another Python, which its import would refuse as well)."""
    if not filename.endswith(".py"):
        return None
    try:
        return compile(source, filename, "exec", dont_inherit=True, optimize=0)
    except SyntaxError:
        return None


def other_methods_reach_the_function(template: dict[str, Any]) -> None:
    """Every path's other methods (API Gateway's ANY, which the defined ones take
    precedence over) go to the function, which answers them 405 with an Allow
    header as `make run` does, not as API Gateway's missing route (docs/deploy.md)."""
    definition = template["Resources"][REST_API]["Properties"]["DefinitionBody"]
    for methods in definition["paths"].values():
        proxied = [
            operation
            for operation in methods.values()
            if operation.get("x-amazon-apigateway-integration", {}).get("type") == "aws_proxy"
        ]
        if proxied and ANY_METHOD not in methods:
            methods[ANY_METHOD] = {
                key: json.loads(json.dumps(value))
                for key, value in proxied[0].items()
                if key in ("parameters", "responses", "x-amazon-apigateway-integration")
            }


def preflights_allow_the_origin(template: dict[str, Any]) -> None:
    """Each CORS preflight, which API Gateway answers itself from the definition, names
    the CorsOrigin parameter as the gateway responses do, not the origin the app had
    while chalice packaged it ("null" in jwt mode)."""
    api = template["Resources"][REST_API]["Properties"]
    origin = api["GatewayResponses"]["DEFAULT_4XX"]["ResponseParameters"]["Headers"]
    for methods in api["DefinitionBody"]["paths"].values():
        preflight = methods.get("options", {}).get("x-amazon-apigateway-integration", {})
        for response in preflight.get("responses", {}).values():
            parameters = response.get("responseParameters", {})
            if PREFLIGHT_ORIGIN in parameters:
                parameters[PREFLIGHT_ORIGIN] = origin["Access-Control-Allow-Origin"]


def check_authenticates(template: dict[str, Any], stage: str) -> None:
    """Refuse a public stage whose function would trust whatever callers say."""
    variables = template["Resources"][FUNCTION]["Properties"]["Environment"]["Variables"]
    mode = str(variables.get("WORKFLOW_AUTH", "none")).strip().lower()
    if stage in PUBLIC_STAGES and mode != "jwt":
        raise RuntimeError(
            f"The {stage!r} stage would run with WORKFLOW_AUTH={mode}, which trusts whoever "
            "calls: set WORKFLOW_AUTH to jwt in its environment_variables in .chalice/config.json"
        )
    if "WORKFLOW_JWT_SECRET" in variables:
        raise RuntimeError("A shared JWT secret is for local use; deploy with the JWKS URL")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", default="prod")
    parser.add_argument("--out", type=Path, default=PROJECT_DIR / "dist")
    args = parser.parse_args(argv)
    try:
        sam = package(args.out.resolve(), args.stage)
    except subprocess.CalledProcessError as exc:
        return exc.returncode  # chalice has said why
    except RuntimeError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"Wrote {sam} and {sam.with_name('deployment.zip')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Expand `make package`'s SAM template into the CloudFormation that deploys.

    python scripts/expand_template.py [dist/sam.json] [dist/cloudformation.json]
    python scripts/expand_template.py --default ApiType=rest dist/sam.json dist/rest.json

CloudFormation runs the SAM transform when the stack is deployed; this runs
the same translator here, offline (docs/deploy.md, "Checks on the template"),
so that tests and scanners see the resources that will really exist. It
gets a placeholder region, and an empty map of managed policies (each
function has its own role, so SAM looks none up); a local CodeUri becomes a
placeholder S3 location, as `aws cloudformation package` would make it.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

PROJECT_DIR = Path(__file__).resolve().parents[1]
PLACEHOLDER_REGION = "us-east-1"
PLACEHOLDER_BUCKET = "s3://artifact-bucket/"


def expand(sam_template: dict[str, Any]) -> dict[str, Any]:
    """The CloudFormation template SAM's transform makes of `sam_template`."""
    import boto3
    from samtranslator.model.exceptions import InvalidDocumentException
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    template = _with_s3_code(sam_template)
    translator = Translator(
        managed_policy_map={},
        sam_parser=Parser(),
        boto_session=boto3.session.Session(region_name=PLACEHOLDER_REGION),
    )
    try:
        return translator.translate(template, parameter_values={})
    except InvalidDocumentException as exc:
        causes = "; ".join(cause.message for cause in exc.causes)
        raise ValueError(f"SAM cannot translate the template: {causes}") from exc


def with_defaults(template: dict[str, Any], defaults: Sequence[str]) -> dict[str, Any]:
    """A copy whose parameters NAME default to VALUE, for each NAME=VALUE of
    `defaults` (a parameter that does not exist, or a value it does not
    allow, is a ValueError)."""
    changed = copy.deepcopy(template)
    for default in defaults:
        name, _, value = default.partition("=")
        parameter = changed.get("Parameters", {}).get(name)
        if parameter is None:
            raise ValueError(f"The template has no parameter {name!r}")
        allowed = parameter.get("AllowedValues")
        if allowed is not None and value not in [str(v) for v in allowed]:
            raise ValueError(f"{name} allows {allowed}, not {value!r}")
        parameter["Default"] = value
    return changed


def _with_s3_code(sam_template: dict[str, Any]) -> dict[str, Any]:
    """A copy whose functions' local CodeUri points at a placeholder S3 object."""
    template = copy.deepcopy(sam_template)
    for resource in template["Resources"].values():
        properties = resource.get("Properties", {})
        code = properties.get("CodeUri")
        is_local = isinstance(code, str) and not code.startswith("s3://")
        if resource["Type"] == "AWS::Serverless::Function" and is_local:
            properties["CodeUri"] = PLACEHOLDER_BUCKET + Path(code).name
    return template


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sam", nargs="?", type=Path, default=PROJECT_DIR / "dist" / "sam.json")
    parser.add_argument(
        "out", nargs="?", type=Path, default=PROJECT_DIR / "dist" / "cloudformation.json"
    )
    parser.add_argument(
        "--default",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the expanded template's parameter NAME defaults to VALUE",
    )
    args = parser.parse_args(argv)
    try:
        expanded = expand(with_defaults(json.loads(args.sam.read_text()), args.default))
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    args.out.write_text(json.dumps(expanded, indent=2) + "\n")
    print(f"Wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

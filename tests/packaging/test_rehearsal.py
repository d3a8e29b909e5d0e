"""The deploy rehearsal (`make rehearse`, docs/rehearsal.md): the packaged stack
on a moto server that enforces IAM, each function from the package with its
own role, compared with `make run`; and the parts it stands on, each shown to
refuse what the cloud would refuse."""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from botocore.exceptions import ClientError

from scripts.rehearsal.cloud import Cloud, client
from scripts.rehearsal.runtime import check_imports

# Its own group: the rehearsal takes a core for a minute or more, once, on one
# worker (tests/conftest.py fails these tests if xdist could not group them).
pytestmark = pytest.mark.xdist_group("rehearsal")

PROJECT_DIR = Path(__file__).resolve().parents[2]
FUNCTIONS = (
    "APIHandler",
    "OnDynamodbRecord",
    "DeliverWebhooks",
    "SweepDeadlines",
    "NotifyPeople",
)


def clean_env() -> dict[str, str]:
    """The machine's environment without AWS configuration, service settings or
    the make that runs `make test`."""
    return {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("AWS_", "WORKFLOW_", "MAKE", "MFLAGS", "REHEARSAL_"))
        and name not in ("PORT", "HOST")
    }


@pytest.fixture(scope="session")
def rehearsed(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """`make rehearse`, once for the whole run: it packages into dist/ and
    installs the runtime's SDK.

    Once across pytest-xdist's workers too, under a lock in the directory
    that run's workers share, for a run that spreads this module's tests
    (`--dist load`): two workers rehearsing at once would each rebuild dist/
    while the other reads it."""
    if "PYTEST_XDIST_WORKER" not in os.environ:
        return rehearse()
    shared = tmp_path_factory.getbasetemp().parent
    kept = shared / "rehearsed.json"
    with open(shared / "rehearsed.lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if kept.exists():
            return subprocess.CompletedProcess(**json.loads(kept.read_text(encoding="utf-8")))
        done = rehearse()
        kept.write_text(
            json.dumps(
                {
                    "args": done.args,
                    "returncode": done.returncode,
                    "stdout": done.stdout,
                    "stderr": done.stderr,
                }
            ),
            encoding="utf-8",
        )
        return done


def rehearse() -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["make", "--no-print-directory", "rehearse"],
        cwd=PROJECT_DIR,
        env={**clean_env(), "AWS_EC2_METADATA_DISABLED": "true"},
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_make_rehearse_runs_every_function_as_deployed_and_its_mutations_bite(
    rehearsed: subprocess.CompletedProcess[str],
) -> None:
    report = rehearsed.stdout
    assert rehearsed.returncode == 0, report[-6000:] + rehearsed.stderr[-3000:]
    assert "The rehearsal passed" in report
    (summary,) = [line for line in report.splitlines() if "requests through API Gateway" in line]
    for function in FUNCTIONS:
        assert f"{function} " in summary, summary
    # One removed action per function's role, each refused to that role.
    bites = [line for line in report.splitlines() if line.strip().startswith("bites")]
    assert len(bites) == len(FUNCTIONS), report
    assert "MISSED" not in report and "UNUSED" not in report
    assert "Every removal made the rehearsal fail for its function" in report


def test_the_rest_api_the_template_offers_is_rehearsed_too(
    rehearsed: subprocess.CompletedProcess[str],
) -> None:
    """ApiType=rest: chalice's REST API, its definition, gateway responses and
    stage, in front of the same function, on the package make rehearse made
    (which rehearsed the default, the HTTP API)."""
    assert rehearsed.returncode == 0, rehearsed.stdout[-3000:]
    done = subprocess.run(
        [
            *(sys.executable, str(PROJECT_DIR / "scripts" / "rehearse.py")),
            *("--mutations", "none", "--api-type", "rest"),
            *("--runtime", str(PROJECT_DIR / ".lambda-runtime" / "python")),
        ],
        cwd=PROJECT_DIR,
        env={**clean_env(), "AWS_EC2_METADATA_DISABLED": "true"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "The rehearsal passed" in done.stdout


@pytest.mark.parametrize(
    "left_out, finding",
    [
        # Imported only in jwt mode, inside a function: the import check finds it.
        ("jwt/", "import jwt: ModuleNotFoundError"),
        # Imported only where an input schema is checked: a native library.
        ("jsonschema_rs/", "import jsonschema_rs: ModuleNotFoundError"),
        # Read on the page's first request: the page's route answers 404 for
        # a file its package does not hold.
        ("chalicelib/ui/app.css", "page asset 0 (GET /ui/app.css): status 200 / 404"),
    ],
)
def test_the_rehearsal_fails_on_a_package_that_lacks_a_module_or_an_asset(
    rehearsed: subprocess.CompletedProcess[str], tmp_path: Path, left_out: str, finding: str
) -> None:
    """The package make rehearse just ran, with one thing left out."""
    assert rehearsed.returncode == 0, rehearsed.stdout[-3000:]
    shutil.copy(PROJECT_DIR / "dist" / "sam.json", tmp_path)
    with zipfile.ZipFile(PROJECT_DIR / "dist" / "deployment.zip") as whole:
        with zipfile.ZipFile(tmp_path / "deployment.zip", "w") as broken:
            for item in whole.infolist():
                if not item.filename.startswith(left_out):
                    broken.writestr(item, whole.read(item))
    done = subprocess.run(
        [
            *(sys.executable, str(PROJECT_DIR / "scripts" / "rehearse.py")),
            *("--dist", str(tmp_path), "--mutations", "none"),
            *("--runtime", str(PROJECT_DIR / ".lambda-runtime" / "python")),
        ],
        cwd=PROJECT_DIR,
        env={**clean_env(), "AWS_EC2_METADATA_DISABLED": "true"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    failed = [line for line in done.stdout.splitlines() if "FAILED" in line]
    assert any(finding in line for line in failed), failed
    assert "The rehearsal failed" in done.stdout


@pytest.fixture
def cloud() -> Iterator[Cloud]:
    with Cloud() as server:
        yield server


def account(cloud: Cloud, service: str, **keys: str) -> Any:
    return client(
        cloud.endpoint,
        service,
        **(keys or {"aws_access_key_id": "x", "aws_secret_access_key": "x"}),
    )


def table(dynamodb: Any, name: str) -> str:
    answer = dynamodb.create_table(
        TableName=name,
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    arn: str = answer["TableDescription"]["TableArn"]
    return arn


def test_the_rehearsal_s_iam_judges_each_item_of_a_transaction_on_its_own_table(
    cloud: Cloud,
) -> None:
    """IAM has no TransactWriteItems action: each Put, Delete and ConditionCheck
    is its own action on its own table. Stock moto would ask for
    TransactWriteItems on "*" and refuse every role that names its table."""
    with cloud.as_account():
        dynamodb = account(cloud, "dynamodb")
        mine, other = table(dynamodb, "mine"), table(dynamodb, "other")
        iam = account(cloud, "iam")
        role = iam.create_role(
            RoleName="writer",
            AssumeRolePolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": {"Service": "lambda.amazonaws.com"},
                            "Action": "sts:AssumeRole",
                        }
                    ],
                }
            ),
        )["Role"]["Arn"]
        iam.put_role_policy(
            RoleName="writer",
            PolicyName="puts",
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {"Effect": "Allow", "Action": "dynamodb:PutItem", "Resource": mine}
                    ],
                }
            ),
        )
        keys = account(cloud, "sts").assume_role(RoleArn=role, RoleSessionName="rehearsal")[
            "Credentials"
        ]
    writer = account(
        cloud,
        "dynamodb",
        aws_access_key_id=keys["AccessKeyId"],
        aws_secret_access_key=keys["SecretAccessKey"],
        aws_session_token=keys["SessionToken"],
    )
    put = {"Put": {"TableName": "mine", "Item": {"PK": {"S": "a"}}}}
    writer.transact_write_items(TransactItems=[put])
    for refused in (
        {"Delete": {"TableName": "mine", "Key": {"PK": {"S": "a"}}}},
        {"Put": {"TableName": "other", "Item": {"PK": {"S": "a"}}}},
    ):
        with pytest.raises(ClientError) as denied:
            writer.transact_write_items(TransactItems=[put, refused])
        # moto answers in IAM's XML shape, which a JSON client reads as its status.
        assert denied.value.response["ResponseMetadata"]["HTTPStatusCode"] == 403
    decisions = [(d.action, d.resource, d.allowed) for d in cloud.decisions if d.role == "writer"]
    assert decisions == [
        ("dynamodb:PutItem", mine, True),
        ("dynamodb:PutItem", mine, True),
        ("dynamodb:DeleteItem", mine, False),
        ("dynamodb:PutItem", mine, True),
        ("dynamodb:PutItem", other, False),
    ]


def test_the_functions_import_only_what_the_package_and_the_runtime_hold(tmp_path: Path) -> None:
    """The fresh interpreter does not see this project's virtualenv: boto3 is
    missing without the runtime's folder, and so is a module imported inside a
    function that the package does not ship."""
    task, runtime = tmp_path / "task", tmp_path / "runtime"
    (task / "chalicelib").mkdir(parents=True)
    runtime.mkdir()
    (task / "app.py").write_text("import json\nimport boto3\n")
    (task / "chalicelib" / "__init__.py").write_text("")
    (task / "chalicelib" / "late.py").write_text("def later():\n    import yaml\n")
    found = check_imports(task, runtime)
    assert sorted(f.split(": ")[1] for f in found["failures"]) == ["import boto3", "import yaml"]
    assert found["path"][:2] == [str(task), str(runtime)]
    assert not any("site-packages" in entry for entry in found["path"])

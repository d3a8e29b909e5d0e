"""One cold start, in a fresh process: import a handler, serve one request.

Run by bench/cold_start.py as `python bench/cold_child.py MODE EVENT_JSON`; prints
the seconds from before the import to the first answer. The event arrives
ready-made, as Lambda hands it over; interpreter start-up is outside the figure
(cold_start.py times the whole process too).
"""

import json
import sys

MODE = sys.argv[1]
EVENT = json.loads(sys.argv[2])

import time  # noqa: E402


class Context:
    function_name = "approval-workflows-dev"
    memory_limit_in_mb = 128
    aws_request_id = "cold"
    log_group_name = log_stream_name = "cold"


T0 = time.perf_counter()
if MODE == "service":
    import app

    answer = app.app(EVENT, Context())
    ok = answer["statusCode"] == 200
elif MODE == "bare":
    from bench import bare_app

    answer = bare_app.app(EVENT, Context())
    ok = answer["statusCode"] == 200
elif MODE == "bare_jwt":
    # A bare app that verifies the request's token with the library the service uses.
    import os

    import jwt

    from bench import bare_app

    token = EVENT["headers"]["Authorization"].partition(" ")[2]
    jwt.decode(
        token,
        os.environ["WORKFLOW_JWT_SECRET"],
        algorithms=["HS256"],
        issuer=os.environ["WORKFLOW_JWT_ISSUER"],
    )
    answer = bare_app.app(EVENT, Context())
    ok = answer["statusCode"] == 200
elif MODE == "boto3":
    import boto3

    answer = dict(boto3.client("dynamodb").query(**EVENT))
    ok = answer["ResponseMetadata"]["HTTPStatusCode"] == 200
else:
    raise SystemExit(f"unknown mode {MODE}")
T1 = time.perf_counter()
if not ok:
    raise SystemExit(f"the first request failed: {answer}")
print(json.dumps({"seconds": T1 - T0}))

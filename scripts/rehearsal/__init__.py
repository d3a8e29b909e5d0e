"""The deploy rehearsal (`make rehearse`, docs/rehearsal.md): the packaged stack run
as deployed, on a moto server that enforces IAM, each function from the unzipped
deployment package in an interpreter of its own, with its own role.

    cloud.py      moto on 127.0.0.1 that evaluates each request's IAM action and
                  resource, and records every decision; CloudFormation fixes
    template.py   the expanded template: what moto's CloudFormation creates, what
                  the rehearsal plays (Lambda, API Gateway), intrinsic functions
    stack.py      the stack created from the template; roles assumed
    runtime.py    Lambda: a container per function (bootstrap.py inside), logs, traces
    gateway.py    API Gateway: proxy events from the template's paths and stage
    sources.py    the event sources: the table's stream, the queue, the schedule
    local.py      `make run`, TLS, the issuer's keys, webhook receivers, tokens
    scenario.py   asking both `make run` and the stack, and comparing the answers
    rehearsal.py  one stack, the walk through it, and the checks at its end
    mutations.py  each granted action removed in turn: the rehearsal must fail

Nothing here imports chalicelib: the package is driven through its handlers and
events only, and every name comes from the template.
"""

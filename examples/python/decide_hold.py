"""Decides a keel hold from Python without knowing the middleware that raised it (docs/protocol.md).

Starts a run, waits until it holds a call, and reads what the hold says of itself from the
`status` query: its kind, the question a person is asked, its data, and the JSON Schema of the
decision it takes. The decision given on the command line is checked against that schema here
(with the `jsonschema` package) before it is sent as `{ interruptId, restart: <decision> }` with
the `resume` update; the run checks it again and refuses, with the reason, what does not fit.
Prints one JSON line: the hold as shown, whether the schema took the decision, and the result.

    python decide_hold.py <temporal address> <task queue> <agent> <decision json> [<prompt>]
"""

import asyncio
import json
import os
import sys
import uuid

import jsonschema
from temporalio.client import Client, WorkflowQueryFailedError, WorkflowUpdateFailedError
from temporalio.service import RPCError


async def wait_for_hold(handle) -> dict:
    """The first pending hold, once the run waits for a decision."""
    while True:
        try:
            status = await handle.query("status")
        except (RPCError, WorkflowQueryFailedError):
            await asyncio.sleep(0.2)
            continue
        if status["state"] == "waiting" and status["interrupts"]:
            return status["interrupts"][0]
        if status["state"] not in ("running", "waiting"):
            raise SystemExit(f"run ended before it waited: {status['state']}")
        await asyncio.sleep(0.2)


async def main(address: str, task_queue: str, agent: str, decision: object, prompt: str) -> None:
    client = await Client.connect(address)
    handle = await client.start_workflow(
        "generateWorkflow",
        {"agent": agent, "messages": [{"role": "user", "content": [{"text": prompt}]}]},
        id=f"py-{uuid.uuid4()}",
        task_queue=task_queue,
    )
    hold = await wait_for_hold(handle)
    shown = {key: hold.get(key) for key in ("id", "kind", "question", "toolName", "data", "decision")}
    try:
        jsonschema.validate(decision, hold["decision"])
    except jsonschema.ValidationError as error:
        # Refused here, before anything is sent; the hold keeps waiting for a decision that fits.
        await handle.cancel()
        print(json.dumps({"runId": handle.id, "hold": shown, "fits": False, "why": error.message}))
        return
    try:
        accepted = await handle.execute_update(
            "resume",
            {"interruptId": hold["id"], "restart": decision, "decidedBy": "python-example", "toolName": hold["toolName"]},
        )
    except WorkflowUpdateFailedError as error:
        await handle.cancel()
        print(json.dumps({"runId": handle.id, "hold": shown, "fits": True, "refused": str(error.cause)}))
        return
    result = await handle.result()
    print(json.dumps({"runId": handle.id, "hold": shown, "fits": True, "decided": accepted["decided"], "text": result["text"], "decisions": result["decisions"]}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5] if len(sys.argv) > 5 else "pay the bill"))
    # The SDK's native runtime threads can crash the interpreter's own shutdown now and then: the work is done, so leave without it.
    sys.stdout.flush()
    os._exit(0)

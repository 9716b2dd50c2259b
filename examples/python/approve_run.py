"""Drives a keel run from Python with the official Temporal SDK, in plain JSON (docs/protocol.md).

Starts a run of an agent whose tool call needs approval, waits until the run is waiting,
approves the held call with the `resume` update and prints the result as one JSON line.

    python approve_run.py <temporal address> <task queue> <agent> [<prompt>]
"""

import asyncio
import json
import os
import sys
import uuid

from temporalio.client import Client, WorkflowQueryFailedError
from temporalio.service import RPCError


async def main(address: str, task_queue: str, agent: str, prompt: str) -> None:
    client = await Client.connect(address)
    # The start input: the agent by name and the conversation (RunInput in schemas/run-input.json).
    handle = await client.start_workflow(
        "generateWorkflow",
        {"agent": agent, "messages": [{"role": "user", "content": [{"text": prompt}]}]},
        id=f"py-{uuid.uuid4()}",
        task_queue=task_queue,
    )
    # The `status` query says when the run waits for a person, and for what. (A query sent
    # before the run's first workflow task has completed is refused: ask again.)
    while True:
        try:
            status = await handle.query("status")
        except (RPCError, WorkflowQueryFailedError):
            await asyncio.sleep(0.2)
            continue
        if status["state"] == "waiting":
            break
        if status["state"] not in ("running", "waiting"):
            raise SystemExit(f"run ended before it waited: {status['state']}")
        await asyncio.sleep(0.2)
    held = status["interrupts"][0]
    # The `resume` update: validated by the run, refused with the reason if wrong. Naming the
    # held tool and call keeps the decision on that call (also if a reset re-applies it).
    decision = {"interruptId": held["id"], "approved": True, "reason": "ok from Python", "toolName": held["toolName"]}
    if "ref" in held:
        decision["ref"] = held["ref"]
    accepted = await handle.execute_update("resume", decision)
    result = await handle.result()
    print(json.dumps({"runId": handle.id, "held": held["toolName"], "decided": accepted["decided"], "text": result["text"], "turns": result["turns"]}))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else "clean up the temp files"))
    # The SDK's native runtime threads can crash the interpreter's own shutdown now and then
    # ("PyGILState_Release ... finalizing"): the work is done, so leave without it.
    sys.stdout.flush()
    os._exit(0)

"""Sends a message to a keel agent over A2A with the official A2A Python SDK (docs/a2a.md).

    python examples/python/a2a_send.py http://127.0.0.1:8234/a2a/<agent>/ <prompt...>

Prints one JSON line: the task's id, its last state and the text of its answer.
"""

import asyncio
import json
import sys

from a2a.client import create_client
from a2a.helpers.proto_helpers import get_artifact_text, new_text_message
from a2a.types import Role, SendMessageRequest, TaskState


async def main(url: str, prompt: str) -> None:
    client = await create_client(url)
    task_id, state, answer = "", "", ""
    try:
        request = SendMessageRequest(message=new_text_message(prompt, role=Role.ROLE_USER))
        async for event in client.send_message(request):
            if event.HasField("task"):
                task_id, state = event.task.id, TaskState.Name(event.task.status.state)
                answer = "\n".join(get_artifact_text(artifact) for artifact in event.task.artifacts) or answer
            elif event.HasField("status_update"):
                state = TaskState.Name(event.status_update.status.state)
            elif event.HasField("artifact_update"):
                answer = get_artifact_text(event.artifact_update.artifact)
    finally:
        await client.close()
    print(json.dumps({"taskId": task_id, "state": state, "text": answer}))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: a2a_send.py <agent base URL> <prompt...>")
    asyncio.run(main(sys.argv[1], " ".join(sys.argv[2:])))

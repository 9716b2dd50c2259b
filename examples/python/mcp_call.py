"""Calls a keel agent as an MCP tool with the official MCP Python SDK (docs/mcp.md).

    python examples/python/mcp_call.py http://127.0.0.1:8234/mcp <agent> <prompt...>

Prints one JSON line: the tools the server lists, and the call's text and error flag.
"""

import asyncio
import json
import sys

from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, agent: str, prompt: str) -> None:
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            tools = await session.list_tools()
            result = await session.call_tool(agent, {"prompt": prompt})
            text = "".join(part.text for part in result.content if part.type == "text")
            print(json.dumps({"tools": sorted(tool.name for tool in tools.tools), "text": text, "isError": bool(result.is_error)}))


if __name__ == "__main__":
    if len(sys.argv) < 4:
        sys.exit("usage: mcp_call.py <url of /mcp> <agent> <prompt...>")
    asyncio.run(main(sys.argv[1], sys.argv[2], " ".join(sys.argv[3:])))

"""The official MCP Python SDK (`mcp` on PyPI) as a client of toolc's MCP server.

    python client.py stdio PATH_TO_SERVER_BINARY initialize|discover
    python client.py http http://127.0.0.1:PORT/mcp initialize|discover

`initialize` is the 2025-11-25 handshake; `discover` (`server/discover`) is 2026-07-28's.

Lists the tools (the support desk's server tools only: client tools run in a browser), calls one
and checks its `structuredContent` against the tool's `outputSchema` and its text copy, sends bad
arguments and expects an `isError` result the model can read, and calls a client tool and a
made-up name, which are protocol errors. Prints one JSON line with what it saw; exits non-zero
on the first mismatch.
"""

import asyncio
import json
import sys

import jsonschema
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

SERVER_TOOLS = ["get_order_status", "search_help_articles"]


async def exercise(session: ClientSession, handshake: str) -> dict:
    if handshake == "initialize":
        await session.initialize()
    else:
        await session.discover()
    listed = (await session.list_tools()).tools
    names = sorted(t.name for t in listed)
    assert names == SERVER_TOOLS, names
    search = next(t for t in listed if t.name == "search_help_articles")
    assert search.input_schema["type"] == "object", search.input_schema
    assert search.output_schema is not None, "an object `returns` is an outputSchema"
    # The manifest's `title` and `annotations` reach the host.
    assert search.title == "Search help articles", search.title
    assert search.annotations.read_only_hint is True, search.annotations
    assert search.annotations.open_world_hint is False, search.annotations

    found = await session.call_tool("search_help_articles", {"query": "password", "limit": 2})
    assert not found.is_error, found
    jsonschema.validate(found.structured_content, search.output_schema)
    assert json.loads(found.content[0].text) == found.structured_content
    assert found.structured_content["articles"][0]["id"] == "reset-password", found.structured_content

    bad = await session.call_tool("search_help_articles", {"query": 5})
    assert bad.is_error, bad
    error = json.loads(bad.content[0].text)["error"]
    assert error["kind"] == "invalid_arguments", error

    refused = []
    for name in ["highlight_element", "no_such_tool"]:
        try:
            await session.call_tool(name, {})
        except MCPError as e:
            refused.append([name, e.error.code])
        else:
            raise AssertionError(f"{name} was callable")
    assert all(code == -32602 for _, code in refused), refused
    return {"protocol": session.protocol_version, "tools": names, "refused": refused}


async def main() -> None:
    transport, target, handshake = sys.argv[1], sys.argv[2], sys.argv[3]
    if transport == "stdio":
        params = StdioServerParameters(command=target, args=[])
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as session:
                seen = await exercise(session, handshake)
    else:
        async with streamable_http_client(target) as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                seen = await exercise(session, handshake)
    print(json.dumps(seen))


asyncio.run(main())

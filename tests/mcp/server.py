"""An MCP server made with the official Python SDK (`mcp` 2.x, `MCPServer`), over stdio: the
server toolc's MCP client (`toolc_runtime::mcp::McpTools`) is tested against.

`forecast` has a structured result (an `outputSchema`); `add_tide_tool` adds the `tide` tool
and sends `notifications/tools/list_changed`, as a server whose tools change at run time does.
"""

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("weather")


class Forecast(BaseModel):
    city: str
    celsius: float


@server.tool()
def forecast(city: str) -> Forecast:
    """Tomorrow's forecast for a city."""
    if city == "Atlantis":
        raise ToolError("there is no weather service under the sea")
    return Forecast(city=city, celsius=21.5)


def tide(port: str) -> str:
    """The next high tide at a port."""
    return f"high tide at {port}: 14:05"


@server.tool()
async def add_tide_tool(ctx: Context) -> str:
    """Adds the `tide` tool and tells the client that the tools changed."""
    server.add_tool(tide, name="tide")
    await ctx.request_context.session.send_tool_list_changed()
    return "added"


server.run()

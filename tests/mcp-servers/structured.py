"""A Python MCP SDK server (mcp 2.3.0, MCPServer) whose tool returns a pydantic model, so it
advertises an outputSchema (with $defs) and answers with structuredContent."""

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer

server = MCPServer("structured")


class Location(BaseModel):
    city: str
    country: str


class Weather(BaseModel):
    location: Location
    celsius: float
    conditions: list[str]


@server.tool()
def weather(city: str) -> Weather:
    """The weather in a city (always mild)."""
    return Weather(location=Location(city=city, country="Nowhere"), celsius=21.5, conditions=["sunny", "calm"])


@server.tool()
def shout(text: str) -> str:
    """Upper-cases its text."""
    return text.upper()


if __name__ == "__main__":
    server.run()

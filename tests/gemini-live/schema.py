"""Writes (or, with --check, compares) the JSON Schemas of the Gemini Live messages in
specs/gemini-live/, generated from the pydantic models of Google's Gen AI SDK (`google-genai`,
the version pinned in tests/mcp/requirements.txt): `LiveClientMessage` (what toolc sends
upstream) and `LiveServerMessage` (what the model sends).

Usage: schema.py [--check]   (run with tests/mcp/.venv/bin/python)
"""

import json
import sys
from importlib import metadata
from pathlib import Path

from google.genai import types

OUT = Path(__file__).resolve().parents[2] / "specs" / "gemini-live"
MESSAGES = {
    "client-message.schema.json": types.LiveClientMessage,
    "server-message.schema.json": types.LiveServerMessage,
}


def with_tools(schema: dict) -> dict:
    """The SDK types `tools` as a union that also takes Python callables, which pydantic writes
    as an array of anything: in the wire format it is a list of `Tool`."""
    defs = schema.setdefault("$defs", {})
    patched = False
    for definition in defs.values():
        tools = definition.get("properties", {}).get("tools")
        for branch in (tools or {}).get("anyOf", []):
            if branch.get("type") == "array" and branch.get("items") == {}:
                branch["items"] = {"$ref": "#/$defs/Tool"}
                patched = True
    if patched:
        tool = types.Tool.model_json_schema(by_alias=True)
        defs.update(tool.pop("$defs", {}))
        defs["Tool"] = tool
    return schema


def render(model) -> str:
    schema = with_tools(model.model_json_schema(by_alias=True))
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$comment"] = (
        f"Generated from google-genai {metadata.version('google-genai')} "
        f"(google.genai.types.{model.__name__}) by tests/gemini-live/schema.py; do not edit."
    )
    return json.dumps(schema, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def main() -> int:
    check = "--check" in sys.argv[1:]
    stale = []
    for name, model in MESSAGES.items():
        path = OUT / name
        text = render(model)
        if check:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(str(path))
        else:
            path.write_text(text, encoding="utf-8")
    if stale:
        print("stale (run tests/gemini-live/schema.py): " + ", ".join(stale))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Validates Gemini Live messages with Google's own Gen AI SDK (`google-genai`).

Usage: validate.py FILE...  Each FILE holds one JSON message per line, prefixed with its side:
`client {...}` (what toolc sends upstream: LiveClientMessage) or `server {...}` (what the
scripted fake model sends: LiveServerMessage). The SDK's pydantic models forbid unknown members,
and an enum value it does not know is a warning, made an error here. Prints one line per
refused message and exits 1 if any was refused.
"""

import json
import sys
import warnings

from google.genai import types

MODELS = {"client": types.LiveClientMessage, "server": types.LiveServerMessage}


def main() -> int:
    warnings.simplefilter("error")
    refused = 0
    checked = 0
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                side, _, text = line.partition(" ")
                try:
                    MODELS[side].model_validate(json.loads(text))
                    checked += 1
                except Exception as error:  # pydantic's ValidationError, or the enum warning
                    refused += 1
                    summary = " ".join(str(error).split())
                    print(f"{path}:{number}: {side} message refused: {summary}")
    print(f"{checked} accepted, {refused} refused")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())

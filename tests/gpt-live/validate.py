"""Validates GPT-Live events with OpenAI's own SDK (`openai`, `openai.types.live`).

Usage: validate.py FILE...  Each FILE holds one JSON event per line, prefixed with its side:
`client {...}` (what toolc sends upstream: ClientEvent) or `server {...}` (what the scripted fake
model sends: ServerEvent). A `response.event`'s nested event (the SDK types it as a plain dict)
is checked too, as the Responses streaming event its `type` names (ResponseStreamEvent). The
SDK's models accept unknown members (they keep them as extras); here any extra member, at any
depth, refuses the event, so a field the SDK does not define cannot slip through. Prints one
line per refused event and exits 1 if any was refused.

Two more sides check a Responses API exchange (the chat delegate's fake model in
`runtime/tests/chat_delegate.rs`): `response {...}` is a body the API answers with (the SDK's
`Response`, no extra members) and `request {...}` a body toolc sends to `POST /responses` (the
SDK's `ResponseCreateParamsNonStreaming`: members it does not define are refused). `create {...}`
is the body of `POST /v1/live/sessions` that opens a WebRTC session (the SDK's `LiveCreateParams`;
members its session config does not define are refused).

`validate.py --server-types` prints the SDK's server event types, one a line, sorted (the
session's allowlist, `gpt_live::SERVER_EVENT_TYPES`, is held to it); `--nested-types` the
Responses streaming event types (`gpt_live::RESPONSE_STREAM_EVENT_TYPES`).
"""

import json
import sys

import typing

from pydantic import BaseModel

from openai.types.live import ClientEvent, ServerEvent
from openai.types.responses import Response, ResponseStreamEvent
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from openai.types.live.live_create_params import LiveCreateParams
from openai.types.live.media_session_config_param import MediaSessionConfigParam
from pydantic import TypeAdapter


def by_type(union):
    """The union's event models by their `type` literal: an event is checked against the one
    model its `type` names, so an error says what is wrong with it, not with every model."""
    models = {}
    members = typing.get_args(union)
    # An `Annotated[Union[...], discriminator]` or a bare `Union[...]`.
    if members and not hasattr(members[0], "model_fields"):
        members = typing.get_args(members[0])
    for model in members:
        for kind in typing.get_args(model.model_fields["type"].annotation):
            models[kind] = model
    return models


MODELS = {"client": by_type(ClientEvent), "server": by_type(ServerEvent)}
NESTED = by_type(ResponseStreamEvent)
REQUEST = TypeAdapter(ResponseCreateParamsNonStreaming)
CREATE = TypeAdapter(LiveCreateParams)


def check_exchange(side, value):
    """The members the SDK does not define in a Responses API body (`response` or `request`)."""
    if side == "response":
        return extras(Response.model_validate(value))
    if side == "create":
        CREATE.validate_python(value)
        known = typing.get_type_hints(MediaSessionConfigParam)
        return [f"$.session.{name}" for name in value["session"] if name not in known]
    REQUEST.validate_python(value)
    known = typing.get_type_hints(ResponseCreateParamsNonStreaming)
    return [f"$.{name}" for name in value if name not in known]


def extras(value, path="$"):
    """The paths of members the SDK's models do not define, anywhere in `value`."""
    found = []
    if isinstance(value, BaseModel):
        for name in value.model_extra or {}:
            found.append(f"{path}.{name}")
        for name in type(value).model_fields:
            found.extend(extras(getattr(value, name), f"{path}.{name}"))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(extras(item, f"{path}[{index}]"))
    return found


def main() -> int:
    if sys.argv[1:] == ["--server-types"]:
        print("\n".join(sorted(MODELS["server"])))
        return 0
    if sys.argv[1:] == ["--nested-types"]:
        print("\n".join(sorted(NESTED)))
        return 0
    refused = 0
    checked = 0
    for path in sys.argv[1:]:
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                side, _, text = line.partition(" ")
                try:
                    value = json.loads(text)
                    if side in ("response", "request", "create"):
                        unknown = check_exchange(side, value)
                        if unknown:
                            raise ValueError(f"members the SDK does not define: {', '.join(unknown)}")
                        checked += 1
                        continue
                    model = MODELS[side].get(value.get("type"))
                    if model is None:
                        raise ValueError(f"no {side} event has the type {value.get('type')!r}")
                    event = model.model_validate(value)
                    unknown = extras(event)
                    if value.get("type") == "response.event":
                        nested = value["event"]
                        inner = NESTED.get(nested.get("type"))
                        if inner is None:
                            raise ValueError(
                                f"no Responses streaming event has the type {nested.get('type')!r}"
                            )
                        unknown += extras(inner.model_validate(nested), "$.event")
                    if unknown:
                        raise ValueError(f"members the SDK does not define: {', '.join(unknown)}")
                    checked += 1
                except Exception as error:  # pydantic's ValidationError, or the extras above
                    refused += 1
                    summary = " ".join(str(error).split())
                    print(f"{path}:{number}: {side} event refused: {summary}")
    print(f"{checked} accepted, {refused} refused")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())

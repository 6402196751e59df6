"""The reference server's tools: the fixture names the official conformance scenarios call.

Design: a tool is a descriptor plus either an async function of ``(arguments, effects)`` that
returns a wire ``CallToolResult`` dict, or a :class:`~mcplab.reference.mrtr.Flow` when it needs
input from the client (elicitation, sampling, roots). Side effects the SDK carries (log and
progress notifications, list-changed events) go through the :class:`Effects` protocol, so the
tools know nothing about transports and a fake can stand in for unit tests.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import anyio

from .._schema import jsonschema
from .media import PNG_BASE64, WAV_BASE64
from .mrtr import Flow, elicit, list_roots, sample
from .tasks import TaskHandle

__all__ = ["Effects", "TaskJob", "ToolFixture", "TOOLS", "SCHEMA_2020_12", "HEADER_SCHEMA", "tool_descriptors", "text_result", "STEP_DELAY_SECONDS"]

#: The pause between a fixture's log or progress notifications (the scenarios ask for ~50 ms).
STEP_DELAY_SECONDS = 0.05


class Effects(Protocol):
    """What a tool may do besides returning: notify the caller or the listen streams."""

    async def log(self, level: str, message: str) -> None: ...
    async def progress(self, progress: float, total: float, message: str | None = None) -> None: ...
    async def tools_changed(self) -> None: ...
    async def prompts_changed(self) -> None: ...
    async def close_stream(self) -> bool: ...


Handler = Callable[[Mapping[str, Any], Effects], Awaitable[dict[str, Any]]]
#: A task job: ``(arguments, answers gathered by the tool's flow, handle) -> CallToolResult dict``.
TaskJob = Callable[[Mapping[str, Any], Mapping[str, Any], TaskHandle], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class ToolFixture:
    name: str
    description: str
    input_schema: dict[str, Any]
    handler: Handler | None = None
    flow: Flow | None = None
    task: str | None = None  # "optional" or "required": the tool runs as a job (tasks extension)
    job: TaskJob | None = None

    def descriptor(self) -> dict[str, Any]:
        """The wire ``Tool``. No ``execution.taskSupport``: that is 2025-11-25's task protocol, which this server does
        not serve; with the 2026-07-28 extension the server decides per request whether a call becomes a task."""
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}

    def argument_problems(self, arguments: Mapping[str, Any]) -> list[str]:
        """Why ``arguments`` do not satisfy the input schema (JSON Schema 2020-12), empty when they do."""
        validator = jsonschema().Draft202012Validator(self.input_schema)
        return sorted(f"{'/'.join(map(str, error.absolute_path)) or '(arguments)'}: {error.message}"
                      for error in validator.iter_errors(dict(arguments)))


def text_result(text: str, *, is_error: bool = False) -> dict[str, Any]:
    """A wire ``CallToolResult`` with one text block."""
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def _schema(**properties: str) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": {k: {"type": "string", "description": v} for k, v in properties.items()}}
    if properties:
        schema["required"] = list(properties)
    return schema


def _content(*blocks: dict[str, Any]) -> Handler:
    async def handler(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
        return {"content": list(blocks)}
    return handler


_IMAGE = {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}


async def _logging(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    messages = ["Tool execution started", "Tool processing data", "Tool execution completed"]
    for index, message in enumerate(messages):
        if index:
            await anyio.sleep(STEP_DELAY_SECONDS)
        await effects.log("info", message)
    return text_result("Tool with logging executed: 3 log messages sent")


async def _progress(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    for index, value in enumerate((0, 50, 100)):
        if index:
            await anyio.sleep(STEP_DELAY_SECONDS)
        await effects.progress(value, 100, f"{value}% done")
    return text_result("Tool with progress executed: 0/100, 50/100, 100/100")


async def _echo_region(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    return text_result(f"Region: {arguments.get('region')}")


async def _accept_contact(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    return text_result(f"Contact for {arguments.get('name', 'someone')} accepted")


async def _reconnection(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    closed = await effects.close_stream()
    await anyio.sleep(STEP_DELAY_SECONDS * 2)  # the result is produced while the client is away
    return text_result("Reconnection test completed" + (" after closing the stream" if closed else ""))


async def _error(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    return text_result("This tool intentionally returns an error for testing", is_error=True)


async def _trigger_tools(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    await effects.tools_changed()
    return text_result("Announced a tools/list change to every listening client")


async def _trigger_prompts(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    await effects.prompts_changed()
    return text_result("Announced a prompts/list change to every listening client")


def _elicited(answer: Mapping[str, Any]) -> str:
    return f"action={answer.get('action')}, content={json.dumps(answer.get('content') or {}, sort_keys=True)}"


def _sampled_text(answer: Mapping[str, Any]) -> str:
    content = answer.get("content")
    blocks = content if isinstance(content, list) else [content]
    return " ".join(b.get("text", "") for b in blocks if isinstance(b, Mapping) and b.get("type") == "text")


def _root_uris(answer: Mapping[str, Any]) -> str:
    return ", ".join(str(r.get("uri")) for r in answer.get("roots", []) if isinstance(r, Mapping)) or "(no roots)"


def _accepted(answer: Mapping[str, Any], field_name: str) -> Any:
    return (answer.get("content") or {}).get(field_name) if answer.get("action") == "accept" else None


_NAME = elicit("What is your name?", {"name": {"type": "string"}}, ["name"])
_CONFIRM = elicit("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])
_ENUMS = {
    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
    "titledSingle": {"type": "string", "oneOf": [{"const": "value1", "title": "First Option"},
                                                 {"const": "value2", "title": "Second Option"},
                                                 {"const": "value3", "title": "Third Option"}]},
    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
    "titledMulti": {"type": "array", "items": {"anyOf": [{"const": "value1", "title": "First Choice"},
                                                         {"const": "value2", "title": "Second Choice"},
                                                         {"const": "value3", "title": "Third Choice"}]}},
}
_DEFAULTS = {
    "name": {"type": "string", "default": "John Doe"},
    "age": {"type": "integer", "default": 30},
    "score": {"type": "number", "default": 95.5},
    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
    "verified": {"type": "boolean", "default": True},
}


def _flow(name: str, rounds: Callable[[Mapping[str, Any]], list[dict[str, Any]]],
          finish: Callable[[Mapping[str, Any], Mapping[str, Any]], str], *, sealed: bool = False, subset: bool = False) -> Flow:
    return Flow(name=name, rounds=rounds, finish=lambda args, answers: text_result(finish(args, answers)), sealed=sealed, subset=subset)


_FLOWS = [
    # Server-to-client requests of 2025-11-25 (input_required rounds on 2026-07-28).
    _flow("test_sampling", lambda a: [{"completion": sample(str(a.get("prompt", "")), 100)}],
          lambda a, r: f"LLM response: {_sampled_text(r['completion'])}"),
    _flow("test_elicitation", lambda a: [{"response": elicit(str(a.get("message", "")), {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"}}, ["username", "email"])}],
        lambda a, r: f"User response: {_elicited(r['response'])}"),
    _flow("test_elicitation_sep1034_defaults", lambda a: [{"defaults": elicit("Please review these defaults", _DEFAULTS)}],
          lambda a, r: f"Elicitation completed: {_elicited(r['defaults'])}"),
    _flow("test_elicitation_sep1330_enums", lambda a: [{"enums": elicit("Please choose from these enums", _ENUMS)}],
          lambda a, r: f"Elicitation completed: {_elicited(r['enums'])}"),
    _flow("test_missing_capability", lambda a: [{"completion": sample("Say hello", 20)}],
          lambda a, r: f"Sampling answered: {_sampled_text(r['completion'])}"),
    _flow("test_streaming_elicitation", lambda a: [{"answer": elicit("Anything to add?", {"note": {"type": "string"}})}],
          lambda a, r: f"Elicitation completed: {_elicited(r['answer'])}"),
    # The MRTR fixtures of 2026-07-28 (SEP-2322).
    _flow("test_input_required_result_elicitation", lambda a: [{"user_name": _NAME}],
          lambda a, r: f"Hello, {_accepted(r['user_name'], 'name') or 'stranger'}!"),
    _flow("test_input_required_result_sampling", lambda a: [{"capital_question": sample("What is the capital of France?", 100)}],
          lambda a, r: f"The model said: {_sampled_text(r['capital_question'])}"),
    _flow("test_input_required_result_list_roots", lambda a: [{"client_roots": list_roots()}],
          lambda a, r: f"Client roots: {_root_uris(r['client_roots'])}"),
    _flow("test_input_required_result_request_state", lambda a: [{"confirm": _CONFIRM}],
          lambda a, r: f"state-ok: confirmed={_accepted(r['confirm'], 'ok')}", sealed=True),
    _flow("test_input_required_result_multiple_inputs",
          lambda a: [{"user_name": _NAME, "greeting": sample("Generate a greeting", 50), "client_roots": list_roots()}],
          lambda a, r: (f"{_sampled_text(r['greeting'])} {_accepted(r['user_name'], 'name')}; "
                        f"roots: {_root_uris(r['client_roots'])}"), sealed=True),
    _flow("test_input_required_result_multi_round",
          lambda a: [{"step1": elicit("Step 1: What is your name?", {"name": {"type": "string"}}, ["name"])},
                     {"step2": elicit("Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"])}],
          lambda a, r: f"{_accepted(r['step1'], 'name')} likes {_accepted(r['step2'], 'color')}", sealed=True),
    _flow("test_input_required_result_tampered_state", lambda a: [{"confirm": _CONFIRM}],
          lambda a, r: f"state-ok: confirmed={_accepted(r['confirm'], 'ok')}", sealed=True),
    _flow("test_input_required_result_capabilities",
          lambda a: [{"user_name": _NAME, "capital_question": sample("What is the capital of France?", 100),
                      "client_roots": list_roots()}],
          lambda a, r: "Answered: " + ", ".join(sorted(r)), sealed=True, subset=True),
]

async def _greet(arguments: Mapping[str, Any], effects: Effects) -> dict[str, Any]:
    return text_result(f"Hello, {arguments.get('name', 'World')}!")


async def _slow_compute(arguments: Mapping[str, Any], answers: Mapping[str, Any], handle: TaskHandle) -> dict[str, Any]:
    seconds = float(arguments.get("seconds", 1))
    await anyio.sleep(seconds)
    return text_result(f"Computed {arguments.get('label', 'result')} after {seconds:g} s")


async def _failing_job(arguments: Mapping[str, Any], answers: Mapping[str, Any], handle: TaskHandle) -> dict[str, Any]:
    await anyio.sleep(1)
    return text_result("The job ran and reports a tool error", is_error=True)


async def _protocol_error_job(arguments: Mapping[str, Any], answers: Mapping[str, Any], handle: TaskHandle) -> dict[str, Any]:
    raise RuntimeError("the job crashed before it could produce a result")


async def _confirm_delete(arguments: Mapping[str, Any], answers: Mapping[str, Any], handle: TaskHandle) -> dict[str, Any]:
    filename = arguments.get("filename", "the file")
    reply = await handle.ask({"confirm": elicit(f"Delete {filename}?", {"confirm": {"type": "boolean"}}, ["confirm"])})
    return text_result(f"Deleted {filename}" if _accepted(reply["confirm"], "confirm") else f"Kept {filename}")


async def _multi_input(arguments: Mapping[str, Any], answers: Mapping[str, Any], handle: TaskHandle) -> dict[str, Any]:
    replies = await handle.ask({"first": elicit("First value?", {"value": {"type": "string"}}, ["value"]),
                                "second": elicit("Second value?", {"value": {"type": "string"}}, ["value"])})
    return text_result(f"Values: {_accepted(replies['first'], 'value')}, {_accepted(replies['second'], 'value')}")


async def _greet_later(arguments: Mapping[str, Any], answers: Mapping[str, Any], handle: TaskHandle) -> dict[str, Any]:
    await anyio.sleep(STEP_DELAY_SECONDS)
    return text_result(f"Hello, {_accepted(answers['user_name'], 'name') or 'stranger'}! (from a task)")


def _task_schema(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


_FLOW_DESCRIPTIONS = {
    "test_sampling": ("Asks the client's model to complete a prompt", _schema(prompt="The prompt to send to the LLM")),
    "test_elicitation": ("Asks the user for a username and email", _schema(message="The message to show the user")),
}

#: JSON Schema 2020-12 keywords a server must pass through untouched (SEP-1613, SEP-2106).
SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {"address": {"$anchor": "addressDef", "type": "object",
                          "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}},
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"},
                   "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                   "phone": {"type": "string"}, "email": {"type": "string"}},
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}
#: A parameter mirrored into an ``Mcp-Param-Region`` header (SEP-2243); the SDK checks header against body.
HEADER_SCHEMA = {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region",
                                                             "description": "Also sent as the Mcp-Param-Region header"}},
                 "required": ["region"]}

TOOLS: tuple[ToolFixture, ...] = (
    ToolFixture("test_simple_text", "Returns simple text content", _schema(),
                _content({"type": "text", "text": "This is a simple text response for testing."})),
    ToolFixture("test_image_content", "Returns image content (a 1x1 red PNG)", _schema(), _content(_IMAGE)),
    ToolFixture("test_audio_content", "Returns audio content (a short silent WAV)", _schema(),
                _content({"type": "audio", "data": WAV_BASE64, "mimeType": "audio/wav"})),
    ToolFixture("test_embedded_resource", "Returns an embedded text resource", _schema(), _content(
        {"type": "resource", "resource": {"uri": "test://embedded-resource", "mimeType": "text/plain",
                                          "text": "This is an embedded resource content."}})),
    ToolFixture("test_multiple_content_types", "Returns text, image and resource content", _schema(), _content(
        {"type": "text", "text": "Multiple content types test:"}, _IMAGE,
        {"type": "resource", "resource": {"uri": "test://mixed-content-resource", "mimeType": "application/json",
                                          "text": json.dumps({"test": "data", "value": 123}, separators=(",", ":"))}})),
    ToolFixture("test_tool_with_logging", "Sends three info log messages while it runs", _schema(), _logging),
    ToolFixture("test_logging_tool", "Sends three info log messages while it runs (only to callers that opted in)", _schema(), _logging),
    ToolFixture("test_error_handling", "Always reports a tool error (isError: true)", _schema(), _error),
    ToolFixture("test_tool_with_progress", "Reports progress 0, 50 and 100 of 100", _schema(), _progress),
    ToolFixture("test_reconnection", "Closes its SSE stream mid-call; the client resumes with Last-Event-ID (2025-11-25)",
                _schema(), _reconnection),
    ToolFixture("test_trigger_tool_change", "Announces a tools/list change on subscriptions/listen streams", _schema(), _trigger_tools),
    ToolFixture("test_trigger_prompt_change", "Announces a prompts/list change on subscriptions/listen streams", _schema(),
                _trigger_prompts),
    ToolFixture("json_schema_2020_12_tool", "Tool with JSON Schema 2020-12 features", SCHEMA_2020_12, _accept_contact),
    ToolFixture("test_header_param", "Echoes a parameter the client mirrors into an Mcp-Param header", HEADER_SCHEMA, _echo_region),
    # The tasks extension (SEP-2663): sync greet, and jobs the server runs as tasks when the client declares it.
    ToolFixture("greet", "Greets by name (sync only)", _schema(name="Who to greet"), _greet),
    ToolFixture("slow_compute", "Sleeps `seconds`, then returns a result (a task when negotiated)",
                _task_schema(seconds={"type": "number", "minimum": 0}, label={"type": "string"}), task="optional", job=_slow_compute),
    ToolFixture("failing_job", "Reports a tool error after about a second (task required)", _schema(), task="required",
                job=_failing_job),
    ToolFixture("protocol_error_job", "Crashes: the task ends failed with an error", _schema(), task="optional",
                job=_protocol_error_job),
    ToolFixture("confirm_delete", "Asks the user to confirm, then 'deletes' (a task parked in input_required)",
                _task_schema(filename={"type": "string"}), task="optional", job=_confirm_delete),
    ToolFixture("multi_input", "Asks two questions at once (partial answers keep the task waiting)", _schema(), task="optional",
                job=_multi_input),
    ToolFixture("test_tool_with_task", "Asks for a name (input_required), then finishes as a task (task required)", _schema(),
                flow=Flow(name="test_tool_with_task", rounds=lambda a: [{"user_name": _NAME}], finish=lambda a, r: dict(r)),
                task="required", job=_greet_later),
    *(ToolFixture(flow.name, *_FLOW_DESCRIPTIONS.get(flow.name, (f"Needs client input first ({flow.name[5:].replace('_', ' ')})",
                                                                  _schema())), flow=flow)
      for flow in _FLOWS),
)


def tool_descriptors() -> list[dict[str, Any]]:
    """The wire ``tools`` list, in a fixed order."""
    return [tool.descriptor() for tool in TOOLS]

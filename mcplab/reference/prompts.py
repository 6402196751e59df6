"""The reference server's prompts: text, arguments, an embedded resource, an image, and one MRTR prompt.

Design: each prompt is a descriptor plus a function of its arguments returning wire messages;
required arguments are checked in one place (-32602 naming the missing ones). The MRTR prompt is a
:class:`~mcplab.reference.mrtr.Flow`, so ``prompts/get`` can answer ``input_required`` too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS

from .media import PNG_BASE64
from .mrtr import Flow, elicit

__all__ = ["PROMPTS", "PROMPT_FLOWS", "prompt_messages", "required_arguments"]


def _text(text: str) -> dict[str, Any]:
    return {"role": "user", "content": {"type": "text", "text": text}}


def _simple(args: Mapping[str, str]) -> list[dict[str, Any]]:
    return [_text("This is a simple prompt for testing.")]


def _with_arguments(args: Mapping[str, str]) -> list[dict[str, Any]]:
    return [_text(f"Prompt with arguments: arg1='{args['arg1']}', arg2='{args['arg2']}'")]


def _with_embedded_resource(args: Mapping[str, str]) -> list[dict[str, Any]]:
    resource = {"uri": args["resourceUri"], "mimeType": "text/plain", "text": "Embedded resource content for testing."}
    return [{"role": "user", "content": {"type": "resource", "resource": resource}},
            _text("Please process the embedded resource above.")]


def _with_image(args: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"role": "user", "content": {"type": "image", "data": PNG_BASE64, "mimeType": "image/png"}},
            _text("Please analyze the image above.")]


def _argument(name: str, description: str) -> dict[str, Any]:
    return {"name": name, "description": description, "required": True}


_BUILDERS: dict[str, tuple[dict[str, Any], Callable[[Mapping[str, str]], list[dict[str, Any]]]]] = {
    "test_simple_prompt": ({"description": "A simple prompt without arguments"}, _simple),
    "test_prompt_with_arguments": ({"description": "A prompt with two required arguments",
                                    "arguments": [_argument("arg1", "First test argument"),
                                                  _argument("arg2", "Second test argument")]}, _with_arguments),
    "test_prompt_with_embedded_resource": ({"description": "A prompt embedding the resource it is given",
                                            "arguments": [_argument("resourceUri", "URI of the resource to embed")]},
                                           _with_embedded_resource),
    "test_prompt_with_image": ({"description": "A prompt with an image"}, _with_image),
}

PROMPT_FLOWS: dict[str, Flow] = {
    "test_input_required_result_prompt": Flow(
        name="test_input_required_result_prompt",
        rounds=lambda args: [{"user_context": elicit("What context should the prompt use?", {"context": {"type": "string"}},
                                                     ["context"])}],
        finish=lambda args, answers: [_text(f"Use this context: {(answers['user_context'].get('content') or {}).get('context', '')}")],
    ),
}

PROMPTS: tuple[dict[str, Any], ...] = (
    *({"name": name, **descriptor} for name, (descriptor, _) in _BUILDERS.items()),
    {"name": "test_input_required_result_prompt", "description": "A prompt that first asks the user for context (input_required)"},
)


def required_arguments(name: str) -> list[str]:
    """The required argument names of prompt ``name`` (none for an unknown prompt)."""
    descriptor = _BUILDERS.get(name, ({},))[0]
    return [a["name"] for a in descriptor.get("arguments", []) if a.get("required")]


def prompt_messages(name: str, arguments: Mapping[str, str] | None) -> list[dict[str, Any]]:
    """The wire messages of a non-MRTR prompt; unknown prompts and missing arguments raise -32602."""
    if name not in _BUILDERS:
        raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}", data={"name": name})
    args = dict(arguments or {})
    missing = [arg for arg in required_arguments(name) if not isinstance(args.get(arg), str)]
    if missing:
        raise MCPError(code=INVALID_PARAMS, message=f"{name} needs arguments: {', '.join(missing)}", data={"missing": missing})
    return _BUILDERS[name][1](args)

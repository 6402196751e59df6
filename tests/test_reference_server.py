"""The reference server: its fixtures, its MRTR rounds, the real SDK client in both eras, and the official runner."""

from __future__ import annotations

import base64
import io
import json
import os
import signal
import subprocess
import sys
import time
import wave
import zlib

import anyio
import httpx
import mcp_types as t
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types import INVALID_PARAMS, MISSING_REQUIRED_CLIENT_CAPABILITY

from mcplab.cli import main
from mcplab.conformance import REQUIREMENT_REVISIONS, RUNNER_VERSION, list_scenarios, run_official
from mcplab.reference import (
    INTERNAL_FAILURE,
    MAX_REQUEST_BYTES,
    MAX_SUBSCRIPTIONS,
    PNG_BYTES,
    SCHEMA_2020_12,
    SHUTDOWN_GRACE_SECONDS,
    TASKS_EXTENSION,
    TOOLS,
    WAV_BYTES,
    Completed,
    Flow,
    InputRequired,
    MemoryEventStore,
    RoundKeeper,
    SessionTable,
    Subscriptions,
    TaskStore,
    build_app,
    complete,
    elicit,
    prompt_messages,
    read_contents,
    sample,
    serve_reference,
)
from mcplab.requests import build_request
from mcplab.serving import ServeError, serve_app
from mcplab.sse import parse_sse

ALL_CAPS = {"elicitation": {}, "sampling": {}, "roots": {}}
MODES = ["2026-07-28", "legacy"]


# ---------------------------------------------------------------- fixtures as data


def test_reference_and_serving_export_what_they_list():
    import mcplab.reference
    import mcplab.serving

    for package in (mcplab.reference, mcplab.serving):
        assert len(set(package.__all__)) == len(package.__all__), package.__name__
        assert all(hasattr(package, name) for name in package.__all__), package.__name__
    assert {"serve_reference", "RoundKeeper", "TaskStore", "TOOLS"} <= set(mcplab.reference.__all__)


def test_media_are_a_real_png_pixel_and_a_real_wav():
    assert PNG_BYTES.startswith(b"\x89PNG\r\n\x1a\n") and PNG_BYTES[12:16] == b"IHDR"
    idat = PNG_BYTES.index(b"IDAT")
    length = int.from_bytes(PNG_BYTES[idat - 4:idat], "big")
    assert zlib.decompress(PNG_BYTES[idat + 4:idat + 4 + length]) == b"\x00\xff\x00\x00"  # one red pixel
    with wave.open(io.BytesIO(WAV_BYTES)) as audio:
        assert audio.getnframes() > 0 and audio.getframerate() == 8000


def test_resource_not_found_is_invalid_params_with_the_uri():
    with pytest.raises(MCPError) as caught:
        read_contents("test://nonexistent-resource-for-conformance-testing")
    assert caught.value.error.code == INVALID_PARAMS
    assert caught.value.error.data == {"uri": "test://nonexistent-resource-for-conformance-testing"}


def test_legacy_subscriptions_are_per_session_and_only_for_real_resources():
    subscriptions = Subscriptions()
    subscriptions.add("s1", "test://watched-resource")
    assert subscriptions.uris("s1") == {"test://watched-resource"} and subscriptions.uris("s2") == set()
    subscriptions.remove("s1", "test://watched-resource")
    assert subscriptions.uris("s1") == set()
    with pytest.raises(MCPError):
        subscriptions.add("s1", "test://nothing-here")


def test_legacy_session_bookkeeping_is_bounded_per_session_and_in_sessions():
    subscriptions = Subscriptions()
    for n in range(MAX_SUBSCRIPTIONS):  # the template makes the URI space unbounded
        subscriptions.add("s1", f"test://template/{n}/data")
    error = rejected(lambda: subscriptions.add("s1", "test://template/one-more/data")).error
    assert error.code == INVALID_PARAMS and error.data == {"limit": MAX_SUBSCRIPTIONS}
    subscriptions.add("s1", "test://template/0/data")  # already subscribed: fine
    assert len(subscriptions.uris("s1")) == MAX_SUBSCRIPTIONS

    table = SessionTable(max_sessions=2)
    limited = Subscriptions(table)
    for session in ("a", "b", "c"):
        limited.add(session, "test://watched-resource")
    assert len(table) == 2 and limited.uris("a") == set() and limited.uris("c") == {"test://watched-resource"}
    table.set("b", {"x"})  # touching a session keeps it: the least recently used one falls off
    limited.add("d", "test://watched-resource")
    assert table.get("b", set()) == {"x"} and table.get("c", None) is None
    limited.remove("never-subscribed", "test://watched-resource")  # unsubscribing adds no session
    assert table.get("b", set()) == {"x"} and len(table) == 2


def test_template_substitutes_the_id():
    [content] = read_contents("test://template/123/data")
    assert content["text"] == '{"id":"123","templateTest":true,"data":"Data for ID: 123"}'
    assert read_contents("test://static-binary")[0]["blob"] == base64.b64encode(PNG_BYTES).decode()


def test_completion_filters_by_prefix_and_reports_totals():
    assert complete({"type": "ref/prompt", "name": "test_prompt_with_arguments"}, "arg1", "par") == {
        "values": ["paris", "park", "party"], "total": 3, "hasMore": False}
    assert complete({"type": "ref/prompt", "name": "unknown"}, "arg1", "")["values"] == []


def test_prompt_with_missing_arguments_is_invalid_params():
    with pytest.raises(MCPError) as caught:
        prompt_messages("test_prompt_with_arguments", {"arg1": "hello"})
    assert caught.value.error.code == INVALID_PARAMS and caught.value.error.data == {"missing": ["arg2"]}
    assert prompt_messages("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})[0]["content"]["text"] == \
        "Prompt with arguments: arg1='hello', arg2='world'"


def test_tool_arguments_are_checked_against_the_input_schema():
    tools = {tool.name: tool for tool in TOOLS}
    assert tools["test_sampling"].argument_problems({}) == ["(arguments): 'prompt' is a required property"]
    assert tools["test_header_param"].argument_problems({"region": 5}) == ["region: 5 is not of type 'string'"]
    assert tools["json_schema_2020_12_tool"].argument_problems({"name": "a", "email": "a@b"}) == []
    assert tools["json_schema_2020_12_tool"].argument_problems({"name": "a"})  # neither phone nor email
    assert tools["test_simple_text"].argument_problems({}) == []


def test_tool_names_follow_the_spec_rules_and_are_unique():
    names = [tool.name for tool in TOOLS]
    assert len(names) == len(set(names))
    assert all(1 <= len(n) <= 128 and n.replace("_", "").replace("-", "").replace(".", "").isalnum() for n in names)


def test_event_store_replays_only_the_later_events_of_that_stream():
    async def scenario():
        store = MemoryEventStore(limit=4)
        message = t.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progressToken": 1, "progress": 1})
        priming = await store.store_event("a", None)
        first = await store.store_event("a", message)
        await store.store_event("b", message)
        last = await store.store_event("a", message)
        replayed: list[str] = []

        async def send(event):
            replayed.append(event.event_id)

        stream = await store.replay_events_after(priming, send)
        await store.store_event("c", None)  # pushes the priming event out (limit 4)
        return stream, replayed, first, last, await store.replay_events_after(priming, send)

    stream, replayed, first, last, gone = anyio.run(scenario)
    assert stream == "a" and replayed == [first, last] and gone is None


def test_event_store_is_bounded_by_bytes_as_well_as_by_count():
    def result(text: str) -> t.JSONRPCResponse:
        return t.JSONRPCResponse(jsonrpc="2.0", id=1, result={"content": [{"type": "text", "text": text}]})

    async def scenario():
        store = MemoryEventStore(limit=1000, max_bytes=3500)
        ids = [await store.store_event("s", result("x" * 1000)) for _ in range(5)]  # ~1.1 kB each: the newest 3 fit
        replayed: list[str] = []

        async def send(event):
            replayed.append(event.event_id)

        gone = await store.replay_events_after(ids[1], send)
        kept = await store.replay_events_after(ids[2], send)
        huge = await store.store_event("s", result("y" * 10_000))  # larger than the whole budget: kept alone
        return gone, kept, replayed, ids, huge, len(store._events), store._bytes

    gone, kept, replayed, ids, huge, count, size = anyio.run(scenario)
    assert gone is None and kept == "s" and replayed == ids[3:]
    assert count == 1 and size == len(result("y" * 10_000).model_dump_json(by_alias=True, exclude_none=True))


# ---------------------------------------------------------------- MRTR rounds (in memory)

TWO_ROUNDS = Flow(name="two_rounds",
                  rounds=lambda args: [{"first": elicit("1?", {"a": {"type": "string"}})}, {"second": sample("2?", 10)}],
                  finish=lambda args, answers: sorted(answers), sealed=True)
ACCEPT = {"action": "accept", "content": {"a": "x"}}
SAMPLED = {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}


def advance(keeper: RoundKeeper, flow: Flow = TWO_ROUNDS, *, args=None, responses=None, state=None, caps=ALL_CAPS):
    return keeper.advance(flow, args or {}, input_responses=responses, request_state=state, capabilities=caps)


def rejected(call) -> MCPError:
    with pytest.raises(MCPError) as caught:
        call()
    return caught.value


def test_sealed_flow_walks_its_rounds_with_a_new_state_each_time():
    keeper = RoundKeeper()
    first = advance(keeper)
    assert isinstance(first, InputRequired) and list(first.input_requests) == ["first"] and first.request_state
    second = advance(keeper, responses={"first": ACCEPT, "stray": 5}, state=first.request_state)
    assert isinstance(second, InputRequired) and list(second.input_requests) == ["second"]
    assert second.request_state != first.request_state
    done = advance(keeper, responses={"second": SAMPLED}, state=second.request_state)
    assert done == Completed(["first", "second"])


def test_negative_tampered_foreign_and_replayed_states_are_invalid_params():
    keeper = RoundKeeper()
    state = advance(keeper).request_state
    assert rejected(lambda: advance(keeper, responses={"first": ACCEPT}, state=state + "-TAMPERED")).error.code == INVALID_PARAMS
    assert rejected(lambda: advance(RoundKeeper(), responses={"first": ACCEPT}, state=state)).error.code == INVALID_PARAMS
    assert "another call" in rejected(lambda: advance(keeper, args={"x": 1}, responses={"first": ACCEPT}, state=state)).error.message
    advance(keeper, responses={"first": ACCEPT}, state=state)
    assert "replay" in rejected(lambda: advance(keeper, responses={"first": ACCEPT}, state=state)).error.message


def test_negative_sealed_flow_never_takes_answers_without_its_state():
    again = advance(RoundKeeper(), responses={"first": ACCEPT})
    assert isinstance(again, InputRequired) and list(again.input_requests) == ["first"] and again.request_state


def test_negative_expired_state_is_invalid_params():
    clock = [1000.0]
    keeper = RoundKeeper(ttl=60, now=lambda: clock[0])
    state = advance(keeper).request_state
    clock[0] += 61
    assert "expired" in rejected(lambda: advance(keeper, responses={"first": ACCEPT}, state=state)).error.message


def test_missing_answers_ask_again_and_malformed_answers_are_invalid_params():
    keeper = RoundKeeper()
    state = advance(keeper).request_state
    again = advance(keeper, responses={"wrong_key": ACCEPT}, state=state)
    assert isinstance(again, InputRequired) and list(again.input_requests) == ["first"]
    error = rejected(lambda: advance(keeper, responses={"first": 12345}, state=again.request_state)).error
    assert error.code == INVALID_PARAMS and error.data == {"key": "first"}


def test_negative_undeclared_capability_is_minus_32021_and_subset_flows_ask_what_is_declared():
    error = rejected(lambda: advance(RoundKeeper(), caps={"elicitation": {}})).error
    assert error.code == MISSING_REQUIRED_CLIENT_CAPABILITY and error.data == {"requiredCapabilities": {"sampling": {}}}
    subset = Flow(name="subset", rounds=lambda a: [{"e": elicit("?", {}), "s": sample("?", 5)}], finish=lambda a, r: r, subset=True)
    asked = advance(RoundKeeper(), subset, caps={"sampling": {}})
    assert {key: r["method"] for key, r in asked.input_requests.items()} == {"s": "sampling/createMessage"}
    assert rejected(lambda: advance(RoundKeeper(), subset, caps={})).error.code == MISSING_REQUIRED_CLIENT_CAPABILITY


def test_negative_answers_too_large_to_carry_are_refused_up_front():
    keeper = RoundKeeper()
    state = advance(keeper).request_state
    huge = {"action": "accept", "content": {"a": "x" * 5000}}
    assert "too large" in rejected(lambda: advance(keeper, responses={"first": huge}, state=state)).error.message


def test_round_keeper_never_shows_its_key_and_forgets_spent_nonces_once_their_states_expire():
    clock = [1000.0]
    keeper = RoundKeeper(ttl=60, now=lambda: clock[0])
    assert keeper.secret.hex() not in repr(keeper) and repr(keeper.secret) not in repr(keeper)
    states = []
    for _ in range(5):
        state = advance(keeper).request_state
        advance(keeper, responses={"first": ACCEPT}, state=state)
        states.append(state)
        clock[0] += 20
    # spent at t=1000..1080 and kept 60 s each: the spend at t=1080 forgot the one spent at t=1000
    assert sorted(keeper._spent.values()) == [1080.0, 1100.0, 1120.0, 1140.0]
    assert "replay" in rejected(lambda: advance(keeper, responses={"first": ACCEPT}, state=states[-1])).error.message
    assert "expired" in rejected(lambda: advance(keeper, responses={"first": ACCEPT}, state=states[0])).error.message
    clock[0] += 1000
    advance(keeper, responses={"first": ACCEPT}, state=advance(keeper).request_state)
    assert len(keeper._spent) == 1  # a long-running server keeps only the nonces whose states could still come back


def test_state_round_trips_only_through_the_hmac():
    keeper = RoundKeeper()
    state = advance(keeper).request_state
    prefix, body, mac = state.split(".")
    assert rejected(lambda: advance(keeper, responses={"first": ACCEPT}, state=f"{prefix}.{body}x.{mac}")).error.code == INVALID_PARAMS


# ---------------------------------------------------------------- tasks (in memory)


def run_tasks(scenario):
    """Run ``scenario(store)`` with a TaskStore whose jobs run in a task group, as the server's lifespan does."""
    async def main():
        store = TaskStore()
        async with anyio.create_task_group() as group:
            store.attach(group)
            try:
                return await scenario(store)
            finally:
                group.cancel_scope.cancel()
    return anyio.run(main)


async def settled(store, task_id: str, statuses=("completed", "failed", "cancelled")) -> dict:
    with anyio.fail_after(5):
        while (task := store.get(task_id).detailed())["status"] not in statuses:
            await anyio.sleep(0.01)
    return task


def test_task_parks_for_input_accepts_partial_answers_and_completes():
    async def scenario(store):
        async def job(handle):
            answers = await handle.ask({"a": elicit("A?", {}), "b": elicit("B?", {})})
            return {"content": [{"type": "text", "text": ",".join(a["content"]["v"] for a in answers.values())}]}

        record = store.create(job)
        parked = await settled(store, record.task_id, ("input_required",))
        first, second = sorted(parked["inputRequests"])
        store.update(record.task_id, {first: {"action": "accept", "content": {"v": "1"}}, "stray": 5})
        still = store.get(record.task_id).detailed()
        store.update(record.task_id, {second: {"action": "accept", "content": {"v": "2"}}})
        return still, await settled(store, record.task_id)

    still, done = run_tasks(scenario)
    assert still["status"] == "input_required" and len(still["inputRequests"]) == 1
    assert done["status"] == "completed" and done["result"]["content"][0]["text"] == "1,2"
    assert "requestState" not in done and "error" not in done


def test_idle_tasks_are_forgotten_after_their_ttl_and_stop_waiting():
    clock = [1000.0]

    async def scenario(store):
        async def waits(handle):
            await handle.ask({"a": elicit("A?", {})})
            return {"content": []}

        record = store.create(waits)
        await settled(store, record.task_id, ("input_required",))
        clock[0] += 301  # past the 5-minute TTL
        gone = rejected(lambda: store.get(record.task_id)).error.code
        await anyio.wait_all_tasks_blocked()
        return gone, record.status

    async def main():
        store = TaskStore(now=lambda: clock[0])
        async with anyio.create_task_group() as group:
            store.attach(group)
            result = await scenario(store)
            group.cancel_scope.cancel()
        return result

    gone, status = anyio.run(main)
    assert gone == INVALID_PARAMS and status == "cancelled"


def test_task_errors_cancellation_and_unknown_ids(caplog):
    async def scenario(store):
        async def crash(handle):
            raise RuntimeError("boom at /srv/secret/path")

        async def forever(handle):
            await anyio.sleep(60)
            return {"content": []}

        failed = store.create(crash)
        running = store.create(forever)
        store.cancel(running.task_id)
        store.cancel(running.task_id)  # idempotent on a terminal task
        unknown = rejected(lambda: store.get("task-nope")).error.code
        return await settled(store, failed.task_id), await settled(store, running.task_id), unknown

    failed, cancelled, unknown = run_tasks(scenario)
    assert cancelled["lastUpdatedAt"] >= cancelled["createdAt"]
    assert failed["status"] == "failed" and "result" not in failed and failed["error"]["code"] == t.INTERNAL_ERROR
    # the client gets a generic message; the exception text stays in the server log
    assert failed["error"]["message"] == INTERNAL_FAILURE and "boom" not in json.dumps(failed)
    assert any("boom at /srv/secret/path" in (r.exc_text or "") and failed["taskId"] in r.getMessage() for r in caplog.records)
    assert cancelled["status"] == "cancelled" and unknown == INVALID_PARAMS


def test_task_store_is_bounded_the_oldest_finished_task_makes_room_and_running_ones_are_never_dropped():
    async def scenario(store):
        async def quick(handle):
            return {"content": []}

        async def forever(handle):
            await anyio.sleep(60)
            return {"content": []}

        done_first = store.create(quick)
        await settled(store, done_first.task_id)
        done_second = store.create(quick)
        await settled(store, done_second.task_id)
        running = store.create(forever)
        newest = store.create(forever)  # full: the oldest finished task makes room
        evicted = rejected(lambda: store.get(done_first.task_id)).error.code
        kept = store.get(done_second.task_id).status
        store.create(forever)  # evicts done_second
        refused = rejected(lambda: store.create(forever)).error  # three running: nothing may be dropped
        return evicted, kept, refused, [store.get(r.task_id).status for r in (running, newest)]

    async def main():
        store = TaskStore(max_tasks=3)
        async with anyio.create_task_group() as group:
            store.attach(group)
            result = await scenario(store)
            group.cancel_scope.cancel()
        return result

    evicted, kept, refused, running = anyio.run(main)
    assert evicted == INVALID_PARAMS and kept == "completed"
    assert refused.code == t.INTERNAL_ERROR and refused.data == {"limit": 3} and "3 tasks" in refused.message
    assert running == ["working", "working"]


# ---------------------------------------------------------------- the real SDK client over loopback, both eras


@pytest.fixture(scope="module")
def server():
    with serve_reference() as served:
        yield served


def sdk(server, mode: str, **callbacks) -> Client:
    return Client(server.url, mode=mode, **callbacks)


@pytest.mark.parametrize("mode", MODES)
def test_sdk_client_sees_every_fixture_kind(server, mode):
    async def scenario():
        async with sdk(server, mode) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            text = await client.call_tool("test_simple_text")
            mixed = await client.call_tool("test_multiple_content_types")
            failed = await client.call_tool("test_error_handling")
            prompt = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})
            resource = await client.read_resource("test://static-text")
            templates = await client.list_resource_templates()
            completion = await client.complete(t.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                                               {"name": "arg1", "value": "pa"})
            return tools, text, mixed, failed, prompt, resource, templates, completion

    tools, text, mixed, failed, prompt, resource, templates, completion = anyio.run(scenario)
    assert tools == [tool.name for tool in TOOLS]
    assert text.content[0].text == "This is a simple text response for testing." and not text.is_error
    assert [block.type for block in mixed.content] == ["text", "image", "resource"]
    assert failed.is_error is True
    assert prompt.messages[0].content.resource.uri == "test://x"
    assert resource.contents[0].text == "This is the content of the static text resource."
    assert templates.resource_templates[0].uri_template == "test://template/{id}/data"
    assert completion.completion.values == ["paris", "park", "party"]


@pytest.mark.parametrize("mode", MODES)
def test_progress_arrives_in_order_on_both_eras(server, mode):
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress, total, message):
        seen.append((progress, total))

    async def scenario():
        async with sdk(server, mode) as client:
            return await client.call_tool("test_tool_with_progress", progress_callback=on_progress)

    result = anyio.run(scenario)
    assert not result.is_error
    assert seen == [(0, 100), (50, 100), (100, 100)]


@pytest.mark.parametrize("mode", MODES)
def test_logs_reach_a_client_that_asked_for_them(server, mode):
    logs: list[str] = []

    async def on_log(params):
        logs.append(params.data)

    async def scenario():
        async with Client(server.url, mode=mode, logging_callback=on_log, log_level="info") as client:
            return await client.call_tool("test_tool_with_logging")

    anyio.run(scenario)
    assert logs == ["Tool execution started", "Tool processing data", "Tool execution completed"]


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # logging/setLevel is 2025-11-25 only
def test_legacy_set_level_filters_the_sessions_logs(server):
    logs: list = []

    async def on_log(params):
        logs.append(params.data)

    async def scenario():
        async with Client(server.url, mode="legacy", logging_callback=on_log) as client:
            await client.set_logging_level("error")
            return await client.call_tool("test_tool_with_logging")

    assert not anyio.run(scenario).is_error
    assert logs == []


def test_modern_logs_stay_silent_without_a_log_level(server):
    logs: list = []

    async def on_log(params):
        logs.append(params)

    async def scenario():
        async with Client(server.url, mode="2026-07-28", logging_callback=on_log) as client:
            return await client.call_tool("test_logging_tool")

    assert not anyio.run(scenario).is_error
    assert logs == []


@pytest.mark.parametrize("mode", MODES)
def test_sampling_elicitation_and_roots_go_through_the_clients_callbacks(server, mode):
    """2025-11-25: server-to-client requests on the session; 2026-07-28: input_required rounds the SDK client retries."""
    asked: list[str] = []
    prompts: list[str] = []

    async def sampler(context, params):
        asked.append("sampling")
        prompts.append(params.messages[0].content.text)
        return t.CreateMessageResult(role="assistant", content=t.TextContent(type="text", text="Paris"), model="test-model")

    async def elicitor(context, params):
        asked.append(params.message)
        field = next(iter(params.requested_schema["properties"]))
        return t.ElicitResult(action="accept", content={field: "Alice" if field == "name" else "blue"})

    async def roots(context):
        asked.append("roots")
        return t.ListRootsResult(roots=[t.Root(uri="file:///test/root", name="Test Root")])

    async def scenario():
        async with sdk(server, mode, sampling_callback=sampler, elicitation_callback=elicitor, list_roots_callback=roots) as client:
            calls = [("test_sampling", {"prompt": "Capital of France?"}), ("test_input_required_result_multi_round", {}),
                     ("test_input_required_result_multiple_inputs", {})]
            return [(await client.call_tool(name, arguments)).content[0].text for name, arguments in calls]

    texts = anyio.run(scenario)
    assert texts[0] == "LLM response: Paris" and prompts == ["Capital of France?", "Generate a greeting"]
    assert texts[1] == "Alice likes blue"
    assert texts[2] == "Paris Alice; roots: file:///test/root"
    assert asked[:3] == ["sampling", "Step 1: What is your name?", "Step 2: What is your favorite color?"]
    assert sorted(asked[3:]) == ["What is your name?", "roots", "sampling"]


def test_prompt_asks_for_input_on_the_modern_wire(server):
    async def elicitor(context, params):
        return t.ElicitResult(action="accept", content={"context": "lab 3"})

    async def scenario():
        async with sdk(server, "2026-07-28", elicitation_callback=elicitor) as client:
            return await client.get_prompt("test_input_required_result_prompt")

    assert anyio.run(scenario).messages[0].content.text == "Use this context: lab 3"


def test_listen_stream_gets_the_tools_change(server):
    async def scenario():
        async with sdk(server, "2026-07-28") as client, client.listen(tools_list_changed=True) as subscription:
            await client.call_tool("test_trigger_tool_change")
            with anyio.fail_after(5):
                async for event in subscription:
                    return event

    assert type(anyio.run(scenario)).__name__ == "ToolsListChanged"


# ---------------------------------------------------------------- raw HTTP: the error paths a client meets


def post(server, method: str, params: dict, *, capabilities=None, headers=()):
    body, built = build_request(method, params, capabilities=ALL_CAPS if capabilities is None else capabilities)
    with httpx.Client() as http:
        return http.post(server.url, json=body, headers=[*built, ("Accept", "application/json, text/event-stream"), *headers])


def test_negative_tampered_state_over_http_is_400_invalid_params(server):
    first = post(server, "tools/call", {"name": "test_input_required_result_tampered_state", "arguments": {}}).json()["result"]
    assert first["resultType"] == "input_required" and first["requestState"].startswith("v1.")
    reply = post(server, "tools/call", {"name": "test_input_required_result_tampered_state", "arguments": {},
                                        "inputResponses": {"confirm": {"action": "accept", "content": {"ok": True}}},
                                        "requestState": first["requestState"] + "-TAMPERED"})
    assert reply.status_code == 400 and reply.json()["error"]["code"] == INVALID_PARAMS


def test_negative_missing_capability_over_http_is_400_with_required_capabilities(server):
    reply = post(server, "tools/call", {"name": "test_missing_capability", "arguments": {}}, capabilities={})
    assert reply.status_code == 400
    assert reply.json()["error"]["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert reply.json()["error"]["data"]["requiredCapabilities"] == {"sampling": {}}


def test_caching_hints_on_modern_lists_and_reads(server):
    lists = post(server, "resources/list", {}).json()["result"]
    read = post(server, "resources/read", {"uri": "test://static-text"}).json()["result"]
    assert (lists["ttlMs"], lists["cacheScope"]) == (60_000, "public") and (read["ttlMs"], read["cacheScope"]) == (60_000, "public")


@pytest.mark.parametrize("headers", [[("Host", "evil.example")], [("Origin", "http://evil.example")]])
def test_negative_dns_rebinding_is_refused(server, headers):
    reply = post(server, "tools/list", {}, headers=headers)
    assert 400 <= reply.status_code < 500 and "result" not in reply.text


def test_legacy_subscribe_is_gone_from_the_modern_wire(server):
    reply = post(server, "resources/subscribe", {"uri": "test://watched-resource"})
    assert reply.status_code == 404 and reply.json()["error"]["code"] == -32601


def test_json_schema_2020_12_keywords_reach_the_wire_untouched(server):
    tools = post(server, "tools/list", {}).json()["result"]["tools"]
    assert next(tool for tool in tools if tool["name"] == "json_schema_2020_12_tool")["inputSchema"] == SCHEMA_2020_12


def test_negative_mcp_param_header_must_match_the_body(server):
    params = {"name": "test_header_param", "arguments": {"region": "Hello"}}
    good = post(server, "tools/call", params, headers=[("Mcp-Param-Region", "=?base64?SGVsbG8=?=")])
    assert good.status_code == 200 and "Region: Hello" in good.text
    for header in ([("Mcp-Param-Region", "Goodbye")], []):
        bad = post(server, "tools/call", params, headers=header)
        assert bad.status_code == 400 and bad.json()["error"]["code"] == -32020


def test_legacy_stream_closed_mid_call_is_resumed_by_the_sdk_client(server):
    async def scenario():
        async with sdk(server, "legacy") as client:
            return await client.call_tool("test_reconnection")

    assert anyio.run(scenario).content[0].text == "Reconnection test completed after closing the stream"


def test_negative_a_session_cannot_replay_another_sessions_events(server):
    """The SDK names POST streams by request id and shares the event store: replay must stay within the session."""
    def legacy(http, method, params, session=None, id=2):
        body, headers = build_request(method, params, era="legacy", id=id)
        return http.post(server.url, json=body, headers=[*headers, *([("mcp-session-id", session)] if session else [])])

    def open_session(http):
        opened = legacy(http, "initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                             "clientInfo": {"name": "t", "version": "1"}}, id=1)
        session = opened.headers["mcp-session-id"]
        legacy(http, "notifications/initialized", {}, session, id=None)
        return session

    with httpx.Client(timeout=10) as http:
        alice, bob = open_session(http), open_session(http)
        bobs_events = parse_sse(legacy(http, "tools/call", {"name": "greet", "arguments": {"name": "bob"}}, bob).text)
        legacy(http, "tools/call", {"name": "greet", "arguments": {"name": "alice-secret"}}, alice)  # same request id 2
        headers = {"mcp-session-id": bob, "Last-Event-ID": next(e["id"] for e in bobs_events if e.get("id")),
                   "Accept": "text/event-stream", "MCP-Protocol-Version": "2025-11-25"}
        replayed = ""
        with http.stream("GET", server.url, headers=headers) as reply:
            for chunk in reply.iter_text():  # bob's own result, then the priming event of the resumed stream
                replayed += chunk
                if "retry:" in replayed:
                    break
    assert "Hello, bob!" in replayed and "alice-secret" not in replayed  # was: alice's result replayed to bob


@pytest.mark.parametrize("mode", MODES)
def test_invalid_arguments_are_a_tool_error_the_model_can_read(server, mode):
    async def scenario():
        async with sdk(server, mode) as client:
            return await client.call_tool("test_sampling", {})

    result = anyio.run(scenario)
    assert result.is_error is True and "'prompt' is a required property" in result.content[0].text


TASKS_CAPS = {**ALL_CAPS, "extensions": {TASKS_EXTENSION: {}}}


def test_task_tools_become_tasks_only_when_the_request_declares_the_extension(server):
    call = {"name": "slow_compute", "arguments": {"seconds": 0.05, "label": "x"}}
    sync = post(server, "tools/call", call).json()["result"]
    assert sync["resultType"] == "complete" and sync["content"][0]["text"] == "Computed x after 0.05 s"
    created = post(server, "tools/call", call, capabilities=TASKS_CAPS).json()["result"]
    assert created["resultType"] == "task" and created["status"] == "working" and "requestState" not in created
    deadline = time.monotonic() + 5
    while (task := post(server, "tasks/get", {"taskId": created["taskId"]}, capabilities=TASKS_CAPS).json()["result"])["status"] != "completed":
        assert time.monotonic() < deadline, task
    assert task["result"]["content"][0]["text"] == "Computed x after 0.05 s" and task["resultType"] == "complete"


def test_negative_tasks_without_the_extension_are_minus_32021(server):
    required = post(server, "tools/call", {"name": "failing_job", "arguments": {}})
    assert required.status_code == 400 and required.json()["error"]["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY
    assert required.json()["error"]["data"]["requiredCapabilities"] == {"extensions": {TASKS_EXTENSION: {}}}
    get = post(server, "tasks/get", {"taskId": "task-x"})
    assert get.status_code == 400 and get.json()["error"]["code"] == MISSING_REQUIRED_CLIENT_CAPABILITY


def test_legacy_clients_are_promised_no_tasks_and_can_call_every_task_tool(server):
    """2025-11-25 has its own task protocol, not served here: no taskSupport, and 'required' tools run synchronously."""
    async def elicitor(context, params):
        return t.ElicitResult(action="accept", content={"confirm": True})

    async def scenario():
        async with sdk(server, "legacy") as bare:
            listed = [tool.name for tool in (await bare.list_tools()).tools if tool.execution is not None]
            required = await bare.call_tool("failing_job", {})
            with pytest.raises(MCPError) as refused:
                await bare.call_tool("confirm_delete", {"filename": "a.txt"})
        async with sdk(server, "legacy", elicitation_callback=elicitor) as asking:
            confirmed = await asking.call_tool("confirm_delete", {"filename": "a.txt"})
        return listed, required, refused.value.error, confirmed

    listed, required, refused, confirmed = anyio.run(scenario)
    modern = [tool["name"] for tool in post(server, "tools/list", {}).json()["result"]["tools"] if "execution" in tool]
    assert listed == [] and modern == []  # legacy clients were told failing_job required 2025-11-25 task augmentation
    assert required.is_error and required.content[0].text == "The job ran and reports a tool error"  # was -32021
    assert refused.code == MISSING_REQUIRED_CLIENT_CAPABILITY and refused.data == {"requiredCapabilities": {"elicitation": {}}}
    assert confirmed.content[0].text == "Deleted a.txt"  # was: the client's own -32600 "Elicitation not supported"


def test_negative_tasks_get_checks_mcp_name_and_the_task_id(server):
    mismatch = post(server, "tasks/get", {"taskId": "task-x"}, capabilities=TASKS_CAPS, headers=[("Mcp-Name", "task-y")])
    assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == -32020
    unknown = post(server, "tasks/get", {"taskId": "task-x"}, capabilities=TASKS_CAPS)
    assert unknown.json()["error"]["code"] == INVALID_PARAMS


def test_negative_request_body_over_the_cap_is_refused_before_any_handler(server):
    reply = post(server, "tools/call", {"name": "greet", "arguments": {"name": "x" * (MAX_REQUEST_BYTES + 1)}})
    assert reply.status_code == 413
    assert post(server, "tools/call", {"name": "greet", "arguments": {"name": "x" * 1000}}).status_code == 200


def test_legacy_sessions_are_capped(server):
    body, headers = build_request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                                 "clientInfo": {"name": "t", "version": "1"}}, era="legacy")
    with serve_app(build_app(max_sessions=2), name="capped reference") as port, httpx.Client() as http:
        url = f"http://127.0.0.1:{port}/mcp"
        statuses = [http.post(url, json=body, headers=headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 503]


def test_stopping_ends_listen_streams_gracefully_and_does_not_wait_for_slow_calls():
    import threading

    lines: list[str] = []
    outcomes: list[object] = []
    acknowledged = threading.Event()

    def listen(url):
        body, headers = build_request("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
        with httpx.Client(timeout=30) as http, http.stream("POST", url, json=body, headers=headers) as reply:
            for line in reply.iter_lines():
                lines.append(line)
                if "subscriptions/acknowledged" in line:
                    acknowledged.set()

    def slow_call(url):
        body, headers = build_request("tools/call", {"name": "slow_compute", "arguments": {"seconds": 600}})
        try:
            outcomes.append(httpx.post(url, json=body, headers=headers, timeout=30).status_code)
        except httpx.HTTPError as exc:
            outcomes.append(exc)

    with serve_reference() as srv:
        threads = [threading.Thread(target=f, args=(srv.url,), daemon=True) for f in (listen, slow_call)]
        for thread in threads:
            thread.start()
        assert acknowledged.wait(timeout=10), "no listen acknowledgement"
        started = time.monotonic()
    stopped_in = time.monotonic() - started
    for thread in threads:
        thread.join(timeout=10)
    assert stopped_in < SHUTDOWN_GRACE_SECONDS + 3  # was about 10 s: uvicorn waited for the open stream until the join gave up
    final = [json.loads(line[len("data: "):]) for line in lines if line.startswith("data: ")][-1]
    assert final["id"] == 1 and final["result"]["resultType"] == "complete"  # the listen result: a deliberate end
    assert outcomes and not threads[1].is_alive()


def test_port_in_use_is_a_clear_error(server):
    with pytest.raises(ServeError, match=f"cannot listen on 127.0.0.1:{server.port}"):
        with serve_reference(port=server.port):
            pass


# ---------------------------------------------------------------- the CLI


def test_serve_reference_bad_port_is_one_line_and_exit_2(capsys):
    assert main(["serve", "reference", "--port", "70000"]) == 2
    err = capsys.readouterr().err
    assert "--port must be 0..65535" in err and err.count("\n") == 1


@pytest.mark.parametrize("host", ["", "  "])
def test_negative_serve_reference_empty_host_is_one_line_and_exit_2(capsys, host):
    assert main(["serve", "reference", "--host", host, "--port", "0"]) == 2  # was: listened on every interface
    err = capsys.readouterr().err
    assert "--host needs an interface" in err and err.count("\n") == 1


def test_serve_reference_prints_the_url_serves_and_stops_on_sigterm():
    proc = subprocess.Popen([sys.executable, "-m", "mcplab", "serve", "reference", "--port", "0"], env=dict(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        line = proc.stdout.readline()
        assert "serving http://127.0.0.1:" in line, line + proc.stderr.read()
        body, headers = build_request("tools/list", {})
        reply = httpx.post(line.split()[4], json=body, headers=headers)
        assert reply.status_code == 200 and "test_simple_text" in reply.text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=15) == 0
        assert "stopped" in proc.stderr.read()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


# ---------------------------------------------------------------- the official runner, nothing excused



@pytest.mark.network
@pytest.mark.parametrize("requirements", REQUIREMENT_REVISIONS)
def test_reference_passes_every_scored_scenario_without_a_baseline(runner, server, requirements):
    scored = list_scenarios(requirements, runner=runner)
    started = time.monotonic()
    run = run_official(server.url, requirements, runner=runner)
    elapsed = time.monotonic() - started
    print(f"\nofficial runner {RUNNER_VERSION} vs reference server: {run.summary()} in {elapsed:.1f} s")
    failing = {s.scenario: [(c.id, c.message) for c in s.failures] for s in run.scored if not s.passed}
    assert run.exit_code == 0, f"{failing}\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
    assert run.baseline is None
    assert [s.scenario for s in run.scored] == scored and run.passed_scenarios == len(scored) > 0
    assert run.failed_checks == 0


@pytest.mark.network
def test_cli_conformance_reference_scores_everything(runner, capsys):

    code = main(["conformance", "--reference", "--requirements", "2026-07-28", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["exitCode"] == 0 and report["baseline"] is None
    assert report["scenarios"]["passed"] == report["scenarios"]["total"] > 0 and report["checks"]["failed"] == 0

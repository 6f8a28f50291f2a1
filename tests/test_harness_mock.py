"""The harness's mock API server (agentab.harness.mock_server): local only, on 127.0.0.1."""

from __future__ import annotations

import json
import socket
import threading
import urllib.error
import urllib.request

import pytest

from agentab.harness.mock_server import MockServer, Request, Response


def call(url: str, method: str = "GET", body: object = None, data: bytes | None = None):
    """(status, decoded JSON body, headers) of one request."""
    if body is not None:
        data = json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:
            raw, status, headers = answer.read(), answer.status, answer.headers
    except urllib.error.HTTPError as err:
        raw, status, headers = err.read(), err.code, err.headers
    return status, (json.loads(raw) if raw and "json" in headers.get("Content-Type", "") else raw), headers


def test_json_value_response_and_callable_with_seed():
    seen: list[Request] = []

    def item(request: Request, seed: int):
        seen.append(request)
        return {"id": int(request.params["item_id"]), "price": 10 + seed}

    endpoints = {"GET /v1/items": [{"id": 1}, {"id": 2}],
                 "GET /v1/items/{item_id}": item,
                 "POST /v1/items": Response(201, {"created": True}, {"X-Mock": "yes"})}
    with MockServer(endpoints, seed=3) as server:
        assert server.url == f"http://127.0.0.1:{server.port}"
        assert call(server.url + "/v1/items")[:2] == (200, [{"id": 1}, {"id": 2}])
        assert call(server.url + "/v1/items/5?tag=a&tag=b&q=")[:2] == (200, {"id": 5, "price": 13})
        status, body, headers = call(server.url + "/v1/items", "POST", {"name": "x"})
        assert (status, body, headers["X-Mock"]) == (201, {"created": True}, "yes")
    assert seen[0].query == {"tag": ["a", "b"], "q": ""} and seen[0].method == "GET"
    requests = server.requests
    assert [(r["method"], r["path"], r["status"]) for r in requests] == [
        ("GET", "/v1/items", 200), ("GET", "/v1/items/5", 200), ("POST", "/v1/items", 201)]
    assert requests[1]["query"] == {"tag": ["a", "b"], "q": ""} and requests[2]["body"] == {"name": "x"}
    assert all(r["at"].endswith("+00:00") for r in requests)


def test_responses_depend_on_the_seed():
    endpoints = {"GET /balance": lambda request, seed: {"balance": 100 * seed}}
    answers = []
    for seed in (1, 2):
        with MockServer(endpoints, seed=seed) as server:
            answers.append(call(server.url + "/balance")[1])
    assert answers == [{"balance": 100}, {"balance": 200}]


def test_unknown_route_and_wrong_method_are_404_with_json_and_recorded():
    with MockServer({"GET /a": 1}) as server:
        assert call(server.url + "/b") [:2] == (404, {"error": "no endpoint GET /b"})
        assert call(server.url + "/a", "DELETE")[:2] == (404, {"error": "no endpoint DELETE /a"})
        assert call(server.url + "/a/")[0] == 404  # paths match exactly
    assert [r["status"] for r in server.requests] == [404, 404, 404]


def test_exact_path_wins_over_a_parameter_and_parameters_match_one_segment():
    endpoints = {"GET /users/{name}": lambda r, s: {"user": r.params["name"]}, "GET /users/me": {"user": "self"}}
    with MockServer(endpoints) as server:
        assert call(server.url + "/users/me")[1] == {"user": "self"}
        assert call(server.url + "/users/ada%20l")[1] == {"user": "ada l"}
        assert call(server.url + "/users/a/b")[0] == 404


def test_failing_endpoint_is_a_500_and_the_server_keeps_serving():
    def broken(request, seed):
        raise KeyError("missing")

    with MockServer({"GET /x": broken, "GET /y": lambda r, s: object(), "GET /ok": True}) as server:
        status, body, _ = call(server.url + "/x")
        assert status == 500 and "KeyError" in body["error"]
        assert call(server.url + "/y")[0] == 500  # returned something that is not JSON
        assert call(server.url + "/ok")[:2] == (200, True)


def test_bytes_body_text_body_and_empty_responses():
    endpoints = {"GET /file": Response(200, b"\x00raw", {"Content-Type": "text/plain"}),
                 "DELETE /row": Response(204), "PUT /echo": lambda r, s: {"got": r.body}}
    with MockServer(endpoints) as server:
        status, body, headers = call(server.url + "/file")
        assert (status, body, headers["Content-Type"]) == (200, b"\x00raw", "text/plain")
        assert call(server.url + "/row", "DELETE")[:2] == (204, b"")
        assert call(server.url + "/echo", "PUT", data=b"not json")[1] == {"got": "not json"}
    assert server.requests[2]["body"] == "not json" and server.requests[0]["body"] is None


def test_concurrent_requests_are_all_recorded():
    with MockServer({"GET /n/{i}": lambda r, s: int(r.params["i"])}) as server:
        results: list[int] = []
        lock = threading.Lock()

        def worker(i):
            value = call(f"{server.url}/n/{i}")[1]
            with lock:
                results.append(value)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(results) == list(range(20)) and len(server.requests) == 20


def test_clean_shutdown_leaves_no_thread_and_frees_the_port():
    before = set(threading.enumerate())
    with MockServer({"GET /a": 1}) as server:
        call(server.url + "/a")
        port = server.port
        assert len(set(threading.enumerate()) - before) >= 1
    assert set(threading.enumerate()) - before == set()
    probe = socket.socket()
    assert probe.connect_ex(("127.0.0.1", port)) != 0  # nothing listens there any more
    probe.close()
    with pytest.raises(ValueError, match="not running"):
        server.url


def test_shutdown_with_an_idle_client_connected():
    before = set(threading.enumerate())
    with MockServer({"GET /a": 1}) as server:
        idle = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        idle.sendall(b"GET /a HTTP/1.0\r\n\r\n")
        assert idle.recv(100).startswith(b"HTTP/1.0 200")
    idle.close()
    assert set(threading.enumerate()) - before == set()


def test_restartable_after_exit_and_not_enterable_twice():
    server = MockServer({"GET /a": 1})
    with server:
        with pytest.raises(ValueError, match="already running"):
            server.__enter__()
    with server:
        assert call(server.url + "/a")[1] == 1


@pytest.mark.parametrize("endpoints, message", [
    ([("GET /a", 1)], "`endpoints` must map"),
    ({"get /a": 1}, "endpoint key 'get /a' must be 'METHOD /path'"),
    ({"GET a": 1}, "endpoint key 'GET a'"),
    ({"FETCH /a": 1}, "endpoint 'FETCH /a': method must be one of"),
    ({"GET /a?x=1": 1}, "endpoint 'GET /a\\?x=1': the path must not hold a query"),
    ({"GET /a/{1x}": 1}, "endpoint 'GET /a/{1x}': a path parameter is a whole segment"),
    ({"GET /a/x{id}": 1}, "a path parameter is a whole segment"),
    ({"GET /{a}/{a}": 1}, "a path parameter name repeats"),
    ({"GET /a/{x}": 1, "GET /a/{y}": 2}, "endpoint 'GET /a/{y}' matches the same requests as 'GET /a/{x}'"),
    ({"GET /a": {1, 2}}, "endpoint 'GET /a': the response is not JSON"),
    ({"GET /a": float("nan")}, "endpoint 'GET /a': the response is not JSON"),
    ({"GET /a": Response(700)}, "endpoint 'GET /a': status must be an integer in 100..599"),
    ({"GET /a": Response(200, None, {"X": 1})}, "endpoint 'GET /a': headers must map text to text"),
])
def test_endpoints_are_validated_up_front(endpoints, message):
    with pytest.raises(ValueError, match=message) as err:
        MockServer(endpoints)
    assert "\n" not in str(err.value)


def test_seed_must_be_an_integer():
    with pytest.raises(ValueError, match="`seed` must be an integer"):
        MockServer({}, seed="1")

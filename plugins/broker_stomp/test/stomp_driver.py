# A real STOMP client for the tests: stomp.py (Debian's python3-stomp)
# driven by JSON lines on stdin, reporting what it receives as JSON lines on
# stdout. One command per line, e.g.
#   {"op": "connect", "version": "1.2", "port": 61613, "login": "guest", "passcode": "guest", "heartbeats": [0, 0]}
#   {"op": "subscribe", "destination": "a/#", "id": "1", "ack": "client"}
#   {"op": "send", "destination": "a/b", "body": "hi", "headers": {"receipt": "r1"}}
# Events: connected, message, error, receipt, disconnected, heartbeat,
# heartbeat_timeout (with the frame's headers and body), and `done` or
# `failed` after each command.
import json
import os
import sys

import stomp


def emit(event, frame=None, **more):
    record = {"event": event, **more}
    if frame is not None:
        record["headers"] = dict(frame.headers)
        body = frame.body
        record["body"] = body.decode("utf-8", "replace") if isinstance(body, (bytes, bytearray)) else body
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


class Listener(stomp.ConnectionListener):
    def on_connected(self, frame):
        emit("connected", frame)

    def on_message(self, frame):
        emit("message", frame)

    def on_error(self, frame):
        emit("error", frame)

    def on_receipt(self, frame):
        emit("receipt", frame)

    def on_disconnected(self):
        emit("disconnected")

    def on_heartbeat(self):
        emit("heartbeat")

    def on_heartbeat_timeout(self):
        emit("heartbeat_timeout")


CLASSES = {"1.0": stomp.Connection10, "1.1": stomp.Connection11, "1.2": stomp.Connection12}
conn = None
version = None


def run(command):
    global conn, version
    op = command["op"]
    headers = command.get("headers") or {}
    if op == "connect":
        version = command.get("version", "1.2")
        options = {"reconnect_attempts_max": 1, "auto_decode": False}
        if version != "1.0":
            options["heartbeats"] = tuple(command.get("heartbeats", [0, 0]))
        conn = CLASSES[version]([("127.0.0.1", command["port"])], **options)
        conn.set_listener("", Listener())
        conn.connect(command.get("login"), command.get("passcode"), wait=False, headers=headers)
    elif op == "send":
        conn.send(command["destination"], command.get("body", ""), headers=headers)
    elif op == "subscribe":
        if version == "1.0":
            conn.subscribe(command["destination"], id=command.get("id"), ack=command.get("ack", "auto"), headers=headers)
        else:
            conn.subscribe(command["destination"], command["id"], ack=command.get("ack", "auto"), headers=headers)
    elif op == "unsubscribe":
        if version == "1.0":
            conn.unsubscribe(destination=command.get("destination"), id=command.get("id"), headers=headers)
        else:
            conn.unsubscribe(command["id"], headers=headers)
    elif op in ("ack", "nack"):
        act = getattr(conn, op)
        if version == "1.1":
            act(command["id"], command["subscription"], transaction=command.get("transaction"), receipt=command.get("receipt"))
        else:
            act(command["id"], transaction=command.get("transaction"), receipt=command.get("receipt"))
    elif op == "begin":
        conn.begin(command["transaction"], headers=headers)
    elif op == "commit":
        conn.commit(command["transaction"], headers=headers)
    elif op == "abort":
        conn.abort(command["transaction"], headers=headers)
    elif op == "disconnect":
        conn.disconnect(receipt=command.get("receipt"))
    else:
        raise ValueError("unknown op " + op)


for line in sys.stdin:
    line = line.strip()
    if line == "":
        continue
    command = json.loads(line)
    if command["op"] == "exit":
        break
    try:
        run(command)
        emit("done", op=command["op"])
    except Exception as err:  # reported to the test, which decides
        emit("failed", op=command["op"], error=repr(err))
# the socket closes with the process (stomp.py's own stop can wait on its receiver thread)
sys.stdout.flush()
os._exit(0)

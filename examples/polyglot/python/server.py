"""An orders API in plain Python 3 (http.server, no packages) with its own
Idempotency-Key layer, written without reading idemcheck's code. Its legal
choices differ from the reference's:

- the key is an sf-string as the draft says ("k"), but optional: a request
  without one simply executes;
- a reused key with another body gets 409 (as in flight), told apart by
  the error code;
- ids are integers counted per table (orders and payments both start at 1);
- a declined payment (402) is stored and replayed byte for byte, trace id
  included; a 503 releases the key; a validation error (400) records
  nothing;
- retention (TTL) counts from the stored answer, not the first request;
- errors are RFC 9457 problem+json with a type URI.

Env: PORT (default 0; the bound address is printed as "listening
127.0.0.1:PORT"), TTL_MS (default 3000), DEFECT (a broken build, see
DEFECTS), CHOICE (another legal build): no-fingerprint (no request
fingerprint at all, as Worldline and Qonto document; a reused key replays
its stored answer whatever the body), http10 (http.server's default
HTTP/1.0: one request per connection, closed after the answer),
mismatch-400 (Stripe's idempotency_error: a reused key with another body
gets 400, the status of a validation error too).
"""

import hashlib
import json
import os
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

TTL = int(os.environ.get("TTL_MS", "3000")) / 1000
DEFECT = os.environ.get("DEFECT", "")
DEFECTS = {
    # Keys are looked up lower-cased: "Abc" and "abc" are one key.
    "folds-case",
    # Looks the key up, then (2 ms later) inserts its claim without
    # checking it won: a burst executes more than once.
    "check-then-insert",
    # A stored decline is rebuilt on replay with a new trace id.
    "declines-rebuilt",
    # Keys are scoped to the endpoint, not to the user: bob reusing
    # alice's key gets alice's answer.
    "shared-scope",
    # An expired record is found, then (2 ms later, outside the lock)
    # replaced by a new claim without checking: retries at expiry execute
    # more than once.
    "racy-expiry",
}
CHOICE = os.environ.get("CHOICE", "")
if CHOICE not in ("", "no-fingerprint", "http10", "mismatch-400"):
    print(f"CHOICE={CHOICE}: unknown; want no-fingerprint, http10 or mismatch-400", file=sys.stderr)
    sys.exit(2)
if DEFECT and DEFECT not in DEFECTS:
    print(f"DEFECT={DEFECT}: unknown; want one of {', '.join(sorted(DEFECTS))}", file=sys.stderr)
    sys.exit(2)

USERS = {"u_alice": "alice", "u_bob": "bob"}  # X-Auth-Token header
MAX_DELAY = 5.0
# sf-string per RFC 8941 3.3.3: printable ASCII, with \" and \\ escapes.
SF_STRING = re.compile(r'^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$')

lock = threading.Lock()
records = {}  # scope -> dict(state, fingerprint, done_at, answer)
executions = {}  # key -> handler runs (any user, any endpoint): the oracle
ids = {"orders": 0, "payments": 0}
created = {}  # (user, table, id) -> the stored representation


def parse_key(values):
    """The key of the request's Idempotency-Key field lines, None when
    absent, or an error message."""
    if not values:
        return None, None
    if len(values) > 1:
        return None, "send one Idempotency-Key field"
    m = SF_STRING.match(values[0].strip(" "))
    if not m:
        return None, 'the Idempotency-Key must be an sf-string, e.g. "8e03978e"'
    key = re.sub(r'\\(["\\])', r"\1", m.group(1))
    if not key.strip() or len(key) > 255:
        return None, "the key must have 1 to 255 characters, not only spaces"
    return key, None


def problem(status, slug, detail, headers=None):
    body = {"type": f"https://docs.example.test/errors/{slug}", "title": slug.replace("-", " "), "status": status, "detail": detail}
    return status, {"Content-Type": "application/problem+json", **(headers or {})}, json.dumps(body).encode()


def ok(status, doc):
    return status, {"Content-Type": "application/json"}, json.dumps(doc, separators=(",", ":")).encode()


def decline():
    return problem(402, "payment-declined", f"the card was declined (trace {uuid.uuid4()})")


def next_id(table):
    with lock:
        ids[table] += 1
        return ids[table]


def validate(table, body):
    """A problem answer when the body is invalid (checked before the key is
    looked at, so nothing is recorded), else None."""
    if table == "orders":
        if not isinstance(body.get("item"), str) or not isinstance(body.get("qty"), int) or body["qty"] < 1:
            return problem(400, "invalid-order", "item must be a string and qty a positive integer")
    elif not isinstance(body.get("amount_cents"), int) or body["amount_cents"] < 1:
        return problem(400, "invalid-payment", "amount_cents must be a positive integer")
    return None


def effect(user, table, body):
    if body.get("slow_ms"):
        time.sleep(min(body["slow_ms"] / 1000, MAX_DELAY))
    if body.get("outage"):
        return problem(503, "unavailable", "try again later", {"Retry-After": "1"})
    if body.get("declined"):
        return decline()
    doc = {f"{table[:-1]}_id": next_id(table), **{k: v for k, v in body.items() if k != "slow_ms"}, "state": "accepted"}
    with lock:
        created[(user, table, doc[f"{table[:-1]}_id"])] = doc
    status, headers, raw = ok(201, doc)
    headers["Location"] = f"/{table}/{doc[table[:-1] + '_id']}"
    return status, headers, raw


def sweep(now):
    for scope in [s for s, r in records.items() if r["state"] == "done" and now - r["done_at"] >= TTL]:
        del records[scope]


def claim(scope, fingerprint):
    """Returns (answer or None, won)."""
    if DEFECT == "racy-expiry":
        with lock:
            rec = records.get(scope)
        if rec and rec["state"] == "done" and time.monotonic() - rec["done_at"] >= TTL:
            time.sleep(0.002)
            with lock:
                records[scope] = {"state": "running", "fingerprint": fingerprint}
            return None, True
    with lock:
        sweep(time.monotonic())
        rec = records.get(scope)
    if DEFECT == "check-then-insert" and rec is None:
        time.sleep(0.002)
        with lock:
            records[scope] = {"state": "running", "fingerprint": fingerprint}
        return None, True
    with lock:
        rec = records.get(scope)
        if rec is None:
            records[scope] = {"state": "running", "fingerprint": fingerprint}
            return None, True
    if rec["fingerprint"] != fingerprint and CHOICE != "no-fingerprint":
        status = 400 if CHOICE == "mismatch-400" else 409
        return problem(status, "key-reused", "this Idempotency-Key was used with another request"), False
    if rec["state"] == "running":
        return problem(409, "request-in-progress", "a request with this key is still running", {"Retry-After": "1"}), False
    status, headers, raw = rec["answer"]
    if DEFECT == "declines-rebuilt" and status == 402:
        status, headers, raw = decline()
    return (status, {**headers, "Idempotent-Replayed": "true"}, raw), False


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0" if CHOICE == "http10" else "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, answer):
        status, headers, raw = answer
        self.send_response(status)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        try:
            self.wfile.write(raw)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client hung up (the suite's lost-answer cases do)

    def do_GET(self):
        u = urlsplit(self.path)
        if u.path == "/debug/executions":
            key = parse_qs(u.query).get("key", [""])[0]
            with lock:
                n = executions.get(key, 0)
            return self.send(ok(200, {"executions": n}))
        m = re.fullmatch(r"/(orders|payments)/(\d+)", u.path)
        user = USERS.get(self.headers.get("X-Auth-Token", ""))
        if m and user is None:
            return self.send(problem(401, "unauthenticated", "send X-Auth-Token"))
        with lock:
            doc = created.get((user, m.group(1), int(m.group(2)))) if m else None
        if doc is None:
            return self.send(problem(404, "not-found", f"nothing at GET {u.path}"))
        self.send(ok(200, doc))

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        u = urlsplit(self.path)
        table = {"/orders": "orders", "/payments": "payments"}.get(u.path)
        if table is None:
            return self.send(problem(404, "not-found", f"no route POST {u.path}"))
        user = USERS.get(self.headers.get("X-Auth-Token", ""))
        if user is None:
            return self.send(problem(401, "unauthenticated", "send X-Auth-Token"))
        key, bad = parse_key(self.headers.get_all("Idempotency-Key"))
        if bad:
            return self.send(problem(400, "invalid-idempotency-key", bad))
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            return self.send(problem(400, "invalid-json", "the body is not JSON"))
        if not isinstance(body, dict):
            return self.send(problem(400, "invalid-json", "the body must be an object"))
        invalid = validate(table, body)
        if invalid:
            return self.send(invalid)
        if key is None:  # the key is optional: no key, no protection
            return self.send(effect(user, table, body))
        lookup = key.lower() if DEFECT == "folds-case" else key
        scope = json.dumps(["*" if DEFECT == "shared-scope" else user, "POST", u.path, lookup])
        fingerprint = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
        answer, won = claim(scope, fingerprint)
        if not won:
            return self.send(answer)
        with lock:
            executions[key] = executions.get(key, 0) + 1
        try:
            answer = effect(user, table, body)
        except Exception as e:  # noqa: BLE001 - the key must not stay claimed
            with lock:
                records.pop(scope, None)
            return self.send(problem(500, "internal", str(e)))
        with lock:
            if answer[0] >= 500:
                records.pop(scope, None)
            else:
                records[scope] = {"state": "done", "fingerprint": fingerprint, "done_at": time.monotonic(), "answer": answer}
        self.send(answer)


class Server(ThreadingHTTPServer):
    # socketserver's default backlog of 5 drops or resets a burst of
    # connections opened together.
    request_queue_size = 128
    daemon_threads = True


def main():
    srv = Server(("127.0.0.1", int(os.environ.get("PORT", "0"))), Handler)
    print(f"listening 127.0.0.1:{srv.server_address[1]}", flush=True)
    srv.serve_forever()


if __name__ == "__main__":
    main()

"""A client harness for `idemcheck client` in Python (docs/clients.md):

    idemcheck client --strict -- python3 examples/clients/harness.py

charge() stands for your SDK's call: one key per logical call, minted
before the retry loop; the body serialised once; lost answers, 409, 429
and 5xx retried with the same key and body, waiting Retry-After or a
doubling back-off; 400 and 422 not retried. Standard library only.
"""
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

BASE = os.environ["IDEMCHECK_BASE_URL"]
TOKEN = os.environ.get("IDEMCHECK_TOKEN", "")
RETRYABLE = {409, 429, 500, 502, 503, 504}


def charge(amount, currency):
    key = '"%s"' % uuid.uuid4()  # an sf-string, once per call
    body = json.dumps({"amount": amount, "currency": currency}).encode()
    wait = 0.1
    for attempt in range(1, 6):
        req = urllib.request.Request(BASE + "/v1/charges", data=body, method="POST", headers={
            "Content-Type": "application/json",
            "Authorization": "Bearer " + TOKEN,
            "Idempotency-Key": key,
        })
        retry_after = None
        try:
            with urllib.request.urlopen(req, timeout=1) as resp:
                return json.load(resp)["id"]
        except urllib.error.HTTPError as e:
            if e.code not in RETRYABLE or attempt == 5:
                raise
            retry_after = e.headers.get("Retry-After")
        except (urllib.error.URLError, OSError):  # lost answer, timeout
            if attempt == 5:
                raise
        time.sleep(int(retry_after) if retry_after and retry_after.isdigit() else wait)
        wait *= 2


def main():
    calls = int(os.environ.get("IDEMCHECK_CALLS", "1"))
    parallel = int(os.environ.get("IDEMCHECK_PARALLEL", "1"))
    lock, failed = threading.Lock(), []

    def worker():
        for _ in range(calls):
            try:
                cid = charge(1000, "usd")
                with lock:
                    print(cid, flush=True)
            except Exception as e:  # the call failed: report, exit 1
                with lock:
                    failed.append(e)
                    print("call failed:", e, file=sys.stderr)

    threads = [threading.Thread(target=worker) for _ in range(parallel)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    sys.exit(1 if failed else 0)


main()

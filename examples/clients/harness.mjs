// A client harness for `idemcheck client` in Node (docs/clients.md):
//
//   idemcheck client --strict -- node examples/clients/harness.mjs
//
// charge() stands for your SDK's call: one key per logical call, minted
// before the retry loop; the body serialised once; lost answers, 409, 429
// and 5xx retried with the same key and body, waiting Retry-After or a
// doubling back-off; 400 and 422 not retried. Node 18+, no packages.
import { randomUUID } from "node:crypto";

const base = process.env.IDEMCHECK_BASE_URL;
const token = process.env.IDEMCHECK_TOKEN ?? "";
const retryable = new Set([409, 429, 500, 502, 503, 504]);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function charge(amount, currency) {
  const key = `"${randomUUID()}"`; // an sf-string, once per call
  const body = JSON.stringify({ amount, currency });
  let wait = 100;
  for (let attempt = 1; ; attempt++) {
    let retryAfter = null;
    try {
      const res = await fetch(`${base}/v1/charges`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}`, "Idempotency-Key": key },
        body,
        signal: AbortSignal.timeout(1000),
      });
      if (res.ok) return (await res.json()).id;
      await res.arrayBuffer();
      if (!retryable.has(res.status) || attempt === 5) throw new Error(`the API answered ${res.status}`);
      retryAfter = res.headers.get("Retry-After");
    } catch (e) {
      if (e.message?.startsWith("the API answered") || attempt === 5) throw e;
      // a lost answer or a timeout: retry with the same key and body
    }
    await sleep(retryAfter && /^\d+$/.test(retryAfter) ? Number(retryAfter) * 1000 : wait);
    wait *= 2;
  }
}

const calls = Number(process.env.IDEMCHECK_CALLS ?? 1);
const parallel = Number(process.env.IDEMCHECK_PARALLEL ?? 1);
let failed = false;
await Promise.all(Array.from({ length: parallel }, async () => {
  for (let i = 0; i < calls; i++) {
    try {
      console.log(await charge(1000, "usd"));
    } catch (e) {
      failed = true;
      console.error("call failed:", e.message);
    }
  }
}));
process.exit(failed ? 1 : 0);

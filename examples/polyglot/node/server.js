// A payments API in plain Node.js (node:http, no packages) with its own
// Idempotency-Key layer, written without reading idemcheck's code. Its
// legal choices differ from the reference's:
//   - the key is a raw token (Stripe style), not an sf-string;
//   - errors are plain JSON {"error":{"code","message","doc_url"}}, not
//     problem+json: doc_url is the draft's link to documentation;
//   - replays carry "Idempotent-Replayed: true";
//   - the first answer sets a session cookie (with a comma in Expires) that
//     a replay never repeats;
//   - PATCH /v1/accounts/acct_1 updates an existing account: every answer
//     has the same id and a version that counts the executions;
//   - POST /v1/charges/{id}/capture is an action on a charge created first,
//     allowed once per charge;
//   - validation errors (400) and declines (402) are stored and replayed,
//     a 503 releases the key; the TTL counts from the first request.
//
// Env: PORT (default 0: any free port; the bound address is printed as
// "listening 127.0.0.1:PORT"), TTL_MS (default 3000), DEFECT (a broken
// build, see DEFECTS below), CHOICE (another legal build): fresh-cookie
// (every answer, a replay too, sets a session cookie of its own, as
// rolling sessions do; a replay never repeats the original's) or
// marker-false (a first answer carries Idempotent-Replayed: false), H2C=1 (serve cleartext HTTP/2 only, with prior
// knowledge, as gRPC-era gateways do; HTTP/1.1 is refused).
'use strict';

const http = require('node:http');
const http2 = require('node:http2');
const crypto = require('node:crypto');

const TTL_MS = Number(process.env.TTL_MS || 3000);
const DEFECT = process.env.DEFECT || '';
const CHOICE = process.env.CHOICE || '';
if (!['', 'fresh-cookie', 'marker-false'].includes(CHOICE)) {
  console.error(`CHOICE=${CHOICE}: unknown; want fresh-cookie or marker-false`);
  process.exit(2);
}
const DEFECTS = {
  // The claim is dropped when the handler returns and the answer is
  // stored a moment later: a retry in that gap executes again.
  'release-before-store': true,
  // A replay of the PATCH renders the account as it is now, not the
  // stored answer.
  'replay-current-state': true,
  // The 422 for a reused key quotes the stored answer.
  'conflict-leaks': true,
  // A replay repeats the first answer's Set-Cookie.
  'replays-cookie': true,
  // When the client hangs up while the handler runs, the handler's
  // effect stays but its answer is not stored and the claim is released
  // (a cancelled request context, fullstackhero/dotnet-starter-kit
  // PR #1333): the retry executes again.
  'cancelled-result-write': true,
  // A request without a key is executed, then answered 400.
  'missing-executes': true,
  // A replay sends each stored header value split at its commas, one
  // field line per piece (gofiber/fiber PR #4693): the receipt's
  // Content-Disposition filename breaks.
  'splits-headers': true,
  // The fingerprint covers the amount (or limit) alone: another currency
  // or nickname under a used key gets the stored answer.
  'partial-fingerprint': true,
};
if (DEFECT && !DEFECTS[DEFECT]) {
  console.error(`DEFECT=${DEFECT}: unknown; want one of ${Object.keys(DEFECTS).join(', ')}`);
  process.exit(2);
}

const USERS = { 'Bearer tok_alice': 'alice', 'Bearer tok_bob': 'bob' };
const KEY_RE = /^[\x21-\x7e]{1,255}$/; // a visible-ASCII token, as sent
const MAX_DELAY_MS = 5000;

// records: scope -> {state: 'running'|'done', fingerprint, created, answer}
const records = new Map();
// executions per key (any user, any endpoint; '' for none): the test
// oracle. GET /_test/executions?key=K counts K's, without key all.
const executions = new Map();
const charges = new Map(); // user + id -> charge
const accounts = new Map(); // user -> account

function account(user) {
  if (!accounts.has(user)) {
    accounts.set(user, { id: 'acct_1', nickname: 'main', limit: 100, version: 1 });
  }
  return accounts.get(user);
}

// canonical renders JSON with sorted members, so member order and
// whitespace never change the fingerprint.
function canonical(v) {
  if (Array.isArray(v)) return '[' + v.map(canonical).join(',') + ']';
  if (v && typeof v === 'object') {
    return '{' + Object.keys(v).sort().map((k) => JSON.stringify(k) + ':' + canonical(v[k])).join(',') + '}';
  }
  return JSON.stringify(v);
}

function json(status, body, headers = {}) {
  return { status, headers: { 'Content-Type': 'application/json; charset=utf-8', ...headers }, body: Buffer.from(JSON.stringify(body)) };
}

function error(status, code, message, headers) {
  return json(status, { error: { code, message, doc_url: `https://docs.example.test/errors#${code}` } }, headers);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.min(ms, MAX_DELAY_MS)));

// Operations: each returns the answer, after its side effect.
async function createCharge(user, req) {
  const { amount, currency } = req.body;
  if (!Number.isInteger(amount) || amount <= 0 || typeof currency !== 'string') {
    return error(400, 'invalid_request', 'amount must be a positive integer and currency a string');
  }
  if (req.body.delay_ms) await sleep(req.body.delay_ms);
  if (req.body.simulate === 'outage') return error(503, 'unavailable', 'try again later', { 'Retry-After': '1' });
  if (req.body.card === 'declined') {
    return error(402, 'card_declined', `declined, trace ${crypto.randomUUID()}`);
  }
  const charge = { id: 'ch_' + crypto.randomBytes(8).toString('hex'), object: 'charge', amount, currency, captured: false, created: Date.now() };
  charges.set(user + '/' + charge.id, charge);
  return json(201, charge, { Location: `/v1/charges/${charge.id}`, 'Content-Disposition': `inline; filename="receipt ${charge.id}, ${currency}.json"` });
}

async function capture(user, req, id) {
  const charge = charges.get(user + '/' + id);
  if (!charge) return error(404, 'not_found', `no charge ${id}`);
  const amount = req.body.amount ?? charge.amount;
  if (!Number.isInteger(amount) || amount <= 0 || amount > charge.amount) {
    return error(400, 'invalid_request', 'amount must be a positive integer up to the charge amount');
  }
  if (req.body.delay_ms) await sleep(req.body.delay_ms);
  if (req.body.simulate === 'outage') return error(503, 'unavailable', 'try again later', { 'Retry-After': '1' });
  if (charge.captured) return error(409, 'charge_already_captured', `charge ${id} is captured`);
  charge.captured = true;
  charge.amount_captured = amount;
  return json(200, { ...charge, capture_id: 'cap_' + crypto.randomBytes(6).toString('hex') });
}

function renderAccount(a) {
  return json(200, { id: a.id, object: 'account', nickname: a.nickname, limit: a.limit, version: a.version });
}

async function updateAccount(user, req) {
  const { nickname, limit } = req.body;
  if ((nickname !== undefined && typeof nickname !== 'string') || (limit !== undefined && !Number.isInteger(limit))) {
    return error(400, 'invalid_request', 'nickname must be a string and limit an integer');
  }
  if (req.body.delay_ms) await sleep(req.body.delay_ms);
  if (req.body.simulate === 'outage') return error(503, 'unavailable', 'try again later', { 'Retry-After': '1' });
  const a = account(user);
  if (nickname !== undefined) a.nickname = nickname;
  if (limit !== undefined) a.limit = limit;
  a.version++;
  return renderAccount(a);
}

function route(method, path) {
  if (method === 'POST' && path === '/v1/charges') return { op: createCharge };
  let m = /^\/v1\/charges\/([A-Za-z0-9_]+)\/capture$/.exec(path);
  if (method === 'POST' && m) return { op: (u, r) => capture(u, r, m[1]) };
  if (method === 'PATCH' && path === '/v1/accounts/acct_1') return { op: updateAccount, update: true };
  m = /^\/v1\/charges\/([A-Za-z0-9_]+)$/.exec(path);
  if (method === 'GET' && m) return { read: (u) => { const c = charges.get(u + '/' + m[1]); return c ? json(200, c) : error(404, 'not_found', `no charge ${m[1]}`); } };
  if (method === 'GET' && path === '/v1/accounts/acct_1') return { read: (u) => renderAccount(account(u)) };
  return null;
}

// sessionCookie is a new session, with the comma an Expires date holds.
function sessionCookie() {
  return `sid=${crypto.randomBytes(6).toString('hex')}; Expires=Wed, 21 Oct 2037 07:28:00 GMT; Path=/; HttpOnly`;
}

function sweep(now) {
  for (const [scope, rec] of records) {
    if (rec.state === 'done' && now - rec.created >= TTL_MS) records.delete(scope);
  }
}

// idempotent runs op under the request's key.
async function idempotent(user, req, key, op, update, gone) {
  const scope = JSON.stringify([user, req.method, req.path, key]);
  const fingerprinted = DEFECT === 'partial-fingerprint' ? { amount: req.body.amount, limit: req.body.limit } : req.body;
  const fingerprint = crypto.createHash('sha256').update(req.method + ' ' + req.path + ' ' + canonical(fingerprinted)).digest('hex');
  const now = Date.now();
  sweep(now);
  const rec = records.get(scope);
  if (rec && rec.fingerprint !== fingerprint) {
    const body = JSON.parse(error(422, 'idempotency_key_reused', 'this key was used with another request body').body);
    if (DEFECT === 'conflict-leaks' && rec.answer) body.error.original = JSON.parse(rec.answer.body.toString() || 'null');
    return json(422, body);
  }
  if (rec && rec.state === 'running') {
    return error(409, 'idempotency_request_in_progress', 'a request with this key is in progress', { 'Retry-After': '1' });
  }
  if (rec) {
    const replay = { ...rec.answer, headers: { ...rec.answer.headers, 'Idempotent-Replayed': 'true' } };
    if (DEFECT === 'replay-current-state' && update) {
      const now = renderAccount(account(user));
      replay.body = now.body;
    }
    if (DEFECT !== 'replays-cookie') delete replay.headers['Set-Cookie'];
    if (CHOICE === 'fresh-cookie') replay.headers['Set-Cookie'] = sessionCookie();
    if (DEFECT === 'splits-headers') {
      for (const [k, v] of Object.entries(replay.headers)) {
        if (typeof v === 'string' && v.includes(', ')) replay.headers[k] = v.split(', ');
      }
    }
    return replay;
  }
  const mine = { state: 'running', fingerprint, created: now };
  records.set(scope, mine);
  executions.set(key, (executions.get(key) || 0) + 1);
  let answer;
  try {
    answer = await op(user, req);
  } catch (e) {
    records.delete(scope);
    throw e;
  }
  if (answer.status >= 500 || (DEFECT === 'cancelled-result-write' && gone())) {
    records.delete(scope); // nothing stored: a retry runs again
    return answer;
  }
  answer.headers['Set-Cookie'] = sessionCookie();
  if (CHOICE === 'marker-false') answer.headers['Idempotent-Replayed'] = 'false';
  if (DEFECT === 'release-before-store') {
    records.delete(scope);
    await sleep(5);
  }
  records.set(scope, { ...mine, state: 'done', answer });
  return answer;
}

async function handle(req, gone) {
  if (req.method === 'GET' && req.path === '/_test/executions') {
    const total = [...executions.values()].reduce((a, b) => a + b, 0);
    return json(200, { executions: req.query.has('key') ? executions.get(req.query.get('key')) || 0 : total });
  }
  const r = route(req.method, req.path);
  if (!r) return error(404, 'not_found', `no route ${req.method} ${req.path}`);
  const user = USERS[req.headers.authorization || ''];
  if (!user) return error(401, 'unauthenticated', 'a valid bearer token is required', { 'WWW-Authenticate': 'Bearer' });
  if (r.read) return r.read(user);
  const keys = req.rawHeaders.filter((_, i) => i % 2 === 0 && req.rawHeaders[i].toLowerCase() === 'idempotency-key');
  if (keys.length === 0) {
    if (DEFECT === 'missing-executes') {
      executions.set('', (executions.get('') || 0) + 1);
      await r.op(user, { ...req, body: JSON.parse(req.raw || '{}') });
    }
    return error(400, 'idempotency_key_missing', 'this endpoint requires an Idempotency-Key header');
  }
  const key = req.headers['idempotency-key'];
  if (keys.length > 1 || !KEY_RE.test(key)) {
    return error(400, 'idempotency_key_invalid', 'the Idempotency-Key must be one token of 1 to 255 visible ASCII characters');
  }
  if (!(req.headers['content-type'] || '').startsWith('application/json')) {
    return error(415, 'unsupported_media_type', 'send application/json');
  }
  try {
    req.body = req.raw.length ? JSON.parse(req.raw) : {};
  } catch {
    return error(400, 'invalid_json', 'the body is not JSON');
  }
  if (!req.body || typeof req.body !== 'object' || Array.isArray(req.body)) return error(400, 'invalid_request', 'the body must be a JSON object');
  return idempotent(user, req, key, r.op, r.update, gone);
}

const serve = (req, res) => {
  let hungUp = false;
  res.on('close', () => { hungUp = !res.writableFinished; });
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', async () => {
    const u = new URL(req.url, 'http://localhost');
    req.path = u.pathname;
    req.query = u.searchParams;
    req.raw = Buffer.concat(chunks).toString();
    let answer;
    try {
      answer = await handle(req, () => hungUp);
    } catch (e) {
      answer = error(500, 'internal', String(e));
    }
    if (res.destroyed || res.stream?.destroyed) return; // the client hung up
    res.writeHead(answer.status, { ...answer.headers, 'Content-Length': answer.body.length });
    res.end(answer.body);
  });
};
const server = process.env.H2C === '1' ? http2.createServer(serve) : http.createServer(serve);
server.listen(Number(process.env.PORT || 0), '127.0.0.1', () => {
  const a = server.address();
  console.log(`listening ${a.address}:${a.port}`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));

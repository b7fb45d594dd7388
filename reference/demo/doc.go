// Package demo is the reference app idemcheck serves: a tiny payments API
// (charges and refunds) behind the reference idempotency middleware, with
// an effects oracle that counts handler executions per key.
//
// Of idemcheck's packages it imports only reference, reference/memstore (the
// default store) and reference/outbox (published events); nothing outside
// reference/.
package demo

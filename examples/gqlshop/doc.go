// Command gqlshop is a small payments API over GraphQL (POST /graphql)
// written to be checked by idemcheck: its chargeCreate mutation takes
// Shopify's @idempotent(key: "…") directive on the mutation's field, and
// it answers with Shopify's codes: every answer under HTTP 200, a
// missing directive, a key reused with other arguments and a duplicate
// still in flight as top-level errors with extensions.code (Shopify's
// schema puts the same codes in userErrors: paymentCreate answers so), a
// declined card as a userErrors entry (an outcome, kept and replayed), a failure
// of its own as INTERNAL_SERVER_ERROR (not kept: a retry executes), and a
// variable of the wrong type as a validation error before any lookup.
// Keys are scoped by the caller (Authorization: Bearer alice|bob) and the
// mutation's field, kept -ttl long. GET /effects?key=K says how many
// charges key K executed (GET /effects: how many in all): idemcheck's
// oracle.
//
// paymentCreate is the same charge with its key as an input field,
// input: {idempotencyKey: "…"} (Shopify's subscriptionBillingAttemptCreate
// form), required by the schema, its idempotency errors userErrors
// entries (payment.go). POST /v1/charges is the same charge over REST
// with the key in the JSON body, under the Agentic Commerce Protocol's
// statuses (rest.go).
//
//	go run ./examples/gqlshop -addr 127.0.0.1:8090 -ttl 3s
//
// GQLSHOP_DEFECT=name starts a broken build instead (defects.go);
// idemcheck.yaml (GraphQL, the directive), idemcheck-input.yaml (GraphQL,
// the input field) and idemcheck-rest.yaml (json-body, preset acp)
// describe the API to idemcheck, and idemcheck_test.go
// proves each build gets the verdict it deserves.
//
// It imports nothing of idemcheck's (internal/archtest), only a GraphQL
// parser, so that a pass says something about idemcheck's GraphQL
// carrier rather than about shared code.
package main

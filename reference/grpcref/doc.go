// Package grpcref is the reference gRPC payments service (idemcheck serve
// --grpc): idemcheck.reference.v1.PaymentService, whose CreatePayment
// carries its key as AIP-155's string request_id and CreateRefund as
// AEP-155's IdempotencyKey {key, first_sent}; either takes the
// x-idempotency-key metadata when its field is empty. It keeps its
// records in the same reference.Store as the HTTP reference (memory,
// PostgreSQL, Redis) and fingerprints a request as the HTTP reference
// fingerprints a JSON body: the request message's protojson form, less
// its key, in canonical JSON (reference.FingerprintJSON).
//
// A duplicate gets the stored answer (AIP-155: "the response for the
// previously successful request"); a reused key with another message
// INVALID_ARGUMENT; a duplicate while the first runs ABORTED; a missing
// key INVALID_ARGUMENT (the reference requires one, as its HTTP twin
// does, though AIP-155 lets it be optional). Server reflection (v1 and
// v1alpha) is on. The defects with a gRPC form (Supports) can be switched
// on as in the HTTP reference. With Options.Events each execution puts a
// payment.created (refund.created) event in the store's outbox with its
// outcome (events.go), for the HTTP reference's relay to publish.
//
// Like every reference package it imports nothing of idemcheck's outside
// reference/.
package grpcref

//go:generate protoc -I paymentsv1 -I /usr/include --go_out=paymentsv1 --go_opt=paths=source_relative --go-grpc_out=paymentsv1 --go-grpc_opt=paths=source_relative paymentsv1/payments.proto

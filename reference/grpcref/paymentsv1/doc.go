// Package paymentsv1 is the Go code protoc generates from payments.proto
// (go generate in reference/grpcref): the messages and the service stubs
// of idemcheck.reference.v1.PaymentService. Nothing in it is written by
// hand but this comment.
//
// It imports only the protobuf and gRPC runtimes; nothing of idemcheck's.
package paymentsv1

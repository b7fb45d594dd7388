// Package shopv1 is the Go code protoc generates from checkout.proto
// (go generate in examples/grpcshop): the messages and the service stubs
// of shop.v1.CheckoutService. Nothing in it is written by hand but this
// comment.
//
// It imports only the protobuf and gRPC runtimes; nothing of idemcheck's.
package shopv1

// Package expiry holds the one time rule every face judges a key's
// lifetime by: the conformance cases, the chaos checker and the load
// checker.
//
// It imports nothing of idemcheck's and must stay so, since the chaos
// package (a leaf the engine imports) uses it too.
package expiry

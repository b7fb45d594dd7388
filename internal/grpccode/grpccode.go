package grpccode

import "strconv"

// codes are the gRPC status codes by number, each with its HTTP status.
var codes = [...]struct {
	name string
	http int
}{
	{"OK", 200}, {"CANCELLED", 499}, {"UNKNOWN", 500}, {"INVALID_ARGUMENT", 400},
	{"DEADLINE_EXCEEDED", 504}, {"NOT_FOUND", 404}, {"ALREADY_EXISTS", 409},
	{"PERMISSION_DENIED", 403}, {"RESOURCE_EXHAUSTED", 429}, {"FAILED_PRECONDITION", 400},
	{"ABORTED", 409}, {"OUT_OF_RANGE", 400}, {"UNIMPLEMENTED", 501}, {"INTERNAL", 500},
	{"UNAVAILABLE", 503}, {"DATA_LOSS", 500}, {"UNAUTHENTICATED", 401},
}

// Count is the number of codes: 0 to Count-1 are known.
const Count = len(codes)

// Name is the name of code c (ABORTED), or its number.
func Name(c int) string {
	if c >= 0 && c < len(codes) {
		return codes[c].name
	}
	return strconv.Itoa(c)
}

// HTTPStatus is the HTTP status of code c (500 for a code google.rpc.Code
// does not know).
func HTTPStatus(c int) int {
	if c >= 0 && c < len(codes) {
		return codes[c].http
	}
	return 500
}

// ByName is the code named name (ABORTED).
func ByName(name string) (int, bool) {
	for c, k := range codes {
		if k.name == name {
			return c, true
		}
	}
	return 0, false
}

// Names are the names of the codes google.rpc.Code maps to HTTP status
// s, in code order (none for a status no code maps to).
func Names(s int) []string {
	var out []string
	for _, k := range codes {
		if k.http == s {
			out = append(out, k.name)
		}
	}
	return out
}

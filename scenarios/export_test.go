package scenarios

// OracleAsked reports whether r's case asked the oracle; a test checks
// that every such case declares it (the mode idemcheck list shows).
func OracleAsked(r Result) bool { return r.oracleAsked }

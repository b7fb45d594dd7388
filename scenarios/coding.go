package scenarios

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"

	"github.com/idemcheck/idemcheck/wire"
)

// Content coding (RFC 9110 §8.4, §12.5.3): a response may be coded only
// in a coding its request accepted; identity is always acceptable unless
// refused. idemcheck names the codings it accepts itself (its transports
// never add Accept-Encoding nor decode), so what it reads is what was sent.

// decodedFor is r's body decoded, for a request that accepted accept
// ("gzip" or "identity"), and the coding r came in; problem says why r is
// not an answer that request accepted (a coding it did not ask for, a
// body that does not decode).
func decodedFor(r wire.Resp, accept string) (body []byte, coding, problem string) {
	coding = strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding")))
	switch coding {
	case "", "identity":
		return r.Body, "identity", ""
	case "gzip", "x-gzip":
		if accept != "gzip" {
			return nil, coding, fmt.Sprintf("Content-Encoding: %s to a request that accepted only %s", coding, accept)
		}
		zr, err := gzip.NewReader(bytes.NewReader(r.Body))
		if err != nil {
			return nil, coding, fmt.Sprintf("Content-Encoding: %s, but the body is not gzip: %v", coding, err)
		}
		defer zr.Close()
		b, err := io.ReadAll(io.LimitReader(zr, wire.MaxBody))
		if err != nil {
			return nil, coding, fmt.Sprintf("Content-Encoding: %s, but the body does not decode: %v", coding, err)
		}
		return b, coding, ""
	}
	return nil, coding, fmt.Sprintf("Content-Encoding: %s to a request that accepted only %s", coding, accept)
}

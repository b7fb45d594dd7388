package rawspelling

import (
	"net/http"
	"strings"
)

// SetVerbatim sets the field name in h to value under exactly this
// spelling, after removing it under every other spelling, so that a
// request sent with h over HTTP/1.1 carries the name as given.
//
// net/http's Transport writes a request's header map keys as they are:
// only Header.Set, Add and Get canonicalise a name, so a key put in the map
// directly (h["idempotency-key"]) goes on the wire byte for byte
// (TestTransportWritesNamesVerbatim checks it on a raw listener). Over
// HTTP/2 every name is sent in lower case whatever the map holds, as the
// protocol requires (RFC 9113 8.2.1).
func SetVerbatim(h http.Header, name, value string) {
	for k := range h {
		if strings.EqualFold(k, name) {
			delete(h, k)
		}
	}
	h[name] = []string{value}
}

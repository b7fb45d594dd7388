package demotest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck/reference/demo"
)

// PKI is a throwaway CA with a server certificate for localhost,
// 127.0.0.1 and ::1 and a client certificate, as PEM files in a test's
// temporary directory.
type PKI struct {
	CAFile, ClientCert, ClientKey string
	pool                          *x509.CertPool
	server                        tls.Certificate
}

// NewPKI creates the CA and both certificates.
func NewPKI(t testing.TB) *PKI {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "idemcheck test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	p := &PKI{CAFile: filepath.Join(dir, "ca.pem"), ClientCert: filepath.Join(dir, "client.pem"),
		ClientKey: filepath.Join(dir, "client-key.pem"), pool: x509.NewCertPool()}
	p.pool.AddCert(ca)
	writePEM(t, p.CAFile, "CERTIFICATE", caDER)
	leaf := func(serial int64, usage x509.ExtKeyUsage, dns []string, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		k := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: "idemcheck test"},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
			DNSNames: dns, IPAddresses: ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	sDER, sKey := leaf(2, x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback})
	p.server = tls.Certificate{Certificate: [][]byte{sDER}, PrivateKey: sKey}
	cDER, cKey := leaf(3, x509.ExtKeyUsageClientAuth, nil, nil)
	writePEM(t, p.ClientCert, "CERTIFICATE", cDER)
	kb, err := x509.MarshalECPrivateKey(cKey)
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, p.ClientKey, "EC PRIVATE KEY", kb)
	return p
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

// ServerFiles writes the server certificate and its key as PEM files in a
// temporary directory of t, for a server that loads them itself.
func (p *PKI) ServerFiles(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "server.pem"), filepath.Join(dir, "server-key.pem")
	writePEM(t, certFile, "CERTIFICATE", p.server.Certificate[0])
	kb, err := x509.MarshalECPrivateKey(p.server.PrivateKey.(*ecdsa.PrivateKey))
	if err != nil {
		t.Fatal(err)
	}
	writePEM(t, keyFile, "EC PRIVATE KEY", kb)
	return certFile, keyFile
}

// ClientTLS is a client configuration that trusts p's CA.
func (p *PKI) ClientTLS() *tls.Config {
	return &tls.Config{RootCAs: p.pool, MinVersion: tls.VersionTLS12}
}

// ServeTLS serves h over TLS (HTTP/2 offered) on 127.0.0.1 with p's server
// certificate and returns https://localhost:PORT; with clientAuth the
// server demands a client certificate signed by p's CA. Closed when t ends.
func (p *PKI) ServeTLS(t testing.TB, h http.Handler, clientAuth bool) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(h)
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{p.server}}
	if clientAuth {
		srv.TLS.ClientAuth, srv.TLS.ClientCAs = tls.RequireAndVerifyClientCert, p.pool
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return "https://localhost:" + port
}

// ServeOn serves h on addr (e.g. "127.0.0.2:0", another loopback address)
// and returns its base URL; closed when t ends.
func ServeOn(t testing.TB, h http.Handler, addr string) string {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen %s: %v", addr, err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL
}

// App returns the demo app with o, closed when t ends.
func App(t testing.TB, o demo.Options) http.Handler {
	t.Helper()
	app, err := demo.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = app.Close() })
	return app
}

// KeyIssuer wraps an app with POST /keys, which issues a fresh key as
// {"data":{"key":"..."}}, and refuses (400) any /v1/ request carrying a
// key it did not issue, like an API with server-issued keys.
type KeyIssuer struct {
	app  http.Handler
	Fail atomic.Bool // /keys answers 503

	mu     sync.Mutex
	issued map[string]bool
	bad    int
}

// NewKeyIssuer wraps app.
func NewKeyIssuer(app http.Handler) *KeyIssuer {
	return &KeyIssuer{app: app, issued: map[string]bool{}}
}

// Counts returns how many keys were issued and how many requests came
// with a key that was not.
func (k *KeyIssuer) Counts() (issued, bad int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.issued), k.bad
}

func (k *KeyIssuer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/keys" {
		if k.Fail.Load() {
			http.Error(w, "key service down", http.StatusServiceUnavailable)
			return
		}
		key := uuid.NewString()
		k.mu.Lock()
		k.issued[key] = true
		k.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"data":{"key":%q}}`, key)
		return
	}
	if v := r.Header.Get("Idempotency-Key"); v != "" && strings.HasPrefix(r.URL.Path, "/v1/") && r.Method != http.MethodGet {
		k.mu.Lock()
		ok := k.issued[strings.Trim(v, `"`)]
		if !ok {
			k.bad++
		}
		k.mu.Unlock()
		if !ok {
			http.Error(w, "unknown idempotency key", http.StatusBadRequest)
			return
		}
	}
	k.app.ServeHTTP(w, r)
}

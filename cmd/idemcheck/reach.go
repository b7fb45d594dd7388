package main

import (
	"github.com/spf13/pflag"

	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/target"
)

// tlsFlags registers the flags that reach an https target (run, list,
// load, chaos, proxy).
func tlsFlags(fl *pflag.FlagSet, o *target.TLS) {
	fl.StringVar(&o.CACert, "ca-cert", "", "PEM file of the CA(s) that sign the target's certificate (default: the system roots)")
	fl.BoolVar(&o.InsecureSkipVerify, "insecure-skip-verify", false, "do not verify the target's TLS certificate (test deployments only)")
	fl.StringVar(&o.ClientCert, "client-cert", "", "PEM client certificate for mutual TLS (with --client-key)")
	fl.StringVar(&o.ClientKey, "client-key", "", "PEM private key of --client-cert")
}

// reachFlags registers --base-url, the TLS flags, --http2 and the key
// flags a scenarios.Selection understands.
func reachFlags(fl *pflag.FlagSet, sel *scenarios.Selection) {
	fl.StringVar(&sel.BaseURL, "base-url", "", "replace the config's base_url (one config, many environments), any http(s) URL")
	tlsFlags(fl, &sel.TLS)
	fl.BoolVar(&sel.HTTP2, "http2", false, "speak HTTP/2 only: h2 by ALPN over https, h2c with prior knowledge over http (the config's http2: true)")
	fl.BoolVar(&sel.HashKeys, "hash-keys", false, "client-generated keys are business-id hashes: SHA-256(seed:n) (a config's key_source still wins)")
	fl.StringVar(&sel.KeySeed, "key-seed", "", "seed for --hash-keys (default: random, printed in the report)")
}

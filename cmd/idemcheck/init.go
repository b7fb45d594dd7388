package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/initconfig"
)

type initFlags struct {
	openapi    string
	noValidate bool
	operations []string
	probe      string
	method     string
	body       string
	headers    []string
	query      []string
	keyHeader  string
	// --grpc and its flags.
	grpc        string
	protoset    string
	rpcs        []string
	metadata    []string
	keyMetadata string
	// --graphql-schema, --graphql-url, --mutation; --mcp (with --header).
	graphqlSchema string
	graphqlURL    string
	mutations     []string
	mcp           string
	out           string
	force         bool
	timeout       time.Duration
	tls           apispec.TLS
	http2         bool
}

func init() {
	var f initFlags
	cmd := &cobra.Command{
		Use:   "init (--openapi FILE|URL | --probe URL --body JSON | --grpc grpc://HOST:PORT | --graphql-schema FILE | --mcp URL)",
		Short: "Write a commented config from an OpenAPI document, a live endpoint or a gRPC service's descriptors",
		Long: "Write an idemcheck config for an API. From an OpenAPI 3.0 or 3.1 document (YAML or JSON):\n" +
			"the operations declaring the key header (else every POST and PATCH), bodies from examples or\n" +
			"generated from the schemas, id_pointer, principals from the security schemes (secrets in\n" +
			"${IDEMCHECK_TOKEN_1} and ${IDEMCHECK_TOKEN_2}), TTL, mutations. From a live endpoint (--probe):\n" +
			"seven requests (a quoted and a bare key, a replay, a key that is not a UUID, no key, a changed\n" +
			"body) show the key syntax, the id pointer, the replay marker and the statuses. From a gRPC service\n" +
			"(--grpc): its descriptors, by server reflection or --protoset, give the methods whose request carries\n" +
			"AIP-155's request_id or AEP-155's {key, first_sent} (or, with --key-metadata, the unary methods not\n" +
			"named like reads), a request skeleton in protojson, id_pointer, a mutation and the preset.\n" +
			"From a GraphQL schema (--graphql-schema: SDL or the introspection answer as JSON): the mutations\n" +
			"carrying a key directive (Shopify's @idempotent) or a key argument or input field, a document and\n" +
			"variables for each. From an MCP server (--mcp): tools/list after the initialize handshake, the tools\n" +
			"taking a key argument (AdCP's idempotency_key) (docs/carriers.md).\n" +
			"Every guess is marked '# guessed:', every gap '# TODO:' (docs/getting-started.md).",
		Example: `  idemcheck init --openapi examples/payments.openapi.yaml -o idemcheck.yaml
  idemcheck init --openapi https://api.example.com/openapi.json --operation createOrder -o orders.yaml
  idemcheck init --probe http://127.0.0.1:8080/v1/charges --body '{"amount":1000,"currency":"usd"}' --header 'Authorization: Bearer alice'
  idemcheck init --grpc grpc://127.0.0.1:50051 --metadata 'authorization: Bearer alice'
  idemcheck init --grpc grpcs://payments.example.com:443 --protoset payments.protoset --rpc acme.payments.v1.PaymentService/CreatePayment
  idemcheck init --graphql-schema admin.graphql --graphql-url https://shop.example.com --mutation refundCreate
  idemcheck init --mcp http://127.0.0.1:8091/mcp --header 'Authorization: Bearer alice'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runInit(cmd, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.openapi, "openapi", "", "OpenAPI 3.0/3.1 document: a file or an http(s) URL")
	fl.BoolVar(&f.noValidate, "no-validate", false, "--openapi: read a document that does not validate (e.g. path conflicts elsewhere) instead of refusing it")
	fl.StringArrayVar(&f.operations, "operation", nil, "operationId to write (default: those declaring the key header, else every POST and PATCH); repeatable")
	fl.StringVar(&f.probe, "probe", "", "absolute URL of a live endpoint to learn from (sends seven requests)")
	fl.StringVar(&f.method, "method", "POST", "--probe: the endpoint's method")
	fl.BoolVar(&f.http2, "http2", false, "--probe: speak HTTP/2 only (h2 by ALPN over https, h2c with prior knowledge over http); the config says http2: true")
	fl.StringVar(&f.body, "body", "", "--probe: a JSON object the endpoint accepts")
	fl.StringArrayVar(&f.headers, "header", nil, "--probe: 'Name: value' sent with every request (credentials are written as ${IDEMCHECK_TOKEN_1}); repeatable")
	fl.StringArrayVar(&f.query, "query", nil, "--probe: 'name=value' of another query, sent under a used key and written as a query mutation; repeatable")
	fl.StringVar(&f.keyHeader, "key-header", "", keyHeaderUsage+" (default Idempotency-Key)")
	fl.StringVar(&f.grpc, "grpc", "", "grpc://HOST:PORT or grpcs://HOST:PORT of a gRPC service to describe (server reflection, v1 else v1alpha)")
	fl.StringVar(&f.protoset, "protoset", "", "--grpc: a descriptor set file (protoc --include_imports --descriptor_set_out) read instead of reflection; nothing is sent")
	fl.StringArrayVar(&f.rpcs, "rpc", nil, "--grpc: package.Service/Method to write (default: those whose request carries a key); repeatable")
	fl.StringArrayVar(&f.metadata, "metadata", nil, "--grpc: 'name: value' sent with every call (credentials are written as ${IDEMCHECK_TOKEN_1}); repeatable")
	fl.StringVar(&f.keyMetadata, "key-metadata", "", "--grpc: the metadata key carrying the idempotency key (x-idempotency-key), for messages without a key field")
	fl.StringVar(&f.graphqlSchema, "graphql-schema", "", "a GraphQL schema file: SDL, or the introspection answer as JSON (nothing is sent)")
	fl.StringVar(&f.graphqlURL, "graphql-url", "", "--graphql-schema: the API's origin (https://shop.example.com)")
	fl.StringArrayVar(&f.mutations, "mutation", nil, "--graphql-schema: a mutation to write (default: those carrying a key); repeatable")
	fl.StringVar(&f.mcp, "mcp", "", "an MCP server's streamable HTTP endpoint (http://HOST:PORT/mcp): its tools/list (--header for credentials)")
	fl.StringVarP(&f.out, "output", "o", "idemcheck.yaml", "file to write ('-': stdout)")
	fl.BoolVar(&f.force, "force", false, "overwrite the output file")
	addTimeoutFlag(fl, &f.timeout, "the --probe requests and a document URL's download; the TLS flags apply to both")
	tlsFlags(fl, &f.tls)
	rootCmd.AddCommand(cmd)
}

func runInit(cmd *cobra.Command, f initFlags) error {
	given := 0
	for _, v := range []string{f.openapi, f.probe, f.grpc, f.graphqlSchema, f.mcp} {
		if v != "" {
			given++
		}
	}
	if given != 1 {
		return usageErrorf("init: give exactly one of --openapi, --probe, --grpc, --graphql-schema and --mcp")
	}
	if f.graphqlSchema == "" && (f.graphqlURL != "" || len(f.mutations) > 0) {
		return usageErrorf("init: --graphql-url and --mutation go with --graphql-schema")
	}
	if (f.graphqlSchema != "" || f.mcp != "") && (cmd.Flags().Changed("body") || len(f.query) > 0 || cmd.Flags().Changed("method") || f.keyHeader != "" || f.noValidate) {
		return usageErrorf("init --graphql-schema, --mcp: --body, --query, --method, --key-header and --no-validate go with --probe or --openapi")
	}
	if f.graphqlSchema != "" && len(f.headers) > 0 {
		return usageErrorf("init --graphql-schema: --header goes with --mcp or --probe (the schema is read, nothing is sent)")
	}
	if f.openapi != "" && (cmd.Flags().Changed("body") || len(f.headers) > 0 || len(f.query) > 0 || cmd.Flags().Changed("method")) {
		return usageErrorf("init: --body, --header, --query and --method go with --probe")
	}
	if f.probe == "" && f.http2 {
		return usageErrorf("init: --http2 goes with --probe")
	}
	if f.openapi == "" && len(f.operations) > 0 {
		return usageErrorf("init: --operation goes with --openapi")
	}
	if f.grpc == "" && (f.protoset != "" || len(f.rpcs) > 0 || len(f.metadata) > 0 || f.keyMetadata != "") {
		return usageErrorf("init: --protoset, --rpc, --metadata and --key-metadata go with --grpc")
	}
	if f.grpc != "" && (cmd.Flags().Changed("body") || len(f.headers) > 0 || len(f.query) > 0 || cmd.Flags().Changed("method") || f.keyHeader != "" || f.noValidate) {
		return usageErrorf("init --grpc: --body, --header, --query, --method, --key-header and --no-validate go with --probe or --openapi (gRPC: --metadata, --key-metadata)")
	}
	if err := apispec.NotForRPCs(f.probe, "init --probe "+f.probe+": a gRPC service is described by init --grpc "+f.probe+" (its descriptors, not a probe)"); err != nil {
		return usageErrorf("%v", err)
	}
	if f.timeout <= 0 {
		return usageErrorf("--timeout %s: must be positive", f.timeout)
	}
	if f.out != "-" && !f.force {
		if _, err := os.Stat(f.out); err == nil {
			return usageErrorf("-o %s: the file exists (--force overwrites it)", f.out)
		}
	}
	var (
		out []byte
		err error
	)
	switch {
	case f.graphqlSchema != "":
		out, err = initconfig.FromGraphQL(initconfig.GraphQLOptions{Schema: f.graphqlSchema, URL: f.graphqlURL, Mutations: f.mutations,
			Command: "idemcheck init --graphql-schema " + f.graphqlSchema})
	case f.mcp != "":
		out, err = initconfig.FromMCP(cmd.Context(), initconfig.MCPOptions{URL: f.mcp, Headers: f.headers, Timeout: f.timeout,
			Command: "idemcheck init --mcp " + f.mcp})
	case f.grpc != "":
		out, err = initconfig.FromGRPC(cmd.Context(), initconfig.GRPCOptions{
			URL: f.grpc, Protoset: f.protoset, RPCs: f.rpcs, Metadata: f.metadata, KeyMetadata: f.keyMetadata,
			Timeout: f.timeout, TLS: f.tls, Command: "idemcheck init --grpc " + f.grpc,
		})
	case f.openapi != "":
		out, err = initconfig.FromOpenAPI(cmd.Context(), initconfig.OpenAPIOptions{
			Source: f.openapi, Operations: f.operations, KeyHeader: f.keyHeader, Timeout: f.timeout, TLS: f.tls, NoValidate: f.noValidate,
			Command: "idemcheck init --openapi " + f.openapi,
		})
	default:
		out, err = initconfig.Probe(cmd.Context(), initconfig.ProbeOptions{
			URL: f.probe, Method: f.method, Body: f.body, Headers: f.headers, Query: f.query, KeyHeader: f.keyHeader,
			Timeout: f.timeout, TLS: f.tls, HTTP2: f.http2, Command: "idemcheck init --probe " + f.probe + " --method " + strings.ToUpper(f.method),
		})
	}
	if errors.Is(err, apispec.ErrUnreachable) {
		return withCode(exitUnreachable, err)
	}
	if err != nil {
		return withCode(exitUsage, err)
	}
	if f.out == "-" {
		_, err = cmd.OutOrStdout().Write(out)
		return err
	}
	if err := os.WriteFile(f.out, out, 0o644); err != nil {
		return usageErrorf("-o %s: %v", f.out, err)
	}
	return summarize(cmd.ErrOrStderr(), f.out, out)
}

// summarize tells what was written and what is left to do.
func summarize(w io.Writer, path string, out []byte) error {
	todos := bytes.Count(out, []byte("TODO:"))
	guesses := bytes.Count(out, []byte("guessed:"))
	fmt.Fprintf(w, "init: wrote %s: %d guesses to check, %d TODOs to fill\n", path, guesses, todos)
	var vars []string
	for _, v := range []string{"IDEMCHECK_TOKEN_1", "IDEMCHECK_TOKEN_2"} {
		if bytes.Contains(out, []byte("${"+v+"}")) {
			vars = append(vars, v)
		}
	}
	if len(vars) > 0 {
		fmt.Fprintf(w, "init: export %s (two users' secrets), then:\n", strings.Join(vars, " and "))
	}
	_, err := fmt.Fprintf(w, "  idemcheck list --config %s\n  idemcheck run --config %s\n", path, path)
	return err
}

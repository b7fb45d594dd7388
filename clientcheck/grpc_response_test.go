package clientcheck_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/idemcheck/idemcheck/apispec"
	"github.com/idemcheck/idemcheck/clientcheck"
)

// ledgerMethod is testdata/ledger.proto's one method, read from the
// protoset as a client without generated code reads it.
func ledgerMethod(t *testing.T) protoreflect.MethodDescriptor {
	t.Helper()
	b, err := os.ReadFile("testdata/ledger.protoset")
	if err != nil {
		t.Fatal(err)
	}
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(b, &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	d, err := files.FindDescriptorByName("ledger.v1.LedgerService.CreateTransfer")
	if err != nil {
		t.Fatal(err)
	}
	return d.(protoreflect.MethodDescriptor)
}

// ledgerClient calls CreateTransfer with grpc-go on dynamic messages, its
// request_id minted once per call, and accepts only the Transfer the
// config's response: describes (settled, 12 EUR, on ledger main): a
// stand-in that answered anything else fails its calls. id says where it
// reads the created id: the name, or the receipt's id.
type ledgerClient struct {
	method protoreflect.MethodDescriptor
	id     string
	// freshKeyPerAttempt is the defect: a new request_id per attempt.
	freshKeyPerAttempt bool
}

func (c ledgerClient) call(ctx context.Context, base string) (string, error) {
	conn, err := dial(base, false)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	full := "/" + string(c.method.Parent().FullName()) + "/" + string(c.method.Name())
	key := rand.Text()
	return retryCall(ctx, false, new(atomic.Int64), func(actx context.Context) (string, error) {
		if c.freshKeyPerAttempt {
			key = rand.Text()
		}
		req := dynamicpb.NewMessage(c.method.Input())
		body := fmt.Sprintf(`{"request_id": %q, "from_account": "acc_1", "to_account": "acc_2", "amount_minor": 1200, "currency": "EUR"}`, key)
		if err := protojson.Unmarshal([]byte(body), req); err != nil {
			return "", err
		}
		resp := dynamicpb.NewMessage(c.method.Output())
		if err := conn.Invoke(actx, full, req, resp); err != nil {
			return "", err
		}
		got, _ := protojson.MarshalOptions{UseProtoNames: true}.Marshal(resp)
		var tr struct {
			Name    string                               `json:"name"`
			State   string                               `json:"state"`
			Amount  struct{ CurrencyCode, Units string } `json:"amount"`
			Receipt struct {
				ReceiptID string `json:"receipt_id"`
				Ledger    string `json:"ledger"`
			} `json:"receipt"`
			SettleTime string `json:"settle_time"`
		}
		if err := json.Unmarshal(got, &tr); err != nil {
			return "", err
		}
		if tr.State != "SETTLED" || tr.Amount.Units != "12" || tr.Receipt.Ledger != "main" || tr.SettleTime != "2026-01-02T03:04:05Z" {
			return "", fmt.Errorf("the answer is not the configured Transfer: %s", got)
		}
		if c.id == "receipt" {
			return tr.Receipt.ReceiptID, nil
		}
		if !strings.HasPrefix(tr.Name, "transfers/id_") {
			return "", fmt.Errorf("name %q: not transfers/{id} with a fresh id", tr.Name)
		}
		return tr.Name, nil
	})
}

func ledgerConfig(t *testing.T) (*apispec.Target, *apispec.Profile) {
	t.Helper()
	tgt, profile, err := apispec.LoadConfig("testdata/ledger.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return tgt, profile
}

// A service from a protoset (testdata/ledger.protoset, no Go code of it
// anywhere) answers with its configured response message, a fresh id
// per execution in the field id_pointer names (into the name's "{id}",
// or a nested field by JSON name): a grpc-go client that accepts only
// that message passes every MUST, and one that mints a request_id per
// attempt fails the retry cases.
func TestGRPCProtosetResponse(t *testing.T) {
	method := ledgerMethod(t)
	for _, tc := range []struct {
		name    string
		pointer string
		client  ledgerClient
		run     []string
		fail    []string
	}{
		{"name-template", "", ledgerClient{method: method}, nil, nil},
		{"nested-json-name", "/receipt/receiptId", ledgerClient{method: method, id: "receipt"}, []string{"lost/one-execution", "retry/lost-answer", "key/unique-sequential"}, nil},
		{"fresh-key-per-attempt", "", ledgerClient{method: method, freshKeyPerAttempt: true}, []string{"retry/lost-answer", "retry/after-503", "lost/one-execution"},
			[]string{"retry/lost-answer", "retry/after-503", "lost/one-execution"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, profile := ledgerConfig(t)
			if tc.pointer != "" {
				tgt.Operations[0].IDPointer = tc.pointer
			}
			rep, err := clientcheck.Check(t.Context(), clientcheck.Options{Target: tgt, Profile: profile, Driver: clientcheck.Func(tc.client.call),
				Subject: "ledger-client", Run: tc.run, Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			failsExactly(t, rep, tc.fail)
			answered := false
			for _, r := range rep.Results {
				for _, x := range r.Exchanges {
					answered = answered || x.Response != nil && strings.Contains(string(x.Response.Body), `"SETTLED"`)
				}
			}
			if !answered {
				t.Error("no attempt's answer in the report shows the configured Transfer")
			}
		})
	}
}

// What the stand-in cannot answer with is refused before any client
// runs (exit 2), in one line naming the field: a configured response
// that is no response message, an id_pointer to no string field, a
// response for the reference's own service.
func TestGRPCResponseSetupErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(t *testing.T, tgt *apispec.Target)
		says string
	}{
		{"unknown-field", func(_ *testing.T, tgt *apispec.Target) {
			tgt.Operations[0].Response.Body = []byte(`{"name": "transfers/{id}", "status": "SETTLED"}`)
		}, `operations[0].response.body: unknown field "status" (want a ledger.v1.Transfer in protojson)`},
		{"wrong-type", func(_ *testing.T, tgt *apispec.Target) {
			tgt.Operations[0].Response.Body = []byte(`{"amount": {"units": "twelve"}}`)
		}, `operations[0].response.body: invalid value for int64 field units: "twelve"`},
		{"id-an-enum", func(_ *testing.T, tgt *apispec.Target) { tgt.Operations[0].IDPointer = "/state" },
			`operations[0].id_pointer "/state": the field ledger.v1.Transfer.state (enum) is not a string`},
		{"id-too-deep", func(_ *testing.T, tgt *apispec.Target) { tgt.Operations[0].IDPointer = "/name/id" },
			`operations[0].id_pointer "/name/id": the field ledger.v1.Transfer.name (string) is not a message`},
		{"id-no-field", func(_ *testing.T, tgt *apispec.Target) { tgt.Operations[0].IDPointer = "/receipt/number" },
			`operations[0].id_pointer "/receipt/number": ledger.v1.Receipt has no field number`},
		{"reference-service", func(t *testing.T, tgt *apispec.Target) {
			ref, _, err := apispec.LoadConfig("../examples/grpc.yaml")
			if err != nil {
				t.Fatal(err)
			}
			ref.Operations[0].Response = tgt.Operations[0].Response
			*tgt = *ref
		}, "operations[0].response: the reference's PaymentService answers its own Payment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, profile := ledgerConfig(t)
			tc.edit(t, tgt)
			never := clientcheck.Func(func(context.Context, string) (string, error) { t.Error("the client ran"); return "", nil })
			_, err := clientcheck.Check(t.Context(), clientcheck.Options{Target: tgt, Profile: profile, Driver: never, Run: []string{"key/present"}})
			var se *clientcheck.SetupError
			if !errors.As(err, &se) || se.Code != 2 || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
				t.Fatalf("err %v, want a one-line setup error (2) saying %q", err, tc.says)
			}
		})
	}
}

// Both stand-ins listen on loopback only: every base URL a client is
// given names 127.0.0.1.
func TestStandInLoopback(t *testing.T) {
	ledger, ledgerProfile := ledgerConfig(t)
	method := ledgerMethod(t)
	for _, tc := range []struct {
		name    string
		target  *apispec.Target
		profile *apispec.Profile
		call    func(ctx context.Context, base string) (string, error)
	}{
		{"http", nil, nil, func(ctx context.Context, base string) (string, error) {
			_, err := postCharge(ctx, base, rand.Text())
			return "id", err
		}},
		{"grpc", ledger, ledgerProfile, ledgerClient{method: method}.call},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var bases []string
			var mu sync.Mutex
			record := func(ctx context.Context, base string) (string, error) {
				mu.Lock()
				bases = append(bases, base)
				mu.Unlock()
				return tc.call(ctx, base)
			}
			if _, err := clientcheck.Check(t.Context(), clientcheck.Options{Target: tc.target, Profile: tc.profile, Driver: clientcheck.Func(record),
				Run: []string{"key/unique-*"}}); err != nil {
				t.Fatal(err)
			}
			for _, b := range bases {
				u, err := url.Parse(b)
				if err != nil || !net.ParseIP(u.Hostname()).IsLoopback() {
					t.Errorf("base URL %q: not on loopback", b)
				}
			}
			if len(bases) == 0 {
				t.Error("the client was never called")
			}
		})
	}
}

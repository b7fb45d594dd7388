package pgstore_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck/internal/testenv"
	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/pgstore"
	"github.com/idemcheck/idemcheck/reference/storetest"
)

func TestMain(m *testing.M) {
	testenv.Main(m, func() {
		if binDir != "" {
			os.RemoveAll(binDir)
		}
	})
}

// open opens a store on a fresh schema, closed when the test ends.
func open(t testing.TB, opts ...pgstore.Option) *pgstore.Store {
	t.Helper()
	dsn := testenv.RequirePostgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := pgstore.Open(ctx, dsn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) reference.Store { return open(t) })
}

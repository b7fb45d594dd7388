package storetest_test

import (
	"testing"

	"github.com/idemcheck/idemcheck/reference"
	"github.com/idemcheck/idemcheck/reference/memstore"
	"github.com/idemcheck/idemcheck/reference/storetest"
)

func TestMemstore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) reference.Store {
		s := memstore.New()
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// Package storetest is the contract every reference.Store must meet, run
// like testing/slogtest: storetest.Run(t, newStore) runs a table of cases,
// each named after the rule it checks and explaining it, against fresh
// stores from newStore. Timing cases use short real leases and TTLs and
// poll with a bounded deadline, so they do not depend on the machine's speed.
//
// Of idemcheck's packages it imports only reference; its own tests run the
// contract against every store.
package storetest

package apispec

import (
	"strings"
	"testing"
)

// Source reads each DSN kind and the password that redaction hides,
// without a driver; a DSN of no known kind is one line naming the kinds.
func TestSQLSource(t *testing.T) {
	for _, c := range []struct {
		dsn      string
		kind     SQLKind
		driver   string
		password string
		err      string
	}{
		{dsn: "postgres://app:s3cret@db:5432/shop", kind: SQLPostgres, driver: "postgres://app:s3cret@db:5432/shop", password: "s3cret"},
		{dsn: "postgresql://app@db/shop?password=q%20pw", kind: SQLPostgres, driver: "postgresql://app@db/shop?password=q%20pw", password: "q pw"},
		{dsn: `host=db password='a \' b' user=app`, kind: SQLPostgres, driver: `host=db password='a \' b' user=app`, password: "a ' b"},
		{dsn: "mysql://app:p@ss:w@tcp(db:3306)/shop?parseTime=true", kind: SQLMySQL, driver: "app:p@ss:w@tcp(db:3306)/shop?parseTime=true", password: "p@ss:w"},
		{dsn: "mysql://root@tcp(127.0.0.1:3306)/", kind: SQLMySQL, driver: "root@tcp(127.0.0.1:3306)/"},
		{dsn: "sqlite:///var/lib/app/app.db", kind: SQLSQLite, driver: "/var/lib/app/app.db"},
		{dsn: "sqlite:app.db", kind: SQLSQLite, driver: "app.db"},
		{dsn: "file:data/app.db?mode=rw", kind: SQLSQLite, driver: "data/app.db"},
		{dsn: "mysql://pw@@", err: "not a MySQL DSN"},
		{dsn: "sqlite::memory:", err: "in-memory"},
		{dsn: "postgres:///", err: "not a PostgreSQL URL"},
		{dsn: "redis://h:6379", err: "not a DSN the SQL oracle reads"},
		{dsn: "", err: "want a database"},
	} {
		got, err := (&SQLOracle{DSN: c.dsn}).Source()
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Source(%q) = %+v, %v; want an error with %q", c.dsn, got, err, c.err)
			}
			continue
		}
		if err != nil || got != (SQLSource{Kind: c.kind, DSN: c.driver, Password: c.password}) {
			t.Errorf("Source(%q) = %+v, %v; want %s %q password %q", c.dsn, got, err, c.kind, c.driver, c.password)
		}
	}
}

package apispec

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// SQLOracle counts executions in the API's own database: Query returns
// one integer, "$1" in it is the key. The key is the bare key, as the API
// stores it: for key_syntax sf-string the header carries "\"k\"" and $1 is
// k (the quotes removed). A query without $1 is a global count (the run
// goes serial).
//
// DSN kinds: postgres://… or postgresql://… or "host=… user=…"
// (PostgreSQL); mysql://user:pass@tcp(host:3306)/db (MySQL or MariaDB,
// go-sql-driver/mysql's DSN after the mysql:// prefix); sqlite:PATH or
// file:PATH (a SQLite database file, opened read-only). For MySQL and
// SQLite each $1 becomes a ? placeholder. This package only reads the
// DSN; evidence opens it with the driver.
type SQLOracle struct {
	// DSN is never shown: reports name it by its ${NAME} or redact its
	// password.
	DSN   string `yaml:"dsn" json:"-"`
	Query string `yaml:"query" json:"query"`
}

// SQLKind is the database a DSN names.
type SQLKind string

// The databases the SQL oracle reads.
const (
	SQLPostgres SQLKind = "postgres"
	SQLMySQL    SQLKind = "mysql"
	SQLSQLite   SQLKind = "sqlite"
)

// DSN prefixes in the config.
const (
	MySQLScheme  = "mysql://"
	SQLiteScheme = "sqlite:"
	fileScheme   = "file:"
)

// SQLSource is a parsed DSN: the database kind, the DSN in its driver's
// own form, and the password that errors must not show.
type SQLSource struct {
	Kind     SQLKind
	DSN      string
	Password string
}

func (o *SQLOracle) perKey() bool {
	_, n, _ := Placeholders(o.Query, "$1")
	return n > 0
}

func (o *SQLOracle) validate(at string) error {
	if strings.TrimSpace(o.Query) == "" {
		return fmt.Errorf("%s.query: want a query returning one integer (e.g. select count(*) from orders where idempotency_key = $1)", at)
	}
	if _, _, err := Placeholders(o.Query, "$1"); err != nil {
		return fmt.Errorf("%s.query: %v", at, err)
	}
	if _, err := o.Source(); err != nil {
		return fmt.Errorf("%s.dsn: %v", at, err)
	}
	return nil
}

// Source reads the DSN's kind, driver form and password. It checks the
// DSN's shape only: the driver parses it in full when evidence opens it.
func (o *SQLOracle) Source() (SQLSource, error) {
	switch dsn := o.DSN; {
	case dsn == "":
		return SQLSource{}, errors.New("want a database: postgres://user:pass@host:5432/db, host=… user=… (PostgreSQL), mysql://user:pass@tcp(host:3306)/db or sqlite:/path/to/app.db")
	case strings.HasPrefix(dsn, MySQLScheme):
		my := strings.TrimPrefix(dsn, MySQLScheme)
		// [user[:password]@][net[(addr)]]/dbname[?params]: the database
		// follows the last slash, the account precedes the last @ before it.
		slash := strings.LastIndexByte(my, '/')
		if slash < 0 {
			return SQLSource{}, errors.New("not a MySQL DSN (want mysql://user:pass@tcp(host:3306)/db)")
		}
		src := SQLSource{Kind: SQLMySQL, DSN: my}
		if at := strings.LastIndexByte(my[:slash], '@'); at > 0 {
			if _, pw, ok := strings.Cut(my[:at], ":"); ok {
				src.Password = pw
			}
		}
		return src, nil
	case strings.HasPrefix(dsn, SQLiteScheme), strings.HasPrefix(dsn, fileScheme):
		path := strings.TrimPrefix(strings.TrimPrefix(dsn, SQLiteScheme), fileScheme)
		if strings.HasPrefix(path, "//") { // sqlite:///abs/app.db
			path = path[2:]
		}
		if path, _, _ = strings.Cut(path, "?"); path == "" || path == ":memory:" {
			return SQLSource{}, errors.New("want a SQLite database file (sqlite:/path/to/app.db): an in-memory database is the API's own, never shared")
		}
		return SQLSource{Kind: SQLSQLite, DSN: path}, nil
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		u, err := url.Parse(dsn)
		if err != nil || u.Host == "" && u.Query().Get("host") == "" {
			return SQLSource{}, errors.New("not a PostgreSQL URL (want postgres://user:pass@host:5432/db)")
		}
		pw, _ := u.User.Password()
		if q := u.Query().Get("password"); q != "" {
			pw = q
		}
		return SQLSource{Kind: SQLPostgres, DSN: dsn, Password: pw}, nil
	case strings.Contains(dsn, "="): // host=… user=… password=…
		return SQLSource{Kind: SQLPostgres, DSN: dsn, Password: keywordValue(dsn, "password")}, nil
	default:
		return SQLSource{}, errors.New("not a DSN the SQL oracle reads (want postgres://user:pass@host:5432/db or host=… user=… for PostgreSQL; mysql://… for MySQL or MariaDB; sqlite:/path/to/app.db for SQLite)")
	}
}

// keywordValue is key's value in a PostgreSQL keyword/value connection
// string (key=value or key='quoted \' value'), "" when absent.
func keywordValue(dsn, key string) string {
	for s := dsn; s != ""; {
		s = strings.TrimLeft(s, " \t\n")
		k, rest, ok := strings.Cut(s, "=")
		if !ok {
			return ""
		}
		rest = strings.TrimLeft(rest, " ")
		var v strings.Builder
		if strings.HasPrefix(rest, "'") {
			i := 1
			for ; i < len(rest) && rest[i] != '\''; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
				}
				v.WriteByte(rest[i])
			}
			s = rest[min(i+1, len(rest)):]
		} else {
			end := strings.IndexAny(rest, " \t\n")
			if end < 0 {
				end = len(rest)
			}
			v.WriteString(rest[:end])
			s = rest[end:]
		}
		if strings.TrimSpace(k) == key {
			return v.String()
		}
	}
	return ""
}

// Placeholders counts the occurrences of ph outside quoted text in q and
// returns q with each replaced by "?" (MySQL's placeholder). Another
// numbered placeholder ($2) is an error: the key is the only argument.
func Placeholders(q, ph string) (string, int, error) {
	var b strings.Builder
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"' || c == '`':
			quote = c
		case c == '$' && i+1 < len(q) && q[i+1] >= '0' && q[i+1] <= '9':
			j := i + 1
			for j < len(q) && q[j] >= '0' && q[j] <= '9' {
				j++
			}
			if q[i:j] != ph {
				return "", 0, fmt.Errorf("%s: the key is the only argument; write it %s", q[i:j], ph)
			}
			b.WriteByte('?')
			n++
			i = j - 1
			continue
		}
		b.WriteByte(c)
	}
	return b.String(), n, nil
}

func RedactPassword(msg, password string) string {
	if password == "" {
		return msg
	}
	return strings.ReplaceAll(msg, password, redactedMark)
}

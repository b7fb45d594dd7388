package apispec

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// SQLOracle counts executions in the API's own database: Query returns
// one integer, "$1" in it is the key. The key is the bare key, as the API
// stores it: for key_syntax sf-string the header carries "\"k\"" and $1 is
// k (the quotes removed). A query without $1 is a global count (the run
// goes serial).
//
// DSN kinds: postgres://… or postgresql://… or "host=… user=…"
// (PostgreSQL, pgx); mysql://user:pass@tcp(host:3306)/db (MySQL or
// MariaDB, go-sql-driver/mysql's DSN after the mysql:// prefix). For MySQL
// each $1 becomes a ? placeholder.
type SQLOracle struct {
	// DSN is never shown: reports name it by its ${NAME} or redact its
	// password.
	DSN   string `yaml:"dsn" json:"-"`
	Query string `yaml:"query" json:"query"`
}

// sqlDialTimeout bounds connecting to the database (the SQL source bounds
// each query too).
const sqlDialTimeout = 5 * time.Second

// MySQLScheme prefixes a MySQL DSN in the config.
const MySQLScheme = "mysql://"

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
	if _, _, err := o.Connector(); err != nil {
		return fmt.Errorf("%s.dsn: %v", at, err)
	}
	return nil
}

// Connector parses the DSN: the driver's connector and the password that
// errors must not show.
func (o *SQLOracle) Connector() (c driver.Connector, password string, err error) {
	switch dsn := o.DSN; {
	case dsn == "":
		return nil, "", errors.New("want a database URL: postgres://user:pass@host:5432/db, host=… user=… (PostgreSQL) or mysql://user:pass@tcp(host:3306)/db")
	case strings.HasPrefix(dsn, MySQLScheme):
		cfg, err := mysql.ParseDSN(strings.TrimPrefix(dsn, MySQLScheme))
		if err != nil {
			return nil, "", errors.New("not a MySQL DSN (want mysql://user:pass@tcp(host:3306)/db)")
		}
		if cfg.Timeout == 0 {
			cfg.Timeout = sqlDialTimeout
		}
		conn, err := mysql.NewConnector(cfg)
		if err != nil {
			return nil, cfg.Passwd, errors.New(RedactPassword(err.Error(), cfg.Passwd))
		}
		return conn, cfg.Passwd, nil
	default:
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return nil, "", errors.New("not a PostgreSQL DSN (want postgres://user:pass@host:5432/db or host=… user=…; mysql://… for MySQL)")
		}
		if cfg.ConnectTimeout == 0 {
			cfg.ConnectTimeout = sqlDialTimeout
		}
		return stdlib.GetConnector(*cfg), cfg.Password, nil
	}
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

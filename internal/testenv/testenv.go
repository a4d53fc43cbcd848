// Package testenv is the set-up that tests in several packages share, so that each
// place does it one way: the test Postgres server ([PostgresDSN], skipping with the
// reason when none is configured) with a schema or journal tables of a test's own
// ([Schema], [PostgresJournal]), SQLite databases and journals ([MemorySQLite],
// [SQLiteJournal]), real processes of a Go binary such as examples/conformance ([Build],
// [StartProcess]), and the bearer-token fakes of the client tests ([BearerAuth],
// [Token]).
//
// It is for tests. The one other importer is the chaos harness (bench/chaos), which
// starts and kills the reference app's processes the way the tests do.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// PostgresEnv is the environment variable holding the test Postgres server's DSN.
const PostgresEnv = "ENGINE_TEST_POSTGRES_DSN"

// ExampleDSN is a DSN of a local server with trust authentication, as CI runs it.
const ExampleDSN = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// PostgresDSN returns $ENGINE_TEST_POSTGRES_DSN, or skips tb saying that what (a
// phrase such as "the Postgres run") needs it and how to set it. A DSN that is set but
// does not connect fails the test where it is used: with the variable set, the Postgres
// tests are meant to run.
func PostgresDSN(tb testing.TB, what string) string {
	tb.Helper()
	dsn := os.Getenv(PostgresEnv)
	if dsn == "" {
		tb.Skipf("%s is not set: skipping %s (set it to a server, e.g. %s; CI sets it)", PostgresEnv, what, ExampleDSN)
	}
	return dsn
}

// RandomHex returns n random bytes in hex, for names that keep one test's database
// objects apart from another's.
func RandomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// NewSchema creates a schema named prefix and random hex on the server of dsn and
// returns a DSN whose search_path is that schema, and a function that drops it.
func NewSchema(ctx context.Context, dsn, prefix string) (string, func(), error) {
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return "", func() {}, fmt.Errorf("connecting to Postgres: %w", err)
	}
	defer conn.Close(ctx)
	schema := prefix + RandomHex(4)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", func() {}, err
	}
	drop := func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
			_ = c.Close(context.Background())
		}
	}
	u, err := url.Parse(dsn)
	if err != nil {
		return "", drop, err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// Schema is [NewSchema] for a test: it fails tb when the schema cannot be made and
// drops it at cleanup, after the cleanups registered later (the pools on it).
func Schema(tb testing.TB, dsn, prefix string) string {
	tb.Helper()
	dsn, drop, err := NewSchema(context.Background(), dsn, prefix)
	tb.Cleanup(drop)
	if err != nil {
		tb.Fatal(err)
	}
	return dsn
}

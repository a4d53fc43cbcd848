package rebind

import "testing"

func TestDollar(t *testing.T) {
	for in, want := range map[string]string{
		"":                            "",
		"SELECT 1":                    "SELECT 1",
		"SELECT a FROM t WHERE b = ?": "SELECT a FROM t WHERE b = $1",
		"INSERT INTO t VALUES (?,?,?,?,?,?,?,?,?,?,?)": "INSERT INTO t VALUES ($1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11)",
		"UPDATE é SET x = ? WHERE y = ?":               "UPDATE é SET x = $1 WHERE y = $2",
	} {
		if got := Dollar(in); got != want {
			t.Errorf("Dollar(%q) = %q, want %q", in, got, want)
		}
	}
}

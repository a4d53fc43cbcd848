package ai_test

import (
	"net/http"
	"strings"
	"testing"
)

// Who may follow a run: its starter and operators of its tenant. Anyone else in the
// tenant, and everyone in another, gets the same 404 as for a run that does not exist;
// a caller without credentials gets 401.
func TestFollowAccessRules(t *testing.T) {
	t.Parallel()
	e := newApEnv(t, apConfig{turns: apTransferTurns("500")})
	stream, all := apFinishedRun(t, e)
	cases := []struct {
		name     string
		run      string
		user     string
		operator bool
		status   int
		code     string
	}{
		{"owner", stream, apAlice, false, 200, ""},
		{"operator of the tenant", stream, "olga@acme", true, 200, ""},
		{"other user of the tenant", stream, "bob@acme", false, 404, "NotFound"},
		{"same user id, other tenant", stream, "alice@globex", false, 404, "NotFound"},
		{"operator of another tenant", stream, "olga@globex", true, 404, "NotFound"},
		{"anonymous", stream, "", false, 401, "Unauthorized"},
		{"unknown run", "run_00000000000000000000000000000000", apAlice, false, 404, "NotFound"},
		{"unknown run, anonymous", "run_00000000000000000000000000000000", "", false, 401, "Unauthorized"},
	}
	for _, c := range cases {
		hdr := http.Header{}
		if c.operator {
			hdr.Set(apOperatorHeader, "1")
		}
		res, raw := e.follow(t, c.run, c.user, hdr, "")
		if res.StatusCode != c.status {
			t.Errorf("%s: HTTP %d %s, want %d", c.name, res.StatusCode, raw, c.status)
			continue
		}
		if c.code != "" && !strings.Contains(string(raw), `"code":"`+c.code+`"`) {
			t.Errorf("%s: body %s, want code %s", c.name, raw, c.code)
		}
		if c.status == 200 && strings.Count(string(raw), "\ndata: ") != len(all) {
			t.Errorf("%s: the stream has %d frames, want %d", c.name, strings.Count(string(raw), "\ndata: "), len(all))
		}
	}
	// A 404 for a run that exists reads exactly like one for a run that does not.
	_, other := e.follow(t, stream, "bob@acme", nil, "")
	_, unknown := e.follow(t, "run_00000000000000000000000000000000", "bob@acme", nil, "")
	if strings.ReplaceAll(string(other), stream, "X") != strings.ReplaceAll(string(unknown), "run_00000000000000000000000000000000", "X") {
		t.Errorf("a hidden run answers %s, an unknown one %s", other, unknown)
	}
}

package validate

import "testing"

// TestLocateOutsideInstance checks that a location the instance does not have (which the
// validator never reports, but a library is not to be trusted with an index) names the
// place and finds no value, rather than panicking.
func TestLocateOutsideInstance(t *testing.T) {
	t.Parallel()
	root := map[string]any{"list": []any{"a"}}
	cases := []struct {
		loc  []string
		path string
		at   any
	}{
		{[]string{"list", "0"}, "list[0]", "a"},
		{[]string{"list", "1"}, "list[1]", nil},
		{[]string{"list", "-1"}, "list[-1]", nil},
		{[]string{"list", "x"}, "list[x]", nil},
		{[]string{"missing", "deeper"}, "missing.deeper", nil},
		{nil, "", root},
	}
	for _, c := range cases {
		path, at := locate(root, c.loc)
		if path != c.path || (c.loc != nil && at != c.at) {
			t.Errorf("locate(%q) = %q, %v; want %q, %v", c.loc, path, at, c.path, c.at)
		}
	}
}

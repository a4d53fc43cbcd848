package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/big"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// itemKey appends to b a key of JSON value v that equal values (by [jsonEqual]) share:
// numbers by the float64 they round to, object members in key order. Values that are
// not equal may share one (numbers a float64 cannot tell apart): the caller compares.
func itemKey(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		return append(b, 'z')
	case bool:
		return strconv.AppendBool(append(b, 'b'), x)
	case string:
		return strconv.AppendQuote(append(b, 's'), x)
	case json.Number:
		f, _ := strconv.ParseFloat(string(x), 64)
		return strconv.AppendFloat(append(b, 'n'), f, 'g', -1, 64)
	case float64:
		return strconv.AppendFloat(append(b, 'n'), x, 'g', -1, 64)
	case []any:
		b = append(b, '[')
		for _, e := range x {
			b = append(itemKey(b, e), ',')
		}
		return append(b, ']')
	case map[string]any:
		b = append(b, '{')
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b = append(itemKey(strconv.AppendQuote(b, k), x[k]), ',')
		}
		return append(b, '}')
	}
	return fmt.Appendf(append(b, '?'), "%v", v)
}

func decimal(f float64) *big.Rat {
	r, _ := new(big.Rat).SetString(strconv.FormatFloat(f, 'g', -1, 64))
	return r
}

// typeAllowed reports whether v is of one of the types in want; an integer is a number,
// and a number with no fraction ("2.0") an integer.
func typeAllowed(want []string, v any) bool {
	got := jsonTypeOf(v)
	for _, t := range want {
		if t == got || (t == "number" && got == "integer") {
			return true
		}
	}
	return false
}

// jsonEqual compares two JSON values, numbers by value (1 equals 1.0) whatever their Go
// type (a schema's are float64, an instance's json.Number).
func jsonEqual(a, b any) bool {
	if ra, ok := ratOf(a); ok {
		rb, ok := ratOf(b)
		return ok && ra.Cmp(rb) == 0
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		return ok && slices.EqualFunc(x, y, jsonEqual)
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !jsonEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

func ratOf(v any) (*big.Rat, bool) {
	switch x := v.(type) {
	case json.Number:
		return new(big.Rat).SetString(string(x))
	case float64:
		return decimal(x), true
	case int:
		return new(big.Rat).SetInt64(int64(x)), true
	case int64:
		return new(big.Rat).SetInt64(x), true
	}
	return nil, false
}

// formatValid checks the formats JSON Schema defines that a caller is likely to meet;
// any other format is an annotation, as the specification has it.
func formatValid(format, s string) bool {
	switch format {
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
		return err == nil && len(s) >= len("2006-01-02T15:04:05Z")
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		return err == nil
	case "time":
		_, err := time.Parse("15:04:05Z07:00", strings.ToUpper(s))
		if err != nil {
			_, err = time.Parse("15:04:05.999999999Z07:00", strings.ToUpper(s))
		}
		return err == nil
	case "email":
		local, domain, ok := strings.Cut(s, "@")
		return ok && local != "" && len(local) <= 64 && !strings.ContainsAny(local, " @<>()[],;:\\\"") &&
			!strings.HasPrefix(local, ".") && !strings.HasSuffix(local, ".") && !strings.Contains(local, "..") &&
			hostnameValid(domain)
	case "hostname":
		return hostnameValid(s)
	case "ipv4":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is4()
	case "ipv6":
		a, err := netip.ParseAddr(s)
		return err == nil && a.Is6() && a.Zone() == ""
	case "uuid":
		if len(s) != 36 {
			return false
		}
		for i, c := range s {
			if i == 8 || i == 13 || i == 18 || i == 23 {
				if c != '-' {
					return false
				}
			} else if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
				return false
			}
		}
		return true
	case "uri":
		u, err := url.Parse(s)
		return err == nil && u.Scheme != ""
	case "uri-reference":
		_, err := url.Parse(s)
		return err == nil
	case "regex":
		_, err := regexp.Compile(s)
		return err == nil
	}
	return true
}

func hostnameValid(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// typeNames words a list of JSON types; null is left out since a missing value is worded
// by required, not by type.
func typeNames(want []string) string {
	var names []string
	for _, t := range want {
		if t != "null" {
			names = append(names, t)
		}
	}
	if len(names) == 0 {
		return "null"
	}
	return strings.Join(names, " or ")
}

func jsonTypeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if r, ok := new(big.Rat).SetString(string(x)); ok && r.IsInt() {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "unknown"
}

// jsonText writes a schema value (an enum member, a const) as JSON, so a string reads
// "a b" rather than a b.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

package validate

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
)

// finding is one problem before it is worded: where (JSON Pointer tokens; for a missing
// or unknown member, the object's location and the member's name) and what.
type finding struct {
	loc  []string
	text string
}

// issuesOf words the findings kept by sel in path order, then message order (the
// validator walks objects in map order), at most [maxIssues] of them.
func issuesOf(root any, sel *firstFindings) []Issue {
	kept := sel.kept
	issues := make([]Issue, len(kept))
	for i, f := range kept {
		path, _ := locate(root, f.loc)
		issues[i] = Issue{Path: path, Message: f.text}
	}
	idx := make([]int, len(kept))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		if c := compareLocation(kept[a].loc, kept[b].loc); c != 0 {
			return c
		}
		return strings.Compare(issues[a].Message, issues[b].Message)
	})
	out := make([]Issue, 0, min(len(idx), maxIssues))
	for _, i := range idx[:min(len(idx), maxIssues)] {
		out = append(out, issues[i])
	}
	return out
}

// firstFindings keeps, of all the findings added, the [maxIssues] that come first by
// location, plus any that tie with the last of them (their messages will decide). A body
// of many bad items can yield hundreds of thousands of findings; only those that can make
// the cut are kept, and only they are given a path and a message.
type firstFindings struct {
	kept []finding
}

func (sel *firstFindings) add(f finding) {
	const n = maxIssues
	if len(sel.kept) >= n && compareLocation(f.loc, sel.kept[n-1].loc) > 0 {
		return
	}
	i, _ := slices.BinarySearchFunc(sel.kept, f, func(k, f finding) int { return compareLocation(k.loc, f.loc) })
	sel.kept = slices.Insert(sel.kept, i, f)
	if len(sel.kept) > n {
		cut := n
		for cut < len(sel.kept) && compareLocation(sel.kept[cut].loc, sel.kept[n-1].loc) == 0 {
			cut++
		}
		sel.kept = sel.kept[:cut]
	}
}

// maxNumberLen and maxExponent bound the JSON numbers an input may hold. The validator
// compares numbers exactly (as big.Rat), which is right for bounds and multipleOf but
// costs time in the exponent: one 9-byte "1e-999999" takes about 80 ms, so a 1 MiB body
// of them would hold a core for hours. No Go number type can hold such a value anyway;
// they are refused before validation, each with its path. The limits leave every float64
// (±1.8e308, down to 5e-324, in any spelling up to 100 characters).
const (
	maxNumberLen = 100
	maxExponent  = 400
)

// numbersInRange reports whether every number of v is within the limits above.
func numbersInRange(v any) bool {
	switch x := v.(type) {
	case json.Number:
		return numberInRange(string(x))
	case []any:
		for _, item := range x {
			if !numbersInRange(item) {
				return false
			}
		}
	case map[string]any:
		for _, item := range x {
			if !numbersInRange(item) {
				return false
			}
		}
	}
	return true
}

// badNumbers records each number of v (at loc) outside the limits above.
func badNumbers(v any, loc []string, sel *firstFindings) {
	switch x := v.(type) {
	case json.Number:
		if !numberInRange(string(x)) {
			sel.add(finding{loc: slices.Clone(loc), text: "number out of range"})
		}
	case []any:
		for i, item := range x {
			badNumbers(item, append(loc, strconv.Itoa(i)), sel)
		}
	case map[string]any:
		for k, item := range x {
			badNumbers(item, append(loc, k), sel)
		}
	}
}

func numberInRange(s string) bool {
	if len(s) > maxNumberLen {
		return false
	}
	if _, exp, ok := strings.Cut(strings.ToLower(s), "e"); ok {
		e, err := strconv.Atoi(exp)
		if err != nil || e > maxExponent || e < -maxExponent {
			return false
		}
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// locate turns an instance location (JSON Pointer tokens) into the issue path form,
// "a.b[0].c", and returns the value found there. Only the instance tells an array index
// from a member named "0", so it is walked along.
func locate(root any, loc []string) (string, any) {
	var b strings.Builder
	v := root
	for _, tok := range loc {
		if arr, ok := v.([]any); ok {
			b.WriteString("[" + tok + "]")
			v = nil
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(arr) {
				v = arr[i]
			}
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(tok)
		m, _ := v.(map[string]any)
		v = m[tok]
	}
	return b.String(), v
}

// compareLocation orders locations token by token, array indexes by number, so that
// "items[2]" comes before "items[10]" and an object's own issues before its members'.
func compareLocation(a, b []string) int {
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			continue
		}
		x, errX := strconv.Atoi(a[i])
		y, errY := strconv.Atoi(b[i])
		if errX == nil && errY == nil {
			return cmp.Compare(x, y)
		}
		return strings.Compare(a[i], b[i])
	}
	return cmp.Compare(len(a), len(b))
}

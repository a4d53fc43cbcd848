// Package doccheck checks the repository's documents: every relative link in the README,
// the guides under docs/ and the other top-level documents names a file that exists (and,
// for a link with a #fragment into a Markdown file, a heading in it), every guide under
// docs/ is linked from the README's map, the README's Go example builds, and the README
// stays short enough to be read as an on-ramp. Its tests run with go test ./...; this file
// holds the Markdown reading they rely on.
package doccheck

import (
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// MaxReadmeLines is the README's length limit: what it is, install, the two commands, one
// example and a map of the documentation fit in it; everything else is a guide.
const MaxReadmeLines = 250

// Link is one inline link or image of a Markdown document.
type Link struct {
	Line   int    // 1-based line of the link
	Target string // as written between the parentheses, title removed
}

var (
	fence      = regexp.MustCompile("^\\s*(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)`)
	heading    = regexp.MustCompile(`^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	definition = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)>?`)
)

// Links returns the inline links and link reference definitions of a Markdown document,
// outside fenced code blocks and code spans.
func Links(doc string) []Link {
	var links []Link
	inFence := false
	for i, line := range strings.Split(doc, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		if m := definition.FindStringSubmatch(line); m != nil {
			links = append(links, Link{Line: i + 1, Target: m[1]})
			continue
		}
		line = codeSpan.ReplaceAllString(line, "")
		for _, m := range inlineLink.FindAllStringSubmatch(line, -1) {
			links = append(links, Link{Line: i + 1, Target: m[1]})
		}
	}
	return links
}

// Anchors returns the fragment ids GitHub gives a document's headings: lower case, with
// everything but letters, digits, spaces, hyphens and underscores removed, spaces made
// hyphens, and a -1, -2… suffix on repeats.
func Anchors(doc string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[1])
		if n, ok := seen[slug]; ok {
			seen[slug] = n + 1
			slug += "-" + strconv.Itoa(n+1)
		} else {
			seen[slug] = 0
		}
		anchors[slug] = true
	}
	return anchors
}

// Slug is the fragment id of one heading's text, before repeats are numbered.
func Slug(text string) string {
	// Link text counts, link targets do not: [text](url) becomes text.
	text = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`).ReplaceAllString(text, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// GoBlocks returns the contents of a document's fenced ```go code blocks, in order.
func GoBlocks(doc string) []string {
	var blocks []string
	var cur *strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &strings.Builder{}
		case cur != nil && trimmed == "```":
			blocks = append(blocks, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	return blocks
}

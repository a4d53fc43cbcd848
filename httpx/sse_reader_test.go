package httpx_test

import (
	"errors"
	"io"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/bbc28f59/engine/httpx"
)

type frame = httpx.SSEFrame

// readAll collects frames until the reader stops and returns the final error (nil for
// a clean io.EOF).
func readAll(t *testing.T, r *httpx.SSEReader) ([]frame, error) {
	t.Helper()
	var out []frame
	for i := 0; ; i++ {
		if i > 1_000_000 {
			t.Fatal("reader does not stop")
		}
		f, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, f)
	}
}

func TestSSEReaderTranscripts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		in     string
		want   []frame
		lastID string
		err    error
	}{
		{name: "LF", in: "id: 1\ndata: {\"a\":1}\n\ndata: x\n\n",
			want: []frame{{ID: "1", HasID: true, Data: `{"a":1}`}, {Data: "x"}}, lastID: "1"},
		{name: "CRLF", in: "id: 1\r\ndata: a\r\n\r\ndata: b\r\n\r\n",
			want: []frame{{ID: "1", HasID: true, Data: "a"}, {Data: "b"}}, lastID: "1"},
		{name: "CR only", in: "id: 1\rdata: a\r\rdata: b\r\r",
			want: []frame{{ID: "1", HasID: true, Data: "a"}, {Data: "b"}}, lastID: "1"},
		{name: "mixed endings", in: "data: a\r\ndata: b\rdata: c\n\r\n",
			want: []frame{{Data: "a\nb\nc"}}},
		{name: "comments and heartbeats", in: ": ping\n\n:\ndata: a\n: inside\n\n",
			want: []frame{{Data: "a"}}},
		{name: "multi-line data", in: "data: one\ndata:\ndata: three\n\n",
			want: []frame{{Data: "one\n\nthree"}}},
		{name: "space rules", in: "data:no-space\n\ndata:  two\n\ndata\n\n",
			want: []frame{{Data: "no-space"}, {Data: " two"}, {Data: ""}}},
		{name: "event field", in: "event: update\ndata: a\n\ndata: b\n\n",
			want: []frame{{Event: "update", Data: "a"}, {Data: "b"}}},
		{name: "id with NUL ignored", in: "id: 7\ndata: a\n\nid: 8\x009\ndata: b\n\n",
			want: []frame{{ID: "7", HasID: true, Data: "a"}, {Data: "b"}}, lastID: "7"},
		{name: "empty id resets", in: "id: 7\ndata: a\n\nid\ndata: b\n\n",
			want: []frame{{ID: "7", HasID: true, Data: "a"}, {ID: "", HasID: true, Data: "b"}}, lastID: ""},
		{name: "frame without data not dispatched but id kept", in: "id: 4\n\nevent: x\n\n\n\ndata: a\n\n",
			want: []frame{{Data: "a"}}, lastID: "4"},
		{name: "unknown fields ignored", in: "foo: bar\nretry: nope\ndata: a\n\n",
			want: []frame{{Data: "a"}}},
		{name: "BOM stripped", in: "\xEF\xBB\xBFdata: a\n\n", want: []frame{{Data: "a"}}},
		{name: "colon in value kept", in: "data: {\"a\":\"b:c\"}\n\n", want: []frame{{Data: `{"a":"b:c"}`}}},
		{name: "done frame", in: "data: [DONE]\n\n", want: []frame{{Data: "[DONE]"}}},
		{name: "empty stream", in: "", want: nil},
		{name: "trailing comment without newline is a clean end", in: "data: a\n\n: ping",
			want: []frame{{Data: "a"}}},
		{name: "trailing id without blank line is a clean end", in: "data: a\n\nid: 9\n",
			want: []frame{{Data: "a"}}, lastID: "9"},
		{name: "frame without blank line is discarded", in: "data: a\n\ndata: b\n",
			want: []frame{{Data: "a"}}, err: httpx.ErrSSETruncated},
		{name: "cut inside a data line", in: "data: a\n\ndata: {\"ty",
			want: []frame{{Data: "a"}}, err: httpx.ErrSSETruncated},
		{name: "single newline after data is not enough", in: "id: 1\ndata: a\n",
			want: nil, err: httpx.ErrSSETruncated, lastID: "1"},
	}
	readers := []struct {
		name string
		wrap func(io.Reader) io.Reader
	}{
		{"whole", func(r io.Reader) io.Reader { return r }},
		{"one byte at a time", iotest.OneByteReader},
		{"data with EOF", iotest.DataErrReader},
		{"half reads", iotest.HalfReader},
	}
	for _, tc := range cases {
		for _, rd := range readers {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				t.Parallel()
				r := httpx.NewSSEReader(rd.wrap(strings.NewReader(tc.in)))
				got, err := readAll(t, r)
				if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
					t.Fatalf("error = %v, want %v", err, tc.err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("frames:\n got %#v\nwant %#v", got, tc.want)
				}
				if r.LastEventID() != tc.lastID {
					t.Fatalf("LastEventID = %q, want %q", r.LastEventID(), tc.lastID)
				}
				if _, again := r.Next(); !errors.Is(again, io.EOF) && !errors.Is(again, tc.err) {
					t.Fatalf("Next after the end = %v", again)
				}
			})
		}
	}
}

func TestSSEReaderTruncatedWrapsUnexpectedEOF(t *testing.T) {
	t.Parallel()
	_, err := readAll(t, httpx.NewSSEReader(strings.NewReader("data: a")))
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("error = %v, want one wrapping io.ErrUnexpectedEOF", err)
	}
}

func TestSSEReaderRetry(t *testing.T) {
	t.Parallel()
	r := httpx.NewSSEReader(strings.NewReader("retry: 1500\ndata: a\n\nretry: 2x\ndata: b\n\n"))
	if _, err := readAll(t, r); err != nil {
		t.Fatal(err)
	}
	if d, ok := r.Retry(); !ok || d.Milliseconds() != 1500 {
		t.Fatalf("Retry() = %v, %v; want 1.5s (the invalid value is ignored)", d, ok)
	}
}

// endless never ends a line, like a hostile or broken peer.
type endless struct{}

func (endless) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = 'a'
	}
	return len(p), nil
}

func TestSSEReaderLimits(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  io.Reader
		max  int
		want error
	}{
		{"endless line", endless{}, 1 << 10, httpx.ErrSSELineTooLong},
		{"endless line default limit", endless{}, httpx.DefaultSSEMaxLine, httpx.ErrSSELineTooLong},
		{"long line", strings.NewReader("data: " + strings.Repeat("x", 200) + "\n\n"), 100, httpx.ErrSSELineTooLong},
		{"long CR line", strings.NewReader("data: " + strings.Repeat("x", 200) + "\r\r"), 100, httpx.ErrSSELineTooLong},
		{"large frame", strings.NewReader(strings.Repeat("data: "+strings.Repeat("x", 50)+"\n", 5) + "\n"), 100, httpx.ErrSSEFrameTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := readAll(t, httpx.NewSSEReaderSize(tc.src, tc.max))
			if !errors.Is(err, tc.want) {
				t.Fatalf("error = %v, want %v", err, tc.want)
			}
		})
	}
	// A line exactly at the limit is fine.
	line := "data: " + strings.Repeat("x", 94)
	got, err := readAll(t, httpx.NewSSEReaderSize(strings.NewReader(line+"\n\n"), 100))
	if err != nil || len(got) != 1 || len(got[0].Data) != 94 {
		t.Fatalf("line at the limit: %d frames, %v", len(got), err)
	}
}

func TestSSEReaderSourceError(t *testing.T) {
	t.Parallel()
	boom := errors.New("connection reset")
	r := httpx.NewSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	got, err := readAll(t, r)
	if !errors.Is(err, boom) || len(got) != 1 || got[0].Data != "a" {
		t.Fatalf("got %v, %v; want one frame then %v", got, err, boom)
	}
}

func TestSSEReaderAll(t *testing.T) {
	t.Parallel()
	var data []string
	var errs []error
	for f, err := range httpx.NewSSEReader(strings.NewReader("data: a\n\ndata: b\n\ndata: c")).All() {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		data = append(data, f.Data)
	}
	if strings.Join(data, ",") != "a,b" || len(errs) != 1 || !errors.Is(errs[0], httpx.ErrSSETruncated) {
		t.Fatalf("data %v, errors %v", data, errs)
	}
	n := 0
	for range httpx.NewSSEReader(strings.NewReader("data: a\n\ndata: b\n\n")).All() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("break did not stop the iteration")
	}
}

// normalizeSSEData is what a frame's data becomes on the wire: line breaks as LF.
func normalizeSSEData(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r\n", "\n"), "\r", "\n")
}

func FuzzSSEReader(f *testing.F) {
	f.Add([]byte("id: 1\ndata: {\"a\":1}\n\n"), int64(1), `{"type":"RUN_STARTED"}`)
	f.Add([]byte("data: a\r\n\r\ndata: b\r\r: c\n"), int64(0), "multi\nline\r\ndata\r")
	f.Add([]byte("\xEF\xBB\xBFid: \x00\ndata\n\n"), int64(-5), "")
	f.Add([]byte("retry: 10\nevent: x\ndata:  y\n\n"), int64(1<<62), "\n\n")
	f.Fuzz(func(t *testing.T, raw []byte, id int64, data string) {
		// Arbitrary input never panics or hangs.
		r := httpx.NewSSEReaderSize(strings.NewReader(string(raw)), 256)
		for range len(raw) + 2 {
			if _, err := r.Next(); err != nil {
				break
			}
		}
		// What the writer writes reads back the same.
		rec := httptest.NewRecorder()
		w := httpx.NewSSEWriter(rec, httpx.SSEOptions{Heartbeat: -1})
		if err := w.WriteEvent(id, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if err := w.Comment(data); err != nil {
			t.Fatal(err)
		}
		if err := w.WriteDone(); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		body := rec.Body.String()
		if strings.Contains(body, "\r") {
			t.Fatalf("writer emitted CR: %q", body)
		}
		got, err := readAll(t, httpx.NewSSEReader(strings.NewReader(body)))
		if err != nil {
			t.Fatalf("reading the writer's output %q: %v", body, err)
		}
		want := []frame{{Data: normalizeSSEData(data)}, {Data: "[DONE]"}}
		if id > 0 {
			want[0].ID, want[0].HasID = strconv.FormatInt(id, 10), true
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip of %q:\n got %#v\nwant %#v", body, got, want)
		}
	})
}

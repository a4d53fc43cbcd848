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
	"time"

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

// chunkings deliver a body whole or in pieces, as a network may.
var chunkings = []struct {
	name string
	wrap func(io.Reader) io.Reader
}{
	{"whole", func(r io.Reader) io.Reader { return r }},
	{"one byte at a time", iotest.OneByteReader},
	{"data with EOF", iotest.DataErrReader},
	{"half reads", iotest.HalfReader},
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
		{name: "id starting with NUL ignored", in: "id: 7\ndata: a\n\nid: \x00\ndata: b\n\n",
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
		{name: "cut after a bare data field", in: "data: a\n\ndata",
			want: []frame{{Data: "a"}}, err: httpx.ErrSSETruncated},
		{name: "cut inside a field named like data is a clean end", in: "data: a\n\ndataset: 1",
			want: []frame{{Data: "a"}}},
		{name: "single newline after data is not enough", in: "id: 1\ndata: a\n",
			want: nil, err: httpx.ErrSSETruncated, lastID: "1"},
	}
	for _, tc := range cases {
		for _, rd := range chunkings {
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
				// The end is final: Next reports it again, without a frame.
				want := tc.err
				if want == nil {
					want = io.EOF
				}
				if f, again := r.Next(); !errors.Is(again, want) || f != (frame{}) {
					t.Fatalf("Next after the end = %#v, %v; want %v", f, again, want)
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

// A "retry:" value is ASCII digits only, at most 12 of them so the delay cannot
// overflow a Duration; anything else is ignored and leaves the previous value.
func TestSSEReaderRetry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		value string
		want  time.Duration
		ok    bool
	}{
		{"milliseconds", "1500", 1500 * time.Millisecond, true},
		{"zero", "0", 0, true},
		{"nine", "9", 9 * time.Millisecond, true},
		{"twelve digits", "999999999999", 999999999999 * time.Millisecond, true},
		{"thirteen digits", "1000000000000", 0, false},
		{"empty", "", 0, false},
		{"letter", "2x", 0, false},
		{"negative", "-1", 0, false},
		{"second space", " 5", 0, false},
		{"decimal", "1.5", 0, false},
		{"slash below zero", "1/", 0, false},
		{"colon above nine", "1:", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := httpx.NewSSEReader(strings.NewReader("retry: " + tc.value + "\ndata: a\n\n"))
			if _, err := readAll(t, r); err != nil {
				t.Fatal(err)
			}
			if d, ok := r.Retry(); d != tc.want || ok != tc.ok {
				t.Fatalf("Retry() = %v, %v; want %v, %v", d, ok, tc.want, tc.ok)
			}
		})
	}
	r := httpx.NewSSEReader(strings.NewReader("retry: 1500\ndata: a\n\nretry: 2x\ndata: b\n\n"))
	if _, err := readAll(t, r); err != nil {
		t.Fatal(err)
	}
	if d, ok := r.Retry(); !ok || d != 1500*time.Millisecond {
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
}

// The limits are inclusive: a line of exactly maxLine bytes, and frame data of exactly
// maxLine bytes, are read; one byte more is refused. Each case runs over every chunking,
// since a line can end inside a read or arrive a byte at a time.
func TestSSEReaderLimitBoundaries(t *testing.T) {
	t.Parallel()
	const limit = 100
	x := func(n int) string { return strings.Repeat("x", n) }
	cases := []struct {
		name string
		in   string
		data int // length of the one frame's data when read
		want error
	}{
		{"line at the limit", "data: " + x(limit-6) + "\n\n", limit - 6, nil},
		{"CR line at the limit", "data: " + x(limit-6) + "\r\r", limit - 6, nil},
		{"line over the limit", "data: " + x(limit-5) + "\n\n", 0, httpx.ErrSSELineTooLong},
		{"unterminated line at the limit", "data: a\n\n: " + x(limit-2), 1, nil},
		{"unterminated line over the limit", "data: a\n\n: " + x(limit-1), 0, httpx.ErrSSELineTooLong},
		{"frame at the limit", "data: " + x(49) + "\ndata: " + x(50) + "\n\n", limit, nil},
		{"frame over the limit", "data: " + x(49) + "\ndata: " + x(51) + "\n\n", 0, httpx.ErrSSEFrameTooLarge},
		{"frame of empty lines at the limit", strings.Repeat("data\n", limit+1) + "\n", limit, nil},
		{"frame of empty lines over the limit", strings.Repeat("data\n", limit+2) + "\n", 0, httpx.ErrSSEFrameTooLarge},
	}
	for _, tc := range cases {
		for _, rd := range chunkings {
			t.Run(tc.name+"/"+rd.name, func(t *testing.T) {
				t.Parallel()
				got, err := readAll(t, httpx.NewSSEReaderSize(rd.wrap(strings.NewReader(tc.in)), limit))
				if !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
					t.Fatalf("error = %v, want %v", err, tc.want)
				}
				if tc.want == nil && (len(got) != 1 || len(got[0].Data) != tc.data) {
					t.Fatalf("read %d frames, want one of %d bytes", len(got), tc.data)
				}
			})
		}
	}
}

// stalled returns no bytes and no error, as a broken io.Reader may. After a thousand
// calls it fails instead, so a reader that would keep asking stops with an error the
// test tells apart from io.ErrNoProgress.
type stalled struct{ calls int }

var errAskedTooOften = errors.New("read a thousand times without progress")

func (s *stalled) Read([]byte) (int, error) {
	if s.calls++; s.calls > 1000 {
		return 0, errAskedTooOften
	}
	return 0, nil
}

func TestSSEReaderSourceWithoutProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, before string }{
		{"between frames", "data: a\n\n"},
		{"inside a line", "data: a\n\ndata: b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := &stalled{}
			r := httpx.NewSSEReader(io.MultiReader(strings.NewReader(tc.before), src))
			got, err := readAll(t, r)
			if !errors.Is(err, io.ErrNoProgress) || len(got) != 1 || got[0].Data != "a" {
				t.Fatalf("got %v, %v; want frame a then io.ErrNoProgress", got, err)
			}
			if _, again := r.Next(); !errors.Is(again, io.ErrNoProgress) || src.calls > 100 {
				t.Fatalf("after giving up: %v, and %d reads of the stalled source", again, src.calls)
			}
		})
	}
}

// frameThenSilence serves body in reads of at most step bytes and then, like a live
// stream between events, has nothing more: a read past body is recorded and fails.
type frameThenSilence struct {
	body     string
	step     int
	readMore bool
}

var errSilence = errors.New("read past the frame of a live stream")

func (s *frameThenSilence) Read(p []byte) (int, error) {
	if s.body == "" {
		s.readMore = true
		return 0, errSilence
	}
	n := copy(p[:min(len(p), s.step)], s.body)
	s.body = s.body[n:]
	return n, nil
}

// A live stream sends a frame and then nothing until the next event: the frame is
// returned as soon as its blank line arrives, without asking the source for more, which
// would block until the next event. A CR ending is not held back to see whether an LF
// follows.
func TestSSEReaderReturnsAFrameWithoutWaitingForMore(t *testing.T) {
	t.Parallel()
	for _, body := range []string{"id: 1\ndata: a\n\n", "id: 1\r\ndata: a\r\n\r\n", "id: 1\rdata: a\r\r"} {
		for _, step := range []int{1, 3, len(body)} {
			src := &frameThenSilence{body: body, step: step}
			f, err := httpx.NewSSEReader(src).Next()
			if err != nil || f.Data != "a" || f.ID != "1" {
				t.Errorf("%q in reads of %d: Next() = %+v, %v", body, step, f, err)
			}
			if src.readMore {
				t.Errorf("%q in reads of %d: the reader asked for more after the frame", body, step)
			}
		}
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
		if len(data)+len(errs) > 10 {
			break // an iteration that does not end fails below
		}
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

// A client reads LF, CRLF and a bare CR alike as the end of a line, so data holding any
// of them must not reach the wire as is: the rest of it would be read as fields of its
// own, letting event data set the id a client resumes from, the event type, or the
// reconnection delay.
func TestSSEWriterDataCannotInjectFields(t *testing.T) {
	t.Parallel()
	cases := []struct{ name, data string }{
		{"LF", "{}\nid: 99\nevent: evil\nretry: 1"},
		{"CRLF", "{}\r\nid: 99\r\nevent: evil\r\nretry: 1"},
		{"CR", "{}\rid: 99\revent: evil\rretry: 1"},
		{"leading CR", "\rid: 99\revent: evil\rretry: 1"},
		{"blank line by CRs", "{}\r\rid: 99\r\r"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			w := httpx.NewSSEWriter(rec, httpx.SSEOptions{Heartbeat: -1})
			if err := w.WriteEvent(0, []byte(tc.data)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			r := httpx.NewSSEReader(strings.NewReader(rec.Body.String()))
			got, err := readAll(t, r)
			if err != nil {
				t.Fatal(err)
			}
			want := []frame{{Data: normalizeSSEData(tc.data)}}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%q read back as %#v, want %#v", rec.Body.String(), got, want)
			}
			if _, ok := r.Retry(); ok || r.LastEventID() != "" {
				t.Fatalf("the data set fields of the stream: %q", rec.Body.String())
			}
		})
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
	f.Add([]byte("data: a\rid: 2\r\rretry: 999999999999\r"), int64(3), "x\rid: 9\revent: e\r\r")
	f.Fuzz(func(t *testing.T, raw []byte, id int64, data string) {
		// Arbitrary input never panics or hangs: every frame takes at least its blank
		// line, so the reader has stopped after len(raw)+1 calls. It honours its limit and
		// reads the same frames, the same last id and the same end however the input is
		// cut into reads.
		const limit = 256
		type result struct {
			frames []frame
			err    error
			lastID string
		}
		var first *result
		for _, rd := range chunkings {
			r := httpx.NewSSEReaderSize(rd.wrap(strings.NewReader(string(raw))), limit)
			var res result
			for range len(raw) + 1 {
				f, err := r.Next()
				if err != nil {
					res.err = err
					break
				}
				if len(f.Data) > limit || strings.ContainsRune(f.ID, 0) {
					t.Fatalf("%s: frame %#v breaks the limit or holds NUL in its id", rd.name, f)
				}
				res.frames = append(res.frames, f)
			}
			if res.err == nil {
				t.Fatalf("%s: %d frames from %d bytes and no end", rd.name, len(res.frames), len(raw))
			}
			res.lastID = r.LastEventID()
			if first == nil {
				first = &res
			} else if !reflect.DeepEqual(res, *first) {
				t.Fatalf("%s reads %#v, whole reads %#v", rd.name, res, *first)
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

package httpx_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/bbc28f59/engine/httpx"
)

var benchFrame = []byte(`{"type":"TEXT_MESSAGE_CONTENT","messageId":"m-1","delta":"a typical token or two"}`)

// discardWriter is a ResponseWriter whose writes and flushes cost nothing, isolating the
// writers' own overhead.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// writeRaw is the baseline: one Fprintf and one Flush per frame.
func writeRaw(w http.ResponseWriter, n int) {
	f := w.(http.Flusher)
	w.Header().Set("Content-Type", httpx.SSEContentType)
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "id: %d\ndata: %s\n\n", i, benchFrame)
		f.Flush()
	}
}

func writeSSE(w http.ResponseWriter, n int) {
	s := httpx.NewSSEWriter(w, httpx.SSEOptions{})
	for i := 1; i <= n; i++ {
		if s.WriteEvent(int64(i), benchFrame) != nil {
			break
		}
	}
	_ = s.Close()
}

var benchWriters = []struct {
	name  string
	write func(http.ResponseWriter, int)
}{{"raw", writeRaw}, {"sse", writeSSE}}

// BenchmarkSSEWriter compares SSEWriter with a raw Fprintf+Flush writer in the same run:
// against a sink that costs nothing (the writers' own overhead) and over loopback HTTP
// to a client that reads everything (where flush coalescing pays). One op is one frame.
func BenchmarkSSEWriter(b *testing.B) {
	for _, bw := range benchWriters {
		b.Run("sink=discard/"+bw.name, func(b *testing.B) {
			b.ReportAllocs()
			w := &discardWriter{h: http.Header{}}
			b.ResetTimer()
			bw.write(w, b.N)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
	for _, bw := range benchWriters {
		b.Run("sink=http/"+bw.name, func(b *testing.B) {
			b.ReportAllocs()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				n, _ := strconv.Atoi(r.URL.Query().Get("n"))
				bw.write(w, n)
			}))
			defer srv.Close()
			b.ResetTimer()
			resp, err := srv.Client().Get(srv.URL + "?n=" + strconv.Itoa(b.N))
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "frames/s")
		})
	}
}

// BenchmarkSSEReader measures parsing of a typical run stream. One op is one frame.
func BenchmarkSSEReader(b *testing.B) {
	frame := "id: 123\ndata: " + string(benchFrame) + "\n\n"
	b.ReportAllocs()
	b.SetBytes(int64(len(frame)))
	r := httpx.NewSSEReader(&repeatReader{s: frame})
	b.ResetTimer()
	for b.Loop() {
		if _, err := r.Next(); err != nil {
			b.Fatal(err)
		}
	}
}

// repeatReader yields s forever, in chunks as a socket would.
type repeatReader struct {
	s   string
	off int
}

func (r *repeatReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], r.s[r.off:])
		n += c
		r.off = (r.off + c) % len(r.s)
	}
	return n, nil
}

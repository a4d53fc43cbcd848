package journal

import (
	"strings"
	"testing"
)

func TestOffTurnsADriverPanicIntoAnError(t *testing.T) {
	v, err := off(func() (int, error) { panic("boom") })
	if v != 0 || err == nil || !strings.Contains(err.Error(), "driver panic: boom") {
		t.Fatalf("off of a panicking call = %d, %v", v, err)
	}
	// The goroutine the panic ran on is still usable.
	if v, err := off(func() (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Fatalf("the next call = %d, %v", v, err)
	}
}

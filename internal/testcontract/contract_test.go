package testcontract_test

import (
	"testing"

	"github.com/bbc28f59/engine/internal/contractcheck"
)

// TestDeclarationsOnly pins what makes this a contract package: a client importing it
// links no handler code.
func TestDeclarationsOnly(t *testing.T) {
	t.Parallel()
	contractcheck.DeclarationsOnly(t, ".")
}

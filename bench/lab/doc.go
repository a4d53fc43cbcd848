// Package lab holds the benchmarks that need libraries the SDK itself does not depend on
// (peer frameworks to compare with, plotting). It is a module of its own, so those
// libraries never reach the go.mod or go.sum of an application that imports engine; run
// its benchmarks from this directory (go test -bench . ./...).
package lab

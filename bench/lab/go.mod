module github.com/bbc28f59/engine/bench/lab

go 1.26.0

replace github.com/bbc28f59/engine => ../..

require (
	connectrpc.com/connect v1.21.1
	github.com/bbc28f59/engine v0.0.0-00010101000000-000000000000
)

require (
	github.com/google/jsonschema-go v0.4.3 // indirect
	google.golang.org/protobuf v1.36.11 // indirect
)

// Command bareschema is testdata/bare linking the JSON Schema library the root package
// imports for its flow declarations (github.com/google/jsonschema-go): the baseline of
// what the engine's own code adds to a client.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"

	_ "github.com/google/jsonschema-go/jsonschema"
)

type AddIn struct {
	A float64 `json:"a"`
	B float64 `json:"b"`
}

type AddOut struct {
	Sum float64 `json:"sum"`
}

func main() {
	body, err := json.Marshal(AddIn{A: 1, B: 2})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, os.Args[1]+"/_engine/math/add", bytes.NewReader(body))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer resp.Body.Close()
	var env struct {
		Data  *AddOut `json:"data"`
		Error *struct {
			Code string          `json:"code"`
			Data json.RawMessage `json:"data"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if env.Error != nil {
		fmt.Fprintln(os.Stderr, env.Error.Code, string(env.Error.Data))
		os.Exit(1)
	}
	fmt.Println(env.Data.Sum)
}

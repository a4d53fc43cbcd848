package clientx

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/bbc28f59/engine"
)

// rawEnvelope is the first decoding pass: members stay raw so a missing member can be
// told from a null one, and data is decoded once into the flow's type.
type rawEnvelope struct {
	Data  json.RawMessage `json:"data"`
	Error json.RawMessage `json:"error"`
	Meta  json.RawMessage `json:"meta"`
}

type wireError struct {
	Code string          `json:"code"`
	Data json.RawMessage `json:"data"`
}

type wireMeta struct {
	NextCursor string `json:"nextCursor"`
	Parked     bool   `json:"parked"`
	RunID      string `json:"runId"`
}

// decodeReply turns a reply into a Result. Anything that is not a result envelope is a
// TransportError carrying the HTTP status; declared codes are passed through untouched.
func decodeReply[T any](method string, r reply) Result[T] {
	res := Result[T]{Status: r.status}
	body := r.body.Bytes()
	ok2xx := r.status >= 200 && r.status < 300
	if r.status == http.StatusNoContent || (method == http.MethodHead && ok2xx && len(body) == 0) {
		return res
	}
	if len(body) == 0 {
		if ok2xx {
			res.Error = transportError(fmt.Sprintf("empty response (HTTP %d)", r.status), r.status)
		} else {
			res.Error = transportError(fmt.Sprintf("empty error response (HTTP %d)", r.status), r.status)
		}
		return res
	}
	var env rawEnvelope
	if err := json.Unmarshal(body, &env); err != nil {
		res.Error = transportError(fmt.Sprintf("non-JSON response (HTTP %d): %v", r.status, err), r.status)
		return res
	}
	if env.Data == nil || env.Error == nil {
		res.Error = transportError(fmt.Sprintf("HTTP %d response without a {data, error} envelope", r.status), r.status)
		return res
	}
	if !isNull(env.Error) {
		var we wireError
		if err := json.Unmarshal(env.Error, &we); err != nil || we.Code == "" {
			res.Error = transportError(fmt.Sprintf("HTTP %d response with a malformed error object", r.status), r.status)
			return res
		}
		data := we.Data
		if len(data) == 0 || isNull(data) {
			data = json.RawMessage("{}")
		}
		res.Error = &engine.Error{Code: we.Code, Data: data, Status: r.status}
		return res
	}
	if !ok2xx {
		res.Error = transportError(fmt.Sprintf("HTTP %d response with a success envelope", r.status), r.status)
		return res
	}
	if !isNull(env.Data) {
		if err := json.Unmarshal(env.Data, &res.Data); err != nil {
			var zero T
			res.Data = zero
			res.Error = transportError("decoding data: "+err.Error(), r.status)
			return res
		}
	}
	if len(env.Meta) > 0 && !isNull(env.Meta) {
		res.Meta.Raw = env.Meta
		var m wireMeta
		if err := json.Unmarshal(env.Meta, &m); err == nil {
			res.Meta.NextCursor = m.NextCursor
			res.Meta.Parked = m.Parked
			res.Meta.RunID = m.RunID
		}
	}
	return res
}

func isNull(b []byte) bool { return len(b) == 4 && string(b) == "null" }

package engine_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/bbc28f59/engine"
	"github.com/google/uuid"
)

var keyed = engine.NewUnit("keyed")

var keyedFlow = engine.Define[struct{}, map[string]string](keyed, "show", engine.Public())

func TestKeysHoldTypedValuesPerAppFlowAndCall(t *testing.T) {
	t.Parallel()
	appKey := engine.NewKey[string]("greeting")
	flowKey := engine.NewKey[int]("weight")
	callKey := engine.NewKey[string]("seen")
	otherCall, unsetCall := engine.NewKey[string]("seen"), engine.NewKey[int]("never")
	other := engine.NewKey[string]("greeting") // same name, another key
	var seen map[string]string
	app, err := engine.New(
		appKey.Option("hello"),
		engine.Bind(keyedFlow, func(fx *engine.Fx, _ struct{}) (map[string]string, error) {
			copied := fx.WithContext(context.WithoutCancel(fx.Context()))
			callKey.Set(fx, "first")
			callKey.Set(copied, "by the copy") // a copy belongs to the same call; the later set wins
			otherCall.Set(fx, "other")
			copied.SetMeta("from", "copy")
			v, _ := callKey.Call(fx)
			o, _ := otherCall.Call(copied)
			_, unset := unsetCall.Call(fx)
			seen = map[string]string{"call": v, "other": o, "unset": fmt.Sprint(unset)}
			return seen, nil
		}, flowKey.BindOption(3)),
	)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := appKey.App(app); !ok || v != "hello" {
		t.Fatalf("app value %q %v", v, ok)
	}
	if v, ok := other.App(app); ok || v != "" {
		t.Fatalf("a key of the same name read %q: keys are told apart by identity", v)
	}
	if v, ok := flowKey.Flow(app, keyedFlow.ID()); !ok || v != 3 {
		t.Fatalf("flow value %d %v", v, ok)
	}
	if _, ok := flowKey.Flow(app, "keyed.missing"); ok {
		t.Fatal("a value on a flow that is not bound")
	}
	if _, err := app.Invoke(t.Context(), keyedFlow.ID(), nil, json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	if seen["call"] != "by the copy" || seen["other"] != "other" || seen["unset"] != "false" {
		t.Fatalf("the call's values (set twice, the second through a copy of its Fx; another key of the same name; a key never set): %v", seen)
	}
}

func TestAKeySetTwiceOnTheAppFailsNew(t *testing.T) {
	t.Parallel()
	k := engine.NewKey[int]("limit")
	_, err := engine.New(k.Option(1), k.Option(2))
	if err == nil || !strings.Contains(err.Error(), "limit is already set") {
		t.Fatalf("got %v", err)
	}
}

func TestMetaSetThroughACopyOfFxReachesTheReply(t *testing.T) {
	t.Parallel()
	flow := engine.Define[struct{}, struct{}](engine.NewUnit("metacopy"), "run", engine.Public())
	env := setup(t, engine.Bind(flow, func(fx *engine.Fx, _ struct{}) (struct{}, error) {
		fx.WithContext(fx.Context()).SetMeta("from", "copy")
		return struct{}{}, nil
	}))
	res := env.rpcClient(t).Call(ctxT(t), flow.ID(), nil)
	if res.Error != nil || !strings.Contains(string(res.Meta.Raw), `"from":"copy"`) {
		t.Fatalf("meta %s, error %v", res.Meta.Raw, res.Error)
	}
}

func TestACallOutsideDurableRunsHasAFreshKeyOfItsOwn(t *testing.T) {
	t.Parallel()
	flow := engine.Define[struct{}, [2]string](engine.NewUnit("fresh"), "key", engine.Public())
	app, err := engine.New(engine.Bind(flow, func(fx *engine.Fx, _ struct{}) ([2]string, error) {
		// Asked through a copy first: the copy and the call share one key.
		return [2]string{fx.WithContext(fx.Context()).IdempotencyKey(), fx.IdempotencyKey()}, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	// Many calls: the version and variant bits are set over random bytes, and a mistake
	// there shows only in the keys whose random bits happen to expose it.
	keys := map[string]bool{}
	for range 32 {
		before := time.Now().UnixMilli()
		raw, err := app.Invoke(t.Context(), flow.ID(), nil, json.RawMessage(`{}`))
		after := time.Now().UnixMilli()
		if err != nil {
			t.Fatal(err)
		}
		var got [2]string
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if got[0] != got[1] || !regexp.MustCompile(`^call_[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`).MatchString(got[0]) {
			t.Fatalf("keys %q: want one call_ key (a UUIDv7) per call", got)
		}
		u, err := uuid.Parse(strings.TrimPrefix(got[0], "call_"))
		if err != nil || u.Version() != 7 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("key %s is not a UUIDv7 to github.com/google/uuid: %v", got[0], err)
		}
		// Time-ordered: its first 48 bits are the call's Unix time in milliseconds.
		var ts [8]byte
		copy(ts[2:], u[:6])
		if ms := int64(binary.BigEndian.Uint64(ts[:])); ms < before || ms > after {
			t.Fatalf("key %s holds the time %d ms, want the call's, within [%d, %d]", got[0], ms, before, after)
		}
		if keys[got[0]] {
			t.Fatalf("two calls share the key %s", got[0])
		}
		keys[got[0]] = true
	}
	if engine.IdempotencyKey(t.Context()) != "" {
		t.Fatal("a context outside any call has a key")
	}
}

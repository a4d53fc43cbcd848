// Type tests: tsc --noEmit over calls typed by the declarations generated from the
// running reference app. Each @ts-expect-error must be an error, or tsc fails.
import { createClient, isErrorCode, isOk, isFail, isTransportError, type Client } from "engine/client";
import { app, $routes, type App, type MathDivideOutput } from "./gen/engine-client.js";

declare const url: string;

// The three forms.
const viaApp = createClient(app, url);
const explicit = createClient<App>(url, { $routes });
const ambient = createClient(url); // typed by the Register augmentation alone
const same: Client<App> = ambient;
void same;

export async function calls() {
  const r = await viaApp.math.divide({ a: 1, b: 2 });
  if (isOk(r)) {
    const q: number = r.data.quotient;
    void q;
    // @ts-expect-error: a wrong output use
    const s: string = r.data.quotient;
    void s;
  }
  if (isFail(r)) {
    if (isErrorCode(r.error, "DivideByZero")) {
      const d: number = r.error.data.dividend;
      void d;
    }
    if (isTransportError(r.error)) {
      const m: string = r.error.data.message;
      const st: number | undefined = r.error.data.status;
      void m, st;
    }
    // @ts-expect-error: an undeclared error code
    isErrorCode(r.error, "NoSuchCode");
    // Gate codes: math.divide is public and not gated, so only Forbidden (origin) applies.
    // @ts-expect-error: Unauthorized cannot come from an ungated flow
    isErrorCode(r.error, "Unauthorized");
  }
  // @ts-expect-error: a wrong input field
  await explicit.math.divide({ a: 1, c: 2 });
  // @ts-expect-error: a wrong input type
  await ambient.math.add({ a: "1", b: 2 });
  // @ts-expect-error: a missing required field
  await ambient.math.add({ a: 1 });
  // @ts-expect-error: an unknown flow
  await ambient.math.multiply({ a: 1 });

  const me = await ambient.auth.me();
  if (me.error && isErrorCode(me.error, "Unauthorized")) {
    const empty: Record<string, never> = me.error.data;
    void empty;
  }
  if (me.error && isErrorCode(me.error, "RateLimited")) {
    const ms: number = me.error.data.retryAfterMs;
    void ms;
  }
  if (!me.error) {
    const scopes: string[] | null = me.data.scopes;
    void scopes;
  }
  // Optional input: the flow can be called without one.
  await ambient.notes.list();
  const page = await ambient.notes.list({ limit: 10 });
  if (!page.error && page.data) {
    const title: string = page.data[0].title;
    void title;
  }
  const stream = await ambient.chat.ask({ message: "hi" });
  if (!stream.error) {
    const res: Response = stream.data;
    void res;
  }
  const out: MathDivideOutput = { quotient: 1 };
  void out;
}

// A run's typed output (outputOf) is the type named for it.
import { outputOf, type AgentEvent } from "engine/client/agent";
export function runOutput(ev: AgentEvent) {
  const out = outputOf<MathDivideOutput>(ev);
  const q: number = out.quotient;
  void q;
  // @ts-expect-error: the output's fields keep their types
  const s: string = out.quotient;
  void s;
}

// Package durable runs an app's durable flows ([engine.Durable]) under a journal
// (package journal): a run's record is written before its handler starts, [Step]
// records a result once and replays it on every later execution, [Park] waits for a
// decision, and a run whose instance died, or whose decision arrived, resumes on
// whichever instance claims its lease.
//
//	j, _ := journal.New(driver, journal.Options{})
//	app, _ := engine.New(durable.With(j),
//		engine.Bind(Checkout, func(fx *engine.Fx, in CheckoutIn) (Receipt, error) {
//			return durable.Step(fx, "charge", func(ctx context.Context) (Receipt, error) {
//				return payments.Charge(ctx, engine.IdempotencyKey(ctx), in.Amount)
//			})
//		}))
//
// A durable handler runs at least once: again only when its instance died (or lost the
// lease) after it started and before its result was recorded. Every execution of a call
// sees the same idempotency key ([engine.Fx.IdempotencyKey], and inside a step
// [engine.IdempotencyKey] of the step's context), so an external effect can be made
// exactly once. A durable flow called by a durable run takes that key as its run id:
// a replayed call attaches to the child run it started instead of starting another.
// Writes that fail while the database is away are retried until they land or the lease
// is lost, never recomputed.
//
// The package is apart from engine so that engine, which every client binary links for
// the flow declarations, imports no journal.
package durable

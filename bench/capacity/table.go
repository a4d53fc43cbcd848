package capacity

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// show formats a figure with prec decimals, "-" when unknown.
func show(f Figure, prec int) string {
	if !f.Known() {
		return "-"
	}
	return strconv.FormatFloat(float64(f), 'f', prec, 64)
}

// kib formats bytes as KiB, "-" when unknown.
func kib(f Figure) string {
	if !f.Known() {
		return "-"
	}
	return strconv.FormatFloat(float64(f)/1024, 'f', 1, 64)
}

// PerCore is the conversations one core of server CPU streams at rate tokens/s each,
// from the server's CPU per token: a projection from CPU alone, which leaves out the
// load client, the database and latency, but holds when neighbours take the machine's
// cores and the knee itself moves.
func PerCore(cpuPerTokenUs Figure, rate float64) Figure {
	if !cpuPerTokenUs.Known() || cpuPerTokenUs <= 0 || rate <= 0 {
		return Figure(math.NaN())
	}
	return Figure(1e6 / (float64(cpuPerTokenUs) * rate))
}

// KneeText is the knee as a table shows it: "≥ n" when the ramp stopped before any level
// failed, "< n" when not even the smallest level held.
func (r Ramp) KneeText() string {
	switch {
	case r.Knee == 0 && len(r.Levels) > 0:
		least := r.Levels[0].Conversations
		for _, l := range r.Levels {
			least = min(least, l.Conversations)
		}
		return "< " + strconv.Itoa(least)
	case r.Bounded:
		return "≥ " + strconv.Itoa(r.Knee)
	}
	return strconv.Itoa(r.Knee)
}

// WriteTable writes the report as a text table: one row per target, its figures at the
// knee, and its idle end. A target that could not be measured shows only why.
func WriteTable(w io.Writer, rep Report) error {
	fmt.Fprintf(w, "capacity: %d tokens a reply at %g tokens/s (jitter ±%g%%, first token after %g ms), %g%% of conversations call a tool; knee: token delay p99 ≤ %s and no error\n",
		rep.Pace.Tokens, rep.Pace.Rate, rep.Pace.Jitter*100, rep.Pace.FirstToken, rep.ToolShare*100, rep.Threshold)
	label := rep.Label
	if label != "" {
		label += ", "
	}
	fmt.Fprintf(w, "%s%s, %d CPUs, scheduling group nice %d, load average %.2f before and %.2f after, %s\n", label, rep.Go, rep.CPUs, rep.Nice, rep.LoadBefore, rep.LoadAfter, rep.Elapsed.Round(time.Second))
	if rep.Interleaved {
		fmt.Fprintln(w, "interleaved: the targets were ramped together, every level held on each in turn from no conversations up")
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "target\tknee\ttokens/s\tp50 ms\tp99 ms\tfollow p99 ms\tstart p99 ms\tCPU µs/token\tconv/core\tserver cores\tclient cores\tother cores\tRSS KiB/conv\theap KiB/conv\tcommits/s\tidle streams\tidle RSS KiB\tidle heap KiB\t")
	var notes []string
	for _, r := range rep.Results {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\tnot measured\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", r.Target)
			notes = append(notes, fmt.Sprintf("%s could not be measured: %s", r.Target, r.Error))
			continue
		}
		row := []string{r.Target, r.Ramp.KneeText()}
		if l, ok := r.Ramp.KneeLevel(); ok {
			row = append(row, show(l.TokensPerSec, 0), show(l.DelayP50, 1), show(l.DelayP99, 1), show(l.FollowP99, 0),
				show(l.StartP99, 0), show(l.CPUPerToken, 1), show(PerCore(l.CPUPerToken, rep.Pace.Rate), 0),
				show(l.ServerCores, 2), show(l.ClientCores, 2), show(l.OtherCores, 2),
				kib(l.RSSPerConv), kib(l.HeapPerConv), show(l.CommitsPerSec, 0))
		} else {
			row = append(row, "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-", "-")
		}
		if r.Idle != nil {
			row = append(row, r.Idle.String(), kib(r.Idle.RSSPerStream), kib(r.Idle.HeapPerStream))
		} else {
			row = append(row, "-", "-", "-")
		}
		if r.IdleError != "" {
			notes = append(notes, fmt.Sprintf("%s: idle streams not measured: %s", r.Target, r.IdleError))
		} else if r.Idle != nil && r.Idle.Err != "" {
			notes = append(notes, fmt.Sprintf("%s: %s idle streams opened: %s", r.Target, r.Idle, r.Idle.Err))
		}
		if r.Commits != "" {
			notes = append(notes, fmt.Sprintf("%s commits: %s", r.Target, r.Commits))
		}
		if l, ok := r.Ramp.KneeLevel(); ok && l.DBConnections.Known() {
			notes = append(notes, fmt.Sprintf("%s: %s connections to its database at the knee", r.Target, show(l.DBConnections, 0)))
		}
		notes = append(notes, fmt.Sprintf("%s: %s", r.Target, r.Ramp.Stop))
		for _, l := range r.Ramp.Levels {
			if len(l.ErrorText) > 0 {
				notes = append(notes, fmt.Sprintf("%s at %d conversations: %d errors, first: %s", r.Target, l.Conversations, l.Errors, l.ErrorText[0]))
				break
			}
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(notes) > 0 {
		fmt.Fprintln(w)
	}
	for _, n := range notes {
		fmt.Fprintln(w, "  "+n)
	}
	return nil
}

// WriteLevels writes every level of every ramp as CSV, for a spreadsheet or a plotter.
func WriteLevels(w io.Writer, rep Report) error {
	fmt.Fprintln(w, "target,conversations,ok,tokens_per_s,delay_p50_ms,delay_p99_ms,delay_max_ms,follow_p99_ms,start_p99_ms,errors,server_cores,client_cores,other_cores,cpu_us_per_token,rss_bytes,rss_per_conv_bytes,heap_per_conv_bytes,commits_per_s,db_connections,load")
	for _, r := range rep.Results {
		if r.Ramp == nil {
			continue
		}
		for _, l := range r.Ramp.Levels {
			f := func(v Figure) string {
				if !v.Known() {
					return ""
				}
				return strconv.FormatFloat(float64(v), 'g', 6, 64)
			}
			_, err := fmt.Fprintf(w, "%s,%d,%t,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s,%s,%s,%s,%s,%s,%s,%s\n", r.Target, l.Conversations, l.OK,
				f(l.TokensPerSec), f(l.DelayP50), f(l.DelayP99), f(l.DelayMax), f(l.FollowP99), f(l.StartP99), l.Errors,
				f(l.ServerCores), f(l.ClientCores), f(l.OtherCores), f(l.CPUPerToken), f(l.RSS), f(l.RSSPerConv), f(l.HeapPerConv), f(l.CommitsPerSec), f(l.DBConnections), f(l.Load))
			if err != nil {
				return err
			}
		}
	}
	return nil
}

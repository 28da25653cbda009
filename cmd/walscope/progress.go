package main

import (
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress shows a bar on stderr for long runs: WAL bytes and segments done,
// rate and time left. Only when stderr is a terminal, never with --quiet.
type progress struct {
	done    atomic.Int64 // WAL bytes read
	total   int64
	segSize int64
	bar     *progressbar.ProgressBar
	shown   atomic.Int64 // when the bar was last drawn (UnixNano)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// startProgress returns nil when no bar should be shown.
func startProgress(stderr io.Writer, quiet bool, total, segSize int64) *progress {
	if quiet || total <= 0 || !isTerminal(stderr) {
		return nil
	}
	p := &progress{total: total, segSize: segSize}
	p.bar = progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionShowBytes(true),
		progressbar.OptionSetDescription("reading WAL"),
		progressbar.OptionThrottle(200*time.Millisecond),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionClearOnFinish(),
	)
	return p
}

// add records n more WAL bytes read (called by the engine's workers) and
// redraws the bar at most every 250 ms: by whichever worker comes first,
// so no goroutine of its own ticks.
func (p *progress) add(n int64) {
	if p == nil {
		return
	}
	d := p.done.Add(n)
	now := time.Now().UnixNano()
	last := p.shown.Load()
	if now-last < int64(250*time.Millisecond) || !p.shown.CompareAndSwap(last, now) {
		return
	}
	p.bar.Describe("reading WAL, segment " + strconv.FormatInt(d/p.segSize, 10) + "/" + strconv.FormatInt((p.total+p.segSize-1)/p.segSize, 10))
	p.bar.Set64(d)
}

func (p *progress) finish() {
	if p == nil {
		return
	}
	p.bar.Set64(p.done.Load())
	p.bar.Finish()
}

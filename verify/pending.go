package verify

import "github.com/walscope/walscope/xlog"

// PendingVerify is a Verify running on the engine beside another reading of
// the same stream (report's: its analyses need the records in order on one
// core, Verify takes the others).
type PendingVerify struct {
	done   chan struct{}
	run    func() // the Verify, when Wait runs it
	report *VerifyReport
	err    error
}

// StartVerify starts Verify(src, opts, blockSize, workers); Wait returns its
// result. With one worker, the caller's reading has the only core: the
// Verify runs in Wait.
func StartVerify(src xlog.Source, opts xlog.Options, blockSize, workers int) *PendingVerify {
	v := &PendingVerify{done: make(chan struct{})}
	run := func() {
		defer close(v.done)
		v.report, v.err = Verify(src, opts, blockSize, workers)
	}
	if workers <= 1 {
		v.run = run
	} else {
		go run()
	}
	return v
}

// Wait waits for the Verify to end and returns what it returned.
func (v *PendingVerify) Wait() (*VerifyReport, error) {
	if v.run != nil {
		v.run()
		v.run = nil
	}
	<-v.done
	return v.report, v.err
}

package rmgr

import (
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/xlog"
)

// xactCorpusRefLine matches a record line of pg_waldump's output: LSN,
// resource manager, record type and description.
var xactCorpusRefLine = regexp.MustCompile(`^rmgr: (\S+)\s+len .*, lsn: ([0-9A-F]+)/([0-9A-F]+), prev \S+, desc: (\S+) ?(.*)$`)

type xactCorpusRef struct{ rmgr, typ, desc string }

// TestGroupStructuredOnCorpora runs Checkpoint, ParameterChange,
// EndOfRecovery and XactEnd over every record of the real WAL here and checks
// them against pg_waldump's own lines for the same records and against the
// invariants of the WAL: a checkpoint's redo is at or before the checkpoint
// (equal for a shutdown checkpoint), commit times only move forward (up to a
// small tolerance: xact_time is taken before the commit record is inserted),
// and XactEnd finds exactly the COMMIT (and COMMIT_PREPARED, ABORT, ...) lines
// pg_waldump printed.
func TestGroupStructuredOnCorpora(t *testing.T) {
	if testing.Short() {
		t.Skip("reads every corpus")
	}
	t.Cleanup(testwal.Cleanup)
	for _, set := range testwal.Sets(t) {
		t.Run(set.Name, func(t *testing.T) {
			dir := testwal.Extract(t, set)
			for _, tl := range testwal.Timelines(t, dir) {
				xactCorpusTimeline(t, dir, tl)
			}
		})
	}
}

func xactCorpusTimeline(t *testing.T, dir string, tl testwal.Timeline) {
	refText, err := testwal.ReadRef(dir, "records-"+tl.TLI+".txt")
	if err != nil {
		t.Fatal(err)
	}
	ref := map[xlog.LSN]xactCorpusRef{}
	wantCount := map[string]int{}
	for _, line := range strings.Split(refText, "\n") {
		m := xactCorpusRefLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		hi, _ := strconv.ParseUint(m[2], 16, 32)
		lo, _ := strconv.ParseUint(m[3], 16, 32)
		ref[xlog.LSN(hi<<32|lo)] = xactCorpusRef{m[1], m[4], m[5]}
		if m[1] == "Transaction" || m[1] == "XLOG" {
			wantCount[m[1]+" "+m[4]]++
		}
	}

	src, err := xlog.OpenDir(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	tli, _ := strconv.ParseUint(tl.TLI, 16, 32)
	r, err := xlog.NewReader(src, xlog.Options{Timeline: xlog.TimeLineID(tli)})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dec := decode.NewDecoder(0)
	gotCount := map[string]int{}
	var lastCommit time.Time
	var lastCommitLSN xlog.LSN
	for {
		rec, err := r.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) && !xlog.IsEndOfWAL(err) {
				t.Logf("%s: reading stopped: %v", tl.TLI, err)
			}
			break
		}
		want, inRef := ref[rec.LSN]
		d, err := dec.Decode(rec)
		if err != nil || !inRef {
			continue
		}
		at := tl.TLI + " " + rec.LSN.String()

		if c, ok := Checkpoint(d); ok {
			gotCount[want.rmgr+" "+want.typ]++
			if c.Redo > rec.LSN {
				t.Errorf("%s: checkpoint redo %s after the record", at, c.Redo)
			}
			if !c.Online && c.Redo != rec.LSN {
				t.Errorf("%s: shutdown checkpoint redo %s is not the record", at, c.Redo)
			}
			if c.Online != (want.typ == "CHECKPOINT_ONLINE") {
				t.Errorf("%s: Online %v for %s", at, c.Online, want.typ)
			}
			frag := "redo " + xlogCorpusLSN(c.Redo) + "; tli " + strconv.Itoa(int(c.ThisTLI)) +
				"; prev tli " + strconv.Itoa(int(c.PrevTLI)) + "; fpw " + strconv.FormatBool(c.FullPageWrites) + "; "
			if c.WalLevel >= 0 {
				frag += "wal_level " + c.WalLevel.String() + "; "
			}
			frag += "xid " + strconv.FormatUint(c.NextXID>>32, 10) + ":" + strconv.FormatUint(c.NextXID&0xFFFFFFFF, 10) +
				"; oid " + strconv.FormatUint(uint64(c.NextOID), 10) + ";"
			if !strings.HasPrefix(want.desc, frag) {
				t.Errorf("%s: Checkpoint %+v does not match %q", at, c, want.desc)
			}
			if !strings.Contains(want.desc, "oldest xid "+strconv.FormatUint(uint64(c.OldestXID), 10)+" in DB") ||
				!strings.Contains(want.desc, "oldest running xid "+strconv.FormatUint(uint64(c.OldestActiveXID), 10)+";") {
				t.Errorf("%s: Checkpoint %+v does not match %q", at, c, want.desc)
			}
			if c.Time.Year() < 2020 || c.Time.Year() > 2100 {
				t.Errorf("%s: checkpoint time %v", at, c.Time)
			}
		}
		if p, ok := ParameterChange(d); ok {
			gotCount[want.rmgr+" "+want.typ]++
			if !strings.HasPrefix(want.desc, "max_connections="+strconv.Itoa(int(p.MaxConnections))+" ") ||
				!strings.Contains(want.desc, " wal_level="+p.WalLevel.String()+" ") {
				t.Errorf("%s: ParameterChange %+v does not match %q", at, p, want.desc)
			}
		}
		if e, ok := EndOfRecovery(d); ok {
			gotCount[want.rmgr+" "+want.typ]++
			frag := "tli " + strconv.Itoa(int(e.ThisTLI)) + "; prev tli " + strconv.Itoa(int(e.PrevTLI)) +
				"; time " + e.Time.Format("2006-01-02 15:04:05.000000")
			if !strings.HasPrefix(want.desc, frag) {
				t.Errorf("%s: EndOfRecovery %+v does not match %q", at, e, want.desc)
			}
		}
		if x, ok := XactEnd(d); ok {
			gotCount[want.rmgr+" "+want.typ]++
			typ := map[[2]bool]string{{true, false}: "COMMIT", {true, true}: "COMMIT_PREPARED",
				{false, false}: "ABORT", {false, true}: "ABORT_PREPARED"}[[2]bool{x.Commit, x.Prepared}]
			if typ != want.typ {
				t.Errorf("%s: XactEnd says %s, pg_waldump %s", at, typ, want.typ)
			}
			// The corpora print timestamps in UTC.
			stamp := x.Time.Format("2006-01-02 15:04:05.000000")
			if x.Prepared {
				stamp = strconv.FormatUint(uint64(x.XID), 10) + ": " + stamp
			} else if x.XID != rec.Header.XID {
				t.Errorf("%s: XactEnd XID %d, record xid %d", at, x.XID, rec.Header.XID)
			}
			if !strings.HasPrefix(want.desc, stamp+" UTC") {
				t.Errorf("%s: XactEnd time %s does not match %q", at, stamp, want.desc)
			}
			if n := len(x.Subxacts); (n > 0) != strings.Contains(want.desc, "; subxacts:") {
				t.Errorf("%s: %d subxacts for %q", at, n, want.desc)
			}
			if n := len(x.DroppedRels); (n > 0) != strings.Contains(want.desc, "; rels:") {
				t.Errorf("%s: %d dropped rels for %q", at, n, want.desc)
			}
			if x.Invalidations > 0 && !strings.Contains(want.desc, "; inval msgs:") {
				t.Errorf("%s: %d invalidations for %q", at, x.Invalidations, want.desc)
			}
			if x.HasOrigin != strings.Contains(want.desc, "; origin: ") && (x.Commit || d.Version >= xlog.V15) {
				t.Errorf("%s: HasOrigin %v for %q", at, x.HasOrigin, want.desc)
			}
			if x.Commit && !x.Prepared {
				if !lastCommit.IsZero() && x.Time.Before(lastCommit.Add(-2*time.Second)) {
					t.Errorf("%s: commit time %v is before %v of the commit at %s", at, x.Time, lastCommit, lastCommitLSN)
				}
				if x.Time.After(lastCommit) {
					lastCommit, lastCommitLSN = x.Time, rec.LSN
				}
			}
		}
	}
	t.Logf("%s: decoded %v", tl.TLI, gotCount)
	for _, k := range []string{"Transaction COMMIT", "Transaction ABORT", "Transaction COMMIT_PREPARED",
		"Transaction ABORT_PREPARED", "XLOG CHECKPOINT_SHUTDOWN", "XLOG CHECKPOINT_ONLINE",
		"XLOG PARAMETER_CHANGE", "XLOG END_OF_RECOVERY"} {
		if gotCount[k] != wantCount[k] {
			t.Errorf("%s: %d %s records decoded, pg_waldump printed %d", tl.TLI, gotCount[k], k, wantCount[k])
		}
	}
	if wantCount["Transaction COMMIT"] == 0 || wantCount["XLOG CHECKPOINT_SHUTDOWN"]+wantCount["XLOG CHECKPOINT_ONLINE"] == 0 {
		t.Logf("%s: no commit or no checkpoint in this timeline", tl.TLI)
	}
}

func xlogCorpusLSN(l xlog.LSN) string {
	return strconv.FormatUint(uint64(l>>32), 16) + "/" + strings.ToUpper(strconv.FormatUint(uint64(uint32(l)), 16))
}

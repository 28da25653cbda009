package rows

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/walscope/walscope/backup"
	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/replay"
	"github.com/walscope/walscope/rmgr"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/stream"
)

// prescanSequential is the prescan as one reader going through the
// stream does it (the code before the parallel reading): the reference
// prescanWAL's spans must agree with.
func prescanSequential(wal xlog.Source, opts xlog.Options, blockSize int, x xlog.XID) (*prescanFound, error) {
	rd, err := xlog.NewReader(wal, opts)
	if err != nil {
		return nil, nil
	}
	defer rd.Close()
	dec := decode.NewDecoder(blockSize)
	files := map[xlog.XID]map[decode.RelFileLocator]bool{}
	for {
		rec, err := rd.Next()
		if err != nil {
			return nil, nil
		}
		d, err := dec.Decode(rec)
		if err != nil {
			return nil, nil
		}
		switch d.Header.Rmid {
		case xlog.RmgrHeap, xlog.RmgrHeap2:
			xid := d.Header.XID
			if xid == 0 || int32(uint32(xid)-uint32(x)) < 0 {
				continue
			}
			for i := range d.Blocks {
				b := &d.Blocks[i]
				if b.Fork() != decode.ForkMain {
					continue
				}
				m := files[xid]
				if m == nil {
					m = map[decode.RelFileLocator]bool{}
					files[xid] = m
				}
				m[b.Rel] = true
			}
		case xlog.RmgrTransaction:
			e, isEnd := rmgr.XactEnd(d)
			if !isEnd {
				continue
			}
			if e.XID != x {
				if e.Commit && slices.Contains(e.Subxacts, x) {
					return nil, fmt.Errorf("transaction %d is a subtransaction of %d, which committed at %s: %w (give --xid %d)", x, e.XID, d.LSN, ErrSubtransaction, e.XID)
				}
				delete(files, e.XID)
				for _, s := range e.Subxacts {
					delete(files, s)
				}
				continue
			}
			hold := map[decode.RelFileLocator]bool{}
			for _, id := range append([]xlog.XID{x}, e.Subxacts...) {
				for f := range files[id] {
					hold[f] = true
				}
			}
			for _, f := range e.DroppedRels {
				hold[f] = true
			}
			return &prescanFound{hold: hold, subxacts: append([]xlog.XID{}, e.Subxacts...), version: xlog.Version(rd.Version())}, nil
		}
	}
}

// xactFacts are, per transaction of a stream, where its heap records
// begin and end and whether its end record was read; and the xids listed
// as committed subtransactions.
type xactFacts struct {
	first, last map[xlog.XID]xlog.LSN
	ended       map[xlog.XID]bool
	subxacts    []xlog.XID
}

func readXactFacts(t *testing.T, wal xlog.Source, opts xlog.Options) xactFacts {
	t.Helper()
	rd, err := xlog.NewReader(wal, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	f := xactFacts{first: map[xlog.XID]xlog.LSN{}, last: map[xlog.XID]xlog.LSN{}, ended: map[xlog.XID]bool{}}
	dec := decode.NewDecoder(8192)
	for {
		rec, err := rd.Next()
		if err != nil {
			break
		}
		d, err := dec.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		switch d.Header.Rmid {
		case xlog.RmgrHeap, xlog.RmgrHeap2:
			if xid := d.Header.XID; xid != 0 {
				if _, ok := f.first[xid]; !ok {
					f.first[xid] = d.LSN
				}
				f.last[xid] = d.LSN
			}
		case xlog.RmgrTransaction:
			if e, ok := rmgr.XactEnd(d); ok {
				f.ended[e.XID] = true
				if e.Commit {
					f.subxacts = append(f.subxacts, e.Subxacts...)
				}
			}
		}
	}
	return f
}

// TestPrescanSpansEqualSequential: the prescan read in spans of one
// segment on every core names the same files and subtransactions as one
// reader does, finds the end where it does, and refuses a subtransaction's
// xid with the same error; for every transaction of fixtures/rows (its
// incidents have subtransactions, TRUNCATE and DROP) and, on a pgbench
// archive of 16 MB segments, for the transactions whose heap records lie
// in two spans and a sample of the others; and for an xid past the WAL's
// last (no end found).
func TestPrescanSpansEqualSequential(t *testing.T) {
	root := testwal.Root(t)
	type input struct {
		name     string
		wal      xlog.Source
		opts     xlog.Options
		block    int
		segBytes int
		all      bool // every transaction, not a sample
	}
	var inputs []input

	dir := t.TempDir()
	d := filepath.Join(root, "fixtures", "rows")
	if err := testwal.UntarZstd(filepath.Join(d, "archive.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	b, err := backup.Open(filepath.Join(d, "base.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wal, err := archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	defer wal.Close()
	inputs = append(inputs, input{"fixtures/rows", wal, xlog.Options{FollowHistory: true, Start: b.Label().StartLSN}, int(b.BlockSize()), 1 << 20, true})

	pgbench := t.TempDir()
	if err := testwal.UntarZstd(filepath.Join(root, "..", "shared", "corpora", "pg18-8k-pgbench-replica", "archive.tar.zst"), pgbench); err != nil {
		t.Fatal(err)
	}
	wal2, err := archive.Open(filepath.Join(pgbench, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	defer wal2.Close()
	inputs = append(inputs, input{"corpora/pg18-8k-pgbench-replica", wal2, xlog.Options{FollowHistory: true}, 8192, 16 << 20, false})

	laterAll := 0
	for _, in := range inputs {
		s, err := stream.Open(in.wal, stream.Config{Reader: in.opts, SpanBytes: in.segBytes})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(s.Spans()); n < 2 {
			t.Fatalf("%s: %d span: nothing to compare", in.name, n)
		}
		facts := readXactFacts(t, in.wal, in.opts)
		var xids []xlog.XID
		straddling := 0
		for i, x := range slices.Sorted(maps.Keys(facts.first)) {
			across := uint64(facts.first[x])/uint64(in.segBytes) != uint64(facts.last[x])/uint64(in.segBytes)
			if across {
				straddling++
			}
			if in.all || across || i%200 == 0 {
				xids = append(xids, x)
			}
		}
		sub := 0
		for _, x := range facts.subxacts {
			if in.all || sub < 3 {
				xids = append(xids, x)
				sub++
			}
		}
		xids = append(xids, slices.Max(slices.Collect(maps.Keys(facts.first)))+1000)
		held, subErrs, notFound, later := 0, 0, 0, 0
		for _, x := range xids {
			want, wantErr := prescanSequential(in.wal, in.opts, in.block, x)
			got, gotErr := prescanWAL(in.wal, in.opts, in.block, x, in.segBytes, nil, nil)
			if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) {
				t.Errorf("%s xid %d: error %v, one reader's %v", in.name, x, gotErr, wantErr)
				continue
			}
			if (want == nil) != (got == nil) {
				t.Errorf("%s xid %d: found %v, one reader %v", in.name, x, got != nil, want != nil)
				continue
			}
			switch {
			case wantErr != nil:
				subErrs++
				continue
			case want == nil:
				notFound++
				continue
			}
			if !maps.Equal(want.hold, got.hold) || !slices.Equal(want.subxacts, got.subxacts) || want.version != got.version {
				t.Errorf("%s xid %d: files %v subxacts %v version %v, one reader %v %v %v", in.name, x,
					got.hold, got.subxacts, got.version, want.hold, want.subxacts, want.version)
			}
			if len(want.hold) > 0 {
				held++
			}
			if got.from != s.Start() {
				later++ // from a RUNNING_XACTS record (prescanStart)
			}
		}
		laterAll += later
		if held == 0 || notFound == 0 || later == held || in.all && subErrs == 0 || !in.all && straddling == 0 {
			t.Errorf("%s: %d transactions, %d naming files (%d read from a later start), %d subtransactions refused, %d not found, %d of the stream's in two segments: a case is missing",
				in.name, len(xids), held, later, subErrs, notFound, straddling)
		}
		t.Logf("%s: %d spans; %d xids equal (%d naming files, %d of them read from a later RUNNING_XACTS, %d subtransactions refused, %d not found); %d transactions in two segments",
			in.name, len(s.Spans()), len(xids), held, later, subErrs, notFound, straddling)
	}
	if laterAll == 0 {
		t.Error("no reading began at a RUNNING_XACTS record: prescanStart untested")
	}
}

// TestStartPrescan: Open given the prescan started ahead of it (as `walscope
// rows` starts it while the backup is opened) gives the same changes as
// Open alone for every incident of fixtures/rows, and uses its answer
// (one reading of the WAL before the replay, not two); started with
// another block size or start than the backup's, Open reads again and
// still gives the same; stopped at once, it ends.
func TestStartPrescan(t *testing.T) {
	root := testwal.Root(t)
	dir := t.TempDir()
	d := filepath.Join(root, "fixtures", "rows")
	if err := testwal.UntarZstd(filepath.Join(d, "archive.tar.zst"), dir); err != nil {
		t.Fatal(err)
	}
	b, err := backup.Open(filepath.Join(d, "base.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	wal, err := archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		t.Fatal(err)
	}
	defer wal.Close()
	label, err := backup.ReadLabel(filepath.Join(d, "base.tar.gz"))
	if err != nil {
		t.Fatal(err)
	}
	opts := xlog.Options{FollowHistory: true}
	changes := func(x xlog.XID, pre *Prescan) ([]string, int64) {
		t.Helper()
		before := prescanReadings.Load()
		res, err := Changes(Config{Backup: replay.OpenBackup(b), WAL: wal, Options: opts, XID: x, Prescan: pre})
		if err != nil {
			t.Fatalf("xid %d: %v", x, err)
		}
		defer res.Close()
		var out []string
		for _, c := range res.Changes {
			out = append(out, fmt.Sprintf("%s %d %s %s %v %v %v", c.LSN, c.XID, c.Op, c.Rel.Name(), c.Old, c.New, c.Err))
		}
		return out, prescanReadings.Load() - before
	}
	facts := []xlog.XID{753, 773, 791, 804, 812, 823} // fixtures/rows/facts.json
	compared := 0
	for _, x := range facts {
		want, n := changes(x, nil)
		if len(want) == 0 || n != 1 {
			t.Fatalf("xid %d: %d changes, %d readings before the replay", x, len(want), n)
		}
		for _, c := range []struct {
			name      string
			start     xlog.LSN
			blockSize uint32
			readings  int64
		}{{"ahead", label.StartLSN, 0, 0}, {"other block size", label.StartLSN, 4096, 1}, {"other start", label.StartLSN + 0x1000, 0, 1}} {
			pre := StartPrescan(wal, opts, x, c.start, c.blockSize, nil)
			got, n := changes(x, pre)
			if !slices.Equal(got, want) || n != c.readings {
				t.Errorf("xid %d, %s: %d changes (%d readings in Open), alone %d: equal %v", x, c.name, len(got), n, len(want), slices.Equal(got, want))
			}
			compared += len(got)
		}
	}
	// the backup given while the replay runs (replay.PendingBackup, as
	// `walscope rows` gives a compressed tar): the TOAST files are looked
	// at after the replay, which is run again if it left records of one
	// out; the same changes
	replays := toastReplays.Load()
	for _, x := range facts {
		want, _ := changes(x, nil)
		before := toastReplays.Load()
		p := replay.NewPendingBackup(label.StartLSN, b.BlockSize())
		go func() {
			// long after the prescan: the replay runs without the backup
			// until it needs one of its files
			time.Sleep(300 * time.Millisecond)
			p.Set(replay.OpenBackup(b), nil)
		}()
		res, err := Changes(Config{Backup: p, WAL: wal, Options: opts, XID: x, Prescan: StartPrescan(wal, opts, x, label.StartLSN, 0, stream.NewCores())})
		if err != nil {
			t.Fatalf("xid %d, backup pending: %v", x, err)
		}
		var got []string
		for _, c := range res.Changes {
			got = append(got, fmt.Sprintf("%s %d %s %s %v %v %v", c.LSN, c.XID, c.Op, c.Rel.Name(), c.Old, c.New, c.Err))
		}
		res.Close()
		if !slices.Equal(got, want) {
			t.Errorf("xid %d, backup pending: %d changes, alone %d: differ", x, len(got), len(want))
		}
		t.Logf("xid %d, backup pending: %d changes equal, replayed again for a TOAST file: %v", x, len(got), toastReplays.Load() > before)
		compared += len(got)
	}
	if toastReplays.Load() == replays {
		// fixtures/rows writes TOAST values after the backup (xids 773,
		// 804, 812 and 823 are replayed again here)
		t.Errorf("no replay run again for a TOAST file: the check after the replay is not tried")
	}
	pre := StartPrescan(wal, opts, facts[0], label.StartLSN, 0, nil)
	pre.Stop()
	pre.Stop()
	t.Logf("%d changes equal with the prescan started ahead", compared)
}

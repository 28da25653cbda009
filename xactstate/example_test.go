package xactstate_test

import (
	"fmt"
	"io"
	"path/filepath"
	"testing/fstest"

	"github.com/walscope/walscope/decode"
	"github.com/walscope/walscope/xactstate"
	"github.com/walscope/walscope/xlog"
)

// Replay two segments of PostgreSQL 15 WAL onto a backup and ask what
// became of some transactions once recovery ends there. The backup here is
// empty (a real one comes from a backup package, or FS(os.DirFS(dataDir))),
// so only what the WAL says is known: transaction 734 aborted, 757
// committed, and 758, which no record ended, counts as aborted after Finish.
func ExampleState() {
	src, err := xlog.OpenDir(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	r, err := xlog.NewReader(src, xlog.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	st, err := xactstate.New(xactstate.FS(fstest.MapFS{}), r.Version(), 8192)
	if err != nil {
		fmt.Println(err)
		return
	}
	dec := decode.NewDecoder(8192)
	for {
		rec, err := r.Next()
		if err == io.EOF || xlog.IsEndOfWAL(err) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		d, err := dec.Decode(rec)
		if err != nil {
			fmt.Println(err)
			return
		}
		st.Add(d)
	}
	fmt.Println("758 before Finish:", st.Status(758))
	st.Finish()
	for _, xid := range []xlog.XID{734, 757, 758} {
		fmt.Printf("%d: %v\n", xid, st.Status(xid))
	}
	lsn, _ := st.CommitLSN(757)
	at, _ := st.CommitTime(757)
	fmt.Println("757 committed at", lsn, at.Format("2006-01-02 15:04:05.000000 MST"))
	fmt.Println("problems:", st.Err())
	// Output:
	// 758 before Finish: in progress
	// 734: aborted
	// 757: committed
	// 758: aborted
	// 757 committed at 0/7E3B08 2026-11-30 00:07:30.935829 UTC
	// problems: <nil>
}

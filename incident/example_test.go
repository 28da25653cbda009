package incident_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/walscope/walscope/incident"
	"github.com/walscope/walscope/internal/testwal"
	"github.com/walscope/walscope/names"
	"github.com/walscope/walscope/xlog"
	"github.com/walscope/walscope/xlog/archive"
	"github.com/walscope/walscope/xlog/stream"
)

// The timeline of fixtures/sample, read on every core: each kind of
// event found and how many. pg_waldump shows the 16 Storage CREATE records
// (relation files created), the 2 Database CREATE_FILE_COPY records and
// the 6 checkpoints and the PARAMETER_CHANGE; the deletes are the transactions that deleted at
// least 1000 rows of one relation (EventsConfig.MinRows' default).
func ExampleReadEvents() {
	src, err := archive.Open(filepath.Join("..", "fixtures", "sample"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	s, err := stream.Open(src, stream.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	ev, res, err := incident.ReadEvents(s, incident.EventsConfig{}, 8192)
	if err != nil {
		fmt.Println(err)
		return
	}
	if res.Err != nil && !xlog.IsEndOfWAL(res.Err) {
		fmt.Println(res.Err) // a damaged or undecodable record ended the reading
	}
	kinds := map[incident.EventKind]int{}
	for _, e := range ev.Finish() {
		kinds[e.Kind]++
	}
	for _, k := range incident.EventKinds {
		if kinds[k] > 0 {
			fmt.Println(k, kinds[k])
		}
	}
	// Output:
	// create 16
	// delete 2
	// create_database 2
	// checkpoint 6
	// parameter_change 1
}

// Point-in-time recovery to just before a DELETE that emptied a table:
// fixtures/smalldelete (real PostgreSQL 15 WAL, made by its generate.sh)
// deletes rows of public.small in four transactions, the third (xid 732,
// facts.json) emptying the 700-row table. The archive is a tar.zst,
// unpacked here into a temporary directory. The names come from the WAL
// itself (LearnNames), and so does the table's size before each delete
// (pg_class.reltuples, which VACUUM ANALYZE wrote): the plan picks the
// delete of most rows, and recovery stops before its commit record, which
// pg_waldump shows at 0/8432A0.
func ExamplePlanPITR() {
	dir, err := os.MkdirTemp("", "walscope-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	if err := testwal.UntarZstd(filepath.Join("..", "fixtures", "smalldelete", "archive.tar.zst"), dir); err != nil {
		fmt.Println(err)
		return
	}
	src, err := archive.Open(filepath.Join(dir, "archive"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer src.Close()
	w, err := names.LearnNames(src, xlog.Options{}, 8192)
	if err != nil {
		fmt.Println(err)
		return
	}
	scan, err := incident.ScanPITR(src, xlog.Options{}, incident.PITRScanConfig{Events: incident.EventsConfig{MinRows: 1}})
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := incident.PlanPITR(scan, incident.PITRQuery{
		Rel:       &incident.RelSpec{Name: "small"},
		Kinds:     []incident.EventKind{incident.EventDelete},
		Namer:     w,
		RowCounts: w.RowCountBefore,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	e := plan.Event
	fmt.Printf("%s of %s by xid %d: %d rows, committed at %v\n", e.Kind, e.Relation, e.XID, e.Rows, e.CommitLSN)
	fmt.Printf("recovery_target_lsn = '%v'\n", plan.Settings.LSN)
	fmt.Printf("recovery_target_inclusive = %v\n", plan.Settings.Inclusive)
	for _, c := range plan.Candidates {
		fmt.Printf("candidate: xid %d, %d rows of ~%.0f\n", c.XID, c.Rows, c.TableRows)
	}
	// Output:
	// delete of public.small by xid 732: 687 rows, committed at 0/8432A0
	// recovery_target_lsn = '0/8432A0'
	// recovery_target_inclusive = false
	// candidate: xid 732, 687 rows of ~700
	// candidate: xid 734, 20 rows of ~700
	// candidate: xid 729, 10 rows of ~700
	// candidate: xid 728, 3 rows of ~700
}
